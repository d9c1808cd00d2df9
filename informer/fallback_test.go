package informer

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	fcache "k8s.io/client-go/tools/cache/testing"
)

// TestSyncsOverListerWatcherWithoutStreamingList runs an informer in the
// default (auto) streaming-list mode over client-go's fake controller
// source, which does not speak the streaming list (its Watch fails on the
// empty resourceVersion): as client-go's informer, it falls back to a
// paginated LIST, syncs, and follows the watch.
func TestSyncsOverListerWatcherWithoutStreamingList(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		src := fcache.NewFakeControllerSource()
		t.Cleanup(src.Shutdown)
		src.Add(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}, Data: map[string]string{"v": "1"}})
		opts := testOptions()
		opts.Reflector.WatchList = nil // auto, the default
		inf := newInformer(t, cache.ToListerWatcherWithContext(src), b.open(t), opts)
		rec := newRecorder()
		addHandler(t, inf, rec)
		start(t, inf)
		waitDone(t, "sync", inf.HasSyncedChecker())
		src.Modify(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}, Data: map[string]string{"v": "2"}})
		got := rec.wait(t, 2)
		if got[0].Op != "add" || got[1].Op != "update" || got[1].Value != "2" {
			t.Errorf("handler heard %+v; want the add of ns/a, then its update to 2", got)
		}
		if st := inf.Stats().Reflector; st.WatchLists != 1 || st.Lists != 1 {
			t.Errorf("reflector Stats: %d streaming lists, %d LISTs; want the one streaming list tried, then one LIST", st.WatchLists, st.Lists)
		}
	})
}
