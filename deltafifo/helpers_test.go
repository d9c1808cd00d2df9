package deltafifo_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/deltafifo"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// cm returns a ConfigMap ns/name at resourceVersion rv with one data entry
// v, so that two states of one key compare differently.
func cm(name, rv, v string) *v1.ConfigMap {
	return &v1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv},
		Data:       map[string]string{"v": v},
	}
}

// known is a cache.KeyListerGetter over a map that lists its keys sorted,
// so that tests are deterministic. errOn makes GetByKey fail for one key.
type known struct {
	objs  map[string]interface{}
	errOn string
	// ghosts are listed by ListKeys but gone by GetByKey, as in a store
	// that changes between the two calls.
	ghosts []string
}

func newKnown(objs ...*v1.ConfigMap) *known {
	k := &known{objs: map[string]interface{}{}}
	for _, o := range objs {
		k.objs[o.Namespace+"/"+o.Name] = o
	}
	return k
}

func (k *known) ListKeys() []string {
	keys := make([]string, 0, len(k.objs))
	for key := range k.objs {
		keys = append(keys, key)
	}
	keys = append(keys, k.ghosts...)
	slices.Sort(keys)
	return keys
}

var errLookup = errors.New("lookup failed")

func (k *known) GetByKey(key string) (interface{}, bool, error) {
	if key == k.errOn {
		return nil, false, errLookup
	}
	o, ok := k.objs[key]
	return o, ok, nil
}

// apply updates the known objects with a popped batch, as an informer's
// store would.
func (k *known) apply(t *testing.T, keyOf func(interface{}) (string, error), b deltafifo.Batch) {
	t.Helper()
	for _, d := range b.Deltas {
		if d.Type == cache.Bookmark {
			continue
		}
		key, err := keyOf(d.Object)
		if err != nil {
			t.Fatalf("key of popped %T: %v", d.Object, err)
		}
		if d.Type == cache.Deleted {
			delete(k.objs, key)
		} else {
			k.objs[key] = d.Object
		}
	}
}

// pop pops one batch, failing the test on error. It fails at once when q
// holds nothing, since Pop would then wait for a write that never comes and
// hang the test binary instead of failing the test.
func pop(t *testing.T, q deltafifo.Queue) deltafifo.Batch {
	t.Helper()
	if queueLen(q) == 0 {
		t.Fatalf("pop: the queue is empty (Pop would wait forever)")
	}
	var got deltafifo.Batch
	if err := q.Pop(t.Context(), func(_ context.Context, b deltafifo.Batch) error {
		got = b
		return nil
	}); err != nil {
		t.Fatalf("Pop: %v", err)
	}
	return got
}

// drain closes q and pops every batch left.
func drain(t *testing.T, q deltafifo.Queue) []deltafifo.Batch {
	t.Helper()
	q.Close()
	var out []deltafifo.Batch
	for {
		err := q.Pop(t.Context(), func(_ context.Context, b deltafifo.Batch) error {
			out = append(out, b)
			return nil
		})
		if errors.Is(err, deltafifo.ErrClosed) {
			return out
		}
		if err != nil {
			t.Fatalf("Pop: %v", err)
		}
	}
}

// watchdog returns a context, done with t, that is also done a while before
// the test binary's -timeout (or after two minutes without one). A Pop that
// waits on another goroutine (a Reflector) takes it, so that a batch that
// never comes fails this test with a clear message instead of hanging the
// binary. It bounds a wait; it asserts nothing about speed.
func watchdog(t *testing.T) context.Context {
	t.Helper()
	limit := time.Now().Add(2 * time.Minute)
	if d, ok := t.Deadline(); ok {
		// Leave the binary time to report the failure and the other tests.
		if early := d.Add(-time.Until(d) / 10); early.Before(limit) {
			limit = early
		}
	}
	ctx, cancel := context.WithDeadline(t.Context(), limit)
	t.Cleanup(cancel)
	return ctx
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// diff compares batches without their HandedOut counts, which
// TestHandedOut checks: the scenarios are about the deltas.
func diff(t *testing.T, what string, want, got interface{}) {
	t.Helper()
	if d := cmp.Diff(want, got, cmpopts.IgnoreFields(deltafifo.Batch{}, "HandedOut")); d != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", what, d)
	}
}

func tomb(name string, obj interface{}) cache.DeletedFinalStateUnknown {
	return cache.DeletedFinalStateUnknown{Key: "ns/" + name, Obj: obj}
}
