package reflector

import (
	"errors"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestDefaultErrorHandlerShowsFailures checks the logging without a
// WatchErrorHandler: a failure that repeats until someone fixes it (here a
// 403 for missing RBAC) is logged at default verbosity, as client-go's
// DefaultWatchErrorHandler does, so an informer that never syncs says why;
// a 410, which the relist after it handles, is not.
func TestDefaultErrorHandlerShowsFailures(t *testing.T) {
	t.Run("403 is an error", func(t *testing.T) {
		forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "", errors.New("RBAC: access denied"))
		h := newHarness(t, Options{}, []listResult{{err: forbidden}}, nil)
		h.r.opts.WatchErrorHandler = nil
		h.start()
		h.waitFor("an error line for the 403", func() bool {
			return slices.ContainsFunc(h.rec.Logs(), func(l string) bool {
				return containsAll(l, "List or watch failed", "RBAC: access denied")
			})
		})
	})
	t.Run("410 is routine", func(t *testing.T) {
		h := newHarness(t, Options{ResumeFrom: "100"},
			[]listResult{{obj: cmList("150", "")}, {obj: cmList("160", "")}},
			[]watchResult{{err: expiredErr()}})
		h.r.opts.WatchErrorHandler = nil
		h.start()
		h.waitQCalls(1) // the relist's Replace: the 410 was reported before it
		for _, l := range h.rec.Logs() {
			if strings.Contains(l, "too old resource version") {
				t.Errorf("default-verbosity log line for a 410: %s", l)
			}
		}
	})
}
