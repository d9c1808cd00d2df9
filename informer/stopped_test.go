package informer

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/client-go/tools/cache"
)

// TestAddEventHandlerAfterStop pins client-go v0.37's answer to a handler
// added to a stopped informer: an error saying the informer "has stopped
// already" (sharedIndexInformer.AddEventHandlerWithOptions), and no
// registration. The error also wraps ErrStopped, for errors.Is.
func TestAddEventHandlerAfterStop(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		lw := newFakeLW()
		lw.create("ns", "a", "1")
		inf := newInformer(t, lw, b.open(t), testOptions())
		r := start(t, inf)
		waitDone(t, "sync", inf.HasSyncedChecker())
		r.stop()
		reg, err := inf.AddEventHandler(newRecorder())
		if err == nil || !strings.Contains(err.Error(), "has stopped already") || !errors.Is(err, ErrStopped) {
			t.Errorf("AddEventHandler after stop: %v; want an error saying \"has stopped already\", as client-go's, wrapping ErrStopped", err)
		}
		if reg != nil {
			t.Errorf("AddEventHandler after stop returned registration %v; want nil, as client-go", reg)
		}
		if _, err := inf.AddEventHandlerWithOptions(cache.ResourceEventHandlerFuncs{}, cache.HandlerOptions{}); err == nil || !strings.Contains(err.Error(), "has stopped already") {
			t.Errorf("AddEventHandlerWithOptions after stop: %v; want an error saying \"has stopped already\"", err)
		}
	})
}
