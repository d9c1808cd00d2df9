package informer

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
)

// TestLeftOutChangeIsNotTheNextOldObject: a group is prepared while the
// previous one is committed, taking each key's previous state from the
// view, which holds the previous group's changes. When the store rejects
// one of them (here an index function refuses v=bad), that change is left
// out and never notified; the next change of the key must then be
// notified from the state handlers did hear of, as client-go does (its
// failed store update notifies nothing and keeps the old object), not
// with the left-out object as the old one.
func TestLeftOutChangeIsNotTheNextOldObject(t *testing.T) {
	for _, tc := range []struct {
		name    string
		initial bool // k=1 exists, and is notified, before the left-out change
		want    []ev
	}{
		{"update left out", true, []ev{
			{Op: "add", Key: "ns/k", Value: "1", Initial: true},
			{Op: "update", Key: "ns/k", Value: "2", OldVal: "1"},
		}},
		{"create left out", false, []ev{
			{Op: "add", Key: "ns/k", Value: "2"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := openRefusingStore(t)
			lw := newFakeLW()
			if tc.initial {
				lw.create("ns", "k", "1")
			}
			s := &keyGatedStore{Store: base}
			inf := newInformer(t, lw, s, testOptions())
			rec := newRecorder()
			addHandler(t, inf, rec)
			start(t, inf)
			waitDone(t, "informer sync", inf.HasSyncedChecker())
			if tc.initial {
				rec.wait(t, 1)
			}

			s.mu.Lock()
			s.gateKey = "ns/k"
			s.entered, s.release, s.returned = make(chan struct{}), make(chan struct{}), make(chan struct{})
			s.mu.Unlock()
			if tc.initial {
				lw.update("ns", "k", "bad")
			} else {
				lw.create("ns", "k", "bad")
			}
			<-s.entered // the group with v=bad is being committed
			lw.update("ns", "k", "2")
			pollUntil(t, "the next group to be prepared", func() string {
				if p := inf.Stats().PendingDeltas; p < 2 {
					return fmt.Sprintf("%d deltas popped and not committed", p)
				}
				return ""
			})
			close(s.release)
			got := rec.wait(t, len(tc.want))
			if diff := cmp.Diff(tc.want, got, cmpopts.IgnoreFields(ev{}, "UID", "OldUID")); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if obj, ok, _ := inf.GetStore().GetByKey("ns/k"); !ok || obj.(*corev1.ConfigMap).Data["v"] != "2" {
				t.Errorf("store holds %v (present %v), want v=2", obj, ok)
			}
		})
	}
}

// openRefusingStore opens a memory store whose index function "v" refuses
// ConfigMaps with v=bad: the store rejects their writes as invalid.
func openRefusingStore(t *testing.T) store.Store {
	t.Helper()
	codec, err := indexer.NewCodec(&corev1.ConfigMap{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := store.Open(t.Context(), "memory://", &store.Options{Name: "v1/configmaps", Codec: codec, Indexers: cache.Indexers{
		"v": func(obj interface{}) ([]string, error) {
			if v := obj.(*corev1.ConfigMap).Data["v"]; v != "bad" {
				return []string{v}, nil
			}
			return nil, errors.New("refusing v=bad")
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}
