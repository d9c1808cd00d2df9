package informer

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
	testingclock "k8s.io/utils/clock/testing"
)

// TestResyncNotifiedAfterGroupCommit pins a documented difference (see the
// package documentation): a resync goes through the queue, as in client-go,
// and then through a group commit of its own (a commit of notifications
// only, writing nothing), so its OnUpdate(obj, obj) calls come once that
// group is committed, Options.MaxBatchDelay after the resync period at most,
// where client-go's come as soon as the queue pops the resync.
func TestResyncNotifiedAfterGroupCommit(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		lw := newFakeLW()
		lw.create("ns", "a", "1")
		clk := testingclock.NewFakeClock(time.Unix(1000, 0))
		opts := testOptions()
		opts.Clock = clk
		opts.ResyncPeriod = time.Second
		inf := newInformer(t, lw, b.open(t), opts)
		rec := newRecorder()
		addHandler(t, inf, rec)
		start(t, inf)
		waitDone(t, "sync", inf.HasSyncedChecker())
		rec.wait(t, 1)
		commits := inf.Stats().Commits
		// Step until the resync ticker has fired (the reflector's timers
		// wait on the same clock).
		pollUntil(t, "a resync", func() string {
			if len(rec.all()) >= 2 {
				return ""
			}
			clk.Step(time.Second)
			return "no resync yet"
		})
		got := rec.all()[1]
		if got.Op != "update" || got.Key != "ns/a" || got.Value != "1" || got.OldVal != "1" {
			t.Errorf("resync notification %+v; want OnUpdate(ns/a, ns/a)", got)
		}
		if c := inf.Stats().Commits; c <= commits {
			t.Errorf("Stats().Commits = %d after the resync, %d before; want the resync notified through a commit", c, commits)
		}
	})
}

// TestTransformToAnotherType pins a documented difference (see the package
// documentation of informer, store/bolt and store/badger): a transform that
// returns another type than the store's codec (here a string for one
// update) is refused by the backends that encode objects, and the change is
// left out (counted in Stats().Rejected, logged with the codec's error,
// which names both types: storetest's Codec/AnotherType rule); its handlers
// never hear of it. memory:// and memdb:// without a file keep it, as
// client-go's store does.
func TestTransformToAnotherType(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		keeps := b.scheme == "memory" || b.scheme == "memdb"
		lw := newFakeLW()
		lw.create("ns", "a", "1")
		opts := testOptions()
		opts.Transform = func(obj interface{}) (interface{}, error) {
			if cm, ok := obj.(*corev1.ConfigMap); ok && cm.Data["v"] == "as a string" {
				return "ns/a as a string", nil
			}
			return obj, nil
		}
		base := opts.KeyFunc
		if base == nil {
			base = cache.DeletionHandlingMetaNamespaceKeyFunc
		}
		opts.KeyFunc = func(obj interface{}) (string, error) {
			if _, ok := obj.(string); ok {
				return "ns/a", nil
			}
			return base(obj)
		}
		inf := newInformer(t, lw, b.open(t), opts)
		var heard []interface{}
		changed := make(chan struct{}, 10)
		addHandler(t, inf, cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj interface{}) { heard = append(heard, obj); changed <- struct{}{} },
			UpdateFunc: func(_, obj interface{}) { heard = append(heard, obj); changed <- struct{}{} },
		})
		r := start(t, inf)
		waitDone(t, "sync", inf.HasSyncedChecker())
		<-changed
		lw.update("ns", "a", "as a string")
		// Committed on its own: in a group with the next update of the
		// key, only the newest state of the key would be written.
		if keeps {
			<-changed
		} else {
			pollUntil(t, "the string to be rejected", func() string {
				if inf.Stats().Rejected == 0 {
					return "none rejected"
				}
				return ""
			})
		}
		lw.update("ns", "a", "3")
		<-changed
		r.stop()
		var got []string
		for _, obj := range heard {
			if s, ok := obj.(string); ok {
				got = append(got, s)
			} else {
				got = append(got, obj.(*corev1.ConfigMap).Data["v"])
			}
		}
		want := []string{"1", "3"}
		wantRejected := int64(1)
		if keeps {
			want = []string{"1", "ns/a as a string", "3"}
			wantRejected = 0
		}
		if len(got) != len(want) || got[0] != want[0] || got[len(got)-1] != want[len(want)-1] || len(want) == 3 && got[1] != want[1] {
			t.Errorf("handler heard %q; want %q", got, want)
		}
		if r := inf.Stats().Rejected; r != wantRejected {
			t.Errorf("Stats().Rejected = %d; want %d", r, wantRejected)
		}
	})
}
