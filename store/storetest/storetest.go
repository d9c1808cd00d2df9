package storetest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
)

// Backend describes the backend under test. Run only reads it, and calls URL
// from one goroutine at a time, so a Backend needs no locking.
type Backend struct {
	// URL returns a fresh database URL for one test (under t.TempDir() for
	// persistent backends); stores opened with one URL share the database.
	URL func(t testing.TB) string
	// Persistent reports that the database survives Close, so the rules
	// that need it (restart, Drop) run.
	Persistent bool
}

// rule is one named subtest of the suite; contract says what it checks,
// for the test log; persistent rules run only for persistent backends.
type rule struct {
	name       string
	contract   string
	persistent bool
	fn         func(t *testing.T, h *harness)
}

// rules is the whole suite, in the order Run runs it; rules_*.go fill it.
var rules []rule

func addRules(rs ...rule) bool {
	rules = append(rules, rs...)
	return true
}

// Run runs every rule of the store contract against b, each as a subtest of t
// named after the rule.
func Run(t *testing.T, b Backend) {
	t.Helper()
	if b.URL == nil {
		t.Fatal("storetest: Backend.URL is nil")
	}
	for _, r := range rules {
		if r.persistent && !b.Persistent {
			continue
		}
		t.Run(r.name, func(t *testing.T) {
			t.Log("contract: " + r.contract)
			r.fn(t, &harness{b: b})
		})
	}
}

// harness opens stores for one rule.
type harness struct {
	b Backend
}

// url returns a fresh database URL.
func (h *harness) url(t *testing.T) string {
	t.Helper()
	u := h.b.URL(t)
	if u == "" {
		t.Fatal("storetest: Backend.URL returned an empty URL")
	}
	return u
}

// open opens a store through store.Open and closes it when the test ends.
func (h *harness) open(t *testing.T, url string, opts *store.Options) store.Store {
	t.Helper()
	s, err := store.Open(t.Context(), url, opts)
	if err != nil {
		t.Fatalf("store.Open(%q, name %q): %v", url, optName(opts), err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close of store %q at %q: %v", optName(opts), url, err)
		}
	})
	return s
}

// openFails checks that store.Open of url with opts fails with an error
// wrapping target and mentioning says (see wantErr).
func openFails(t *testing.T, what, url string, opts *store.Options, target error, says ...string) {
	t.Helper()
	s, err := store.Open(t.Context(), url, opts)
	if err == nil {
		s.Close()
		t.Fatalf("%s: store.Open(%q) succeeded", what, url)
	}
	wantErr(t, what, err, target, says...)
}

// openPods opens a fresh database with one pod store.
func (h *harness) openPods(t *testing.T) store.Store {
	t.Helper()
	return h.open(t, h.url(t), podOptions(t, "pods"))
}

// closeStore closes s now, failing the test on error (the cleanup's second
// Close then checks idempotence).
func closeStore(t *testing.T, s store.Store) {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

func optName(o *store.Options) string {
	if o == nil || o.Name == "" {
		return store.DefaultName
	}
	return o.Name
}

// withParam appends a query parameter to a URL.
func withParam(url, param string) string {
	if strings.Contains(url, "?") {
		return url + "&" + param
	}
	return url + "?" + param
}

// Index names of the pod fixtures.
const (
	idxNamespace = "namespace"
	idxApp       = "app"    // label "app": zero or one value
	idxLabels    = "labels" // every "key=value": many values
	idxGuard     = "guard"  // errors or panics on request, to test atomicity
)

// Labels that make the guard index function fail.
const (
	labelFail  = "storetest-fail"
	labelPanic = "storetest-panic"
)

func labelsIndexFunc(obj interface{}) ([]string, error) {
	m, err := metaOf(obj)
	if err != nil {
		return nil, err
	}
	var out []string
	for k, v := range m.GetLabels() {
		out = append(out, k+"="+v)
	}
	return out, nil
}

func guardIndexFunc(obj interface{}) ([]string, error) {
	m, err := metaOf(obj)
	if err != nil {
		return nil, err
	}
	if _, ok := m.GetLabels()[labelPanic]; ok {
		panic("storetest: guard index asked to panic")
	}
	if v, ok := m.GetLabels()[labelFail]; ok {
		return nil, fmt.Errorf("storetest: guard index asked to fail (%s)", v)
	}
	return nil, nil
}

func metaOf(obj interface{}) (metav1.Object, error) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("storetest: %T has no object metadata", obj)
	}
	return m, nil
}

func podCodec(t testing.TB) store.Codec {
	t.Helper()
	c, err := indexer.NewCodec(&corev1.Pod{})
	if err != nil {
		t.Fatalf("indexer.NewCodec(Pod): %v", err)
	}
	return c
}

// podOptions are the options of the pod stores most rules use.
func podOptions(t testing.TB, name string) *store.Options {
	return &store.Options{Name: name, Codec: podCodec(t), Indexers: cache.Indexers{
		idxNamespace: indexer.NamespaceIndexFunc,
		idxApp:       indexer.LabelIndexFunc("app"),
		idxLabels:    labelsIndexFunc,
		idxGuard:     guardIndexFunc,
	}}
}

// newPod returns a pod; labels are given as "k=v" pairs.
func newPod(ns, name, rv string, labels ...string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: name, ResourceVersion: rv,
			UID: types.UID("uid-" + name),
		},
		Spec: corev1.PodSpec{
			NodeName:   "node-1",
			Containers: []corev1.Container{{Name: "c", Image: "registry.example/app:1"}},
		},
	}
	if len(labels) > 0 {
		p.Labels = map[string]string{}
		for _, kv := range labels {
			k, v, _ := strings.Cut(kv, "=")
			p.Labels[k] = v
		}
	}
	return p
}

// keyOf is client-go's key of obj.
func keyOf(t testing.TB, obj interface{}) string {
	t.Helper()
	k, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		t.Fatalf("key of %T: %v", obj, err)
	}
	return k
}

// fingerprint identifies an object's content: the SHA-256 of its JSON
// encoding, which survives a codec round trip.
func fingerprint(t testing.TB, obj interface{}) string {
	t.Helper()
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatalf("fingerprint %T: %v", obj, err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// contents returns key -> fingerprint of every object in s, read through
// ListKeys and GetByKey.
func contents(t testing.TB, s store.Store) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, k := range s.ListKeys() {
		obj, ok, err := s.GetByKey(k)
		if err != nil || !ok {
			t.Fatalf("GetByKey(%q) of a listed key = %v, %v", short(k), ok, err)
		}
		out[k] = fingerprint(t, obj)
	}
	return out
}

// want returns key -> fingerprint of objs keyed by client-go's key function.
func want(t testing.TB, objs ...interface{}) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, o := range objs {
		out[keyOf(t, o)] = fingerprint(t, o)
	}
	return out
}

// checkContents compares s's objects with want.
func checkContents(t testing.TB, s store.Store, want map[string]string) {
	t.Helper()
	if diff := cmp.Diff(want, contents(t, s), cmpShortKeys); diff != "" {
		t.Errorf("store contents differ (-want +got, key -> fingerprint):\n%s", diff)
	}
}

var cmpShortKeys = cmp.Transformer("short", func(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[short(k)] = v
	}
	return out
})

// indexKeys returns the sorted IndexKeys, failing the test on error.
func indexKeys(t testing.TB, s store.Store, index, value string) []string {
	t.Helper()
	keys, err := s.IndexKeys(index, value)
	if err != nil {
		t.Fatalf("IndexKeys(%q, %q): %v", index, short(value), err)
	}
	return slices.Sorted(slices.Values(keys))
}

// byIndexKeys returns the sorted keys of ByIndex's objects.
func byIndexKeys(t testing.TB, s store.Store, index, value string) []string {
	t.Helper()
	objs, err := s.ByIndex(index, value)
	if err != nil {
		t.Fatalf("ByIndex(%q, %q): %v", index, short(value), err)
	}
	return sortedKeys(t, objs)
}

func sortedKeys(t testing.TB, objs []interface{}) []string {
	t.Helper()
	keys := make([]string, 0, len(objs))
	for _, o := range objs {
		keys = append(keys, keyOf(t, o))
	}
	slices.Sort(keys)
	return keys
}

func sortedValues(s store.Store, index string) []string {
	return slices.Sorted(slices.Values(s.ListIndexFuncValues(index)))
}

// puts returns an OpPut of each object.
func puts[T any](objs ...T) []store.Op {
	ops := make([]store.Op, len(objs))
	for i, o := range objs {
		ops[i] = store.Op{Type: store.OpPut, Object: o}
	}
	return ops
}

// checkDiff reports how got differs from want; what, formatted with args,
// says what was compared. Nil and empty slices are equal.
func checkDiff(t testing.TB, want, got any, what string, args ...any) {
	t.Helper()
	if diff := cmp.Diff(want, got, nilEmpty); diff != "" {
		t.Errorf("%s (-want +got):\n%s", fmt.Sprintf(what, args...), diff)
	}
}

// none is the empty list checkDiff expects.
var none []string

// checkNoIndexValues checks that the pod indexes have no value left.
func checkNoIndexValues(t testing.TB, s store.Store, when string) {
	t.Helper()
	for _, idx := range []string{idxNamespace, idxApp, idxLabels} {
		checkDiff(t, none, s.ListIndexFuncValues(idx), "ListIndexFuncValues(%q) %s", idx, when)
	}
}

// mustOK fails the test if err is not nil.
func mustOK(t testing.TB, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// wantErr checks that err wraps target and mentions every string of says.
func wantErr(t testing.TB, what string, err, target error, says ...string) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Errorf("%s: error = %v; want one wrapping %q", what, err, target)
		return
	}
	for _, s := range says {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("%s: error %q does not mention %q", what, err, s)
		}
	}
}

// checkRV checks the resume point through both accessors
// (LastStoreSyncResourceVersion is not one: see testSeenClientGo).
func checkRV(t testing.TB, s store.Store, want string) {
	t.Helper()
	if got := s.ResourceVersion(); got != want {
		t.Errorf("ResourceVersion() = %q; want %q", got, want)
	}
	if got := s.Info().ResourceVersion; got != want {
		t.Errorf("Info().ResourceVersion = %q; want %q", got, want)
	}
}

// checkReset checks that Info().Reset says why the store was emptied when
// reset, and is empty otherwise.
func checkReset(t testing.TB, s store.Store, reset bool, when string) {
	t.Helper()
	switch r := s.Info().Reset; {
	case reset && r == "":
		t.Errorf("Info().Reset %s is empty; want why the store was emptied", when)
	case !reset && r != "":
		t.Errorf("Info().Reset %s = %q; want empty (the store must not be emptied)", when, r)
	}
}

// labelIndex indexes pods by one label, written here rather than taken from
// package indexer so the suite does not test indexer with itself.
func labelIndex(key string) cache.IndexFunc {
	return func(obj interface{}) ([]string, error) {
		m, err := metaOf(obj)
		if err != nil {
			return nil, err
		}
		if v, ok := m.GetLabels()[key]; ok {
			return []string{v}, nil
		}
		return nil, nil
	}
}
