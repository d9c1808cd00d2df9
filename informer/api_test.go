package informer

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"
)

func TestControllerView(t *testing.T) {
	lw := newFakeLW()
	lw.create("ns", "a", "1")
	inf := newInformer(t, lw, openStore(t, "memory://"), testOptions())
	ctrl := inf.GetController()
	if ctrl.HasSynced() {
		t.Errorf("controller HasSynced before start")
	}
	start(t, inf)
	waitDone(t, "controller sync", ctrl.HasSyncedChecker())
	if got, want := ctrl.LastSyncResourceVersion(), lw.currentRV(); got != want {
		t.Errorf("controller LastSyncResourceVersion = %q, want %q", got, want)
	}
	ctrl.RunWithContext(t.Context()) // does nothing and returns
}

// TestHandlerOptions checks AddEventHandlerWithOptions: a per-handler resync
// period, raised to the informer's check period when added after start, and
// a per-handler logger.
func TestHandlerOptions(t *testing.T) {
	lw := newFakeLW()
	lw.create("ns", "a", "1")
	fc := testingclock.NewFakeClock(time.Unix(1000, 0))
	opts := testOptions()
	opts.Clock = fc
	opts.Reflector.Clock = clock.RealClock{}
	opts.ResyncPeriod = time.Minute
	inf := newInformer(t, lw, openStore(t, "memory://"), opts)
	logger := klog.Background().WithName("handler")
	early := newRecorder()
	period := 2 * time.Minute
	if _, err := inf.AddEventHandlerWithOptions(early, cache.HandlerOptions{Logger: &logger, ResyncPeriod: &period}); err != nil {
		t.Fatal(err)
	}
	start(t, inf)
	waitDone(t, "informer sync", inf.HasSyncedChecker())
	// Added after start asking for 1s: raised to the 1m check period.
	late := newRecorder()
	short := time.Second
	reg, err := inf.AddEventHandlerWithOptions(late, cache.HandlerOptions{ResyncPeriod: &short})
	if err != nil {
		t.Fatal(err)
	}
	waitDone(t, "late handler sync", reg.HasSyncedChecker())
	early.wait(t, 1)

	resync := ev{Op: "update", Key: "ns/a", Value: "1", OldVal: "1", UID: "uid-1", OldUID: "uid-1"}
	fc.Step(time.Minute) // the late handler's resync is due, not the early one's
	if diff := cmp.Diff(resync, late.wait(t, 2)[1]); diff != "" {
		t.Errorf("late handler after 1m (-want +got):\n%s", diff)
	}
	fc.Step(time.Minute) // both are due
	if diff := cmp.Diff(resync, early.wait(t, 2)[1]); diff != "" {
		t.Errorf("early handler after 2m (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(resync, late.wait(t, 3)[2]); diff != "" {
		t.Errorf("late handler after 2m (-want +got):\n%s", diff)
	}
	// The next change comes right after: the early handler had exactly one
	// resync in those two minutes.
	lw.create("ns", "b", "1")
	if got, want := early.wait(t, 3)[2], (ev{Op: "add", Key: "ns/b", Value: "1", UID: "uid-2"}); got != want {
		t.Errorf("early handler's third event = %v, want %v", got, want)
	}
}
