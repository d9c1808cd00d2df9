package informer

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
)

// TestLastStoreSyncResourceVersion pins what client-go v0.37's informer
// store reports (its controller test "TestStoreResourceVersion"): the
// list's resourceVersion after the first list, then each event's as its
// handler hears of it. Controllers compare it with the resourceVersion of
// their own writes to tell whether the cache has caught up.
func TestLastStoreSyncResourceVersion(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		lw := newFakeLW()
		lw.noBookmarks = true // bookmarks move it too; this test wants events only
		lw.create("ns", "a", "1")
		lw.create("ns", "other", "1")
		s := b.open(t)
		inf := newInformer(t, lw, s, testOptions())
		rec := newRecorder()
		addHandler(t, inf, rec)
		start(t, inf)
		waitDone(t, "sync", inf.HasSyncedChecker())
		rec.wait(t, 2)
		check := func(what, want string) {
			t.Helper()
			if got := inf.GetStore().LastStoreSyncResourceVersion(); got != want {
				t.Errorf("after %s: LastStoreSyncResourceVersion() = %q; want %q, as client-go's", what, got, want)
			}
		}
		check("the first list", lw.currentRV())
		cm := lw.update("ns", "a", "2")
		rec.wait(t, 3)
		check("an update", cm.ResourceVersion)
		lw.remove("ns", "a")
		rec.wait(t, 4)
		check("a delete", lw.currentRV())
	})
}

// TestLastStoreSyncResourceVersionTransformWithoutMetadata pins client-go's
// "TestStoreResourceVersionWithNonMetaTransform": an update whose object a
// transform turned into something without metadata leaves the
// resourceVersion the list gave, and a relist moves it to the list's. Only
// the in-process backends keep such objects (bolt and badger refuse another
// type than their codec's: see TestTransformToAnotherType).
func TestLastStoreSyncResourceVersionTransformWithoutMetadata(t *testing.T) {
	for _, scheme := range []string{"memory", "memdb"} {
		t.Run("backend="+scheme, func(t *testing.T) {
			lw := newFakeLW()
			lw.noBookmarks = true
			lw.create("ns", "a", "1")
			s := openStore(t, scheme+"://")
			opts := testOptions()
			opts.KeyFunc = func(obj interface{}) (string, error) {
				if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
					return tomb.Key, nil
				}
				return "a", nil
			}
			opts.Transform = func(obj interface{}) (interface{}, error) {
				cm, ok := obj.(*corev1.ConfigMap)
				if !ok {
					return nil, fmt.Errorf("want a *ConfigMap, got %T", obj)
				}
				return cm.Name + "=" + cm.Data["v"], nil
			}
			inf := newInformer(t, lw, s, opts)
			var heard []string
			changed := make(chan struct{}, 10)
			addHandler(t, inf, cache.ResourceEventHandlerFuncs{
				AddFunc: func(obj interface{}) { heard = append(heard, obj.(string)); changed <- struct{}{} },
				UpdateFunc: func(_, obj interface{}) {
					heard = append(heard, obj.(string))
					changed <- struct{}{}
				},
			})
			r := start(t, inf)
			waitDone(t, "sync", inf.HasSyncedChecker())
			<-changed
			listRV := lw.currentRV()
			check := func(what, want string) {
				t.Helper()
				if got := inf.GetStore().LastStoreSyncResourceVersion(); got != want {
					t.Errorf("after %s: LastStoreSyncResourceVersion() = %q; want %q, as client-go's", what, got, want)
				}
			}
			check("the first list", listRV)
			lw.update("ns", "a", "2")
			<-changed
			check("an update whose object has no metadata", listRV)
			if got := inf.Store().ResourceVersion(); got != lw.currentRV() {
				t.Errorf("resume point after the update = %q; want the event's %q", got, lw.currentRV())
			}
			r.stop()
			// A relist: the watch history is gone, so the informer lists.
			lw.update("ns", "a", "3")
			lw.compact()
			inf = newInformer(t, lw, s, opts)
			addHandler(t, inf, cache.ResourceEventHandlerFuncs{})
			start(t, inf)
			waitDone(t, "sync after the relist", inf.HasSyncedChecker())
			pollUntil(t, "the relist to be committed", func() string {
				if got := inf.Store().ResourceVersion(); got != lw.currentRV() {
					return "resume point " + got
				}
				return ""
			})
			check("a relist", lw.currentRV())
			if want := []string{"a=1", "a=2"}; fmt.Sprint(heard) != fmt.Sprint(want) {
				t.Errorf("handler heard %q; want %q", heard, want)
			}
		})
	}
}
