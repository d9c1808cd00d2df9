package indexer_test

import (
	"errors"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/url"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
	_ "github.com/informerdb/informerdb/store/badger"
	_ "github.com/informerdb/informerdb/store/bolt"
	_ "github.com/informerdb/informerdb/store/memdb"
	_ "github.com/informerdb/informerdb/store/memory"
)

var diffSeed = flag.Uint64("diff.seed", 1, "seed of TestDifferentialClientGo (0: a new one, logged)")

// diffBackends are the stores the differential test runs against: every
// backend, the persistent ones in both read modes, the memory ones with a
// snapshot file so that they can be reopened too. Durability is off: it
// does not change what reads return, and fsync would dominate the run.
var diffBackends = []struct {
	name string
	url  func(dir string) string
}{
	{"memory", func(dir string) string { return "memory://" + escPath(filepath.Join(dir, "m.snap")) }},
	{"memdb", func(dir string) string { return "memdb://" + escPath(filepath.Join(dir, "m.snap")) }},
	{"bolt", func(dir string) string { return "bolt://" + escPath(filepath.Join(dir, "c.db")) + "?durability=nosync" }},
	{"bolt-bounded", func(dir string) string {
		return "bolt://" + escPath(filepath.Join(dir, "c.db")) + "?durability=nosync&cache=3"
	}},
	{"badger", func(dir string) string { return "badger://" + escPath(dir) + "?durability=nosync" }},
	{"badger-bounded", func(dir string) string { return "badger://" + escPath(dir) + "?durability=nosync&cache=3" }},
}

func escPath(p string) string { return (&url.URL{Path: p}).EscapedPath() }

// Labels and annotations the differential index functions read.
const (
	dLabelFail     = "fail"     // "yes": the "fail" index function errors
	dLabelLateFail = "latefail" // "yes": the "latefail" index function errors
	dAnnMulti      = "multi"    // comma-separated values of the "multi" index
	dAnnTags       = "tags"     // comma-separated values of the "tags" index
)

// splitAnnotation indexes an object by the comma-separated values of an
// annotation: absent gives no values (nil), "-" an empty non-nil list, and
// values may repeat or be empty ("a,,a").
func splitAnnotation(name string) cache.IndexFunc {
	return func(obj interface{}) ([]string, error) {
		m, err := meta.Accessor(obj)
		if err != nil {
			return nil, fmt.Errorf("%s index: %w", name, err)
		}
		v, ok := m.GetAnnotations()[name]
		switch {
		case !ok:
			return nil, nil
		case v == "-":
			return []string{}, nil
		}
		return strings.Split(v, ","), nil
	}
}

// diffIndexFuncs are every index the differential test uses, under their
// names: some are there from the start, the others are added later.
var diffIndexFuncs = cache.Indexers{
	cache.NamespaceIndex: cache.MetaNamespaceIndexFunc,
	"app":                indexer.LabelIndexFunc("app"),
	"team":               indexer.LabelIndexFunc("team"),
	dAnnMulti:            splitAnnotation(dAnnMulti),
	dAnnTags:             splitAnnotation(dAnnTags),
	// fail errors for objects labelled fail=yes, and gives the others their
	// name's first letter (several objects share a value).
	"fail": func(obj interface{}) ([]string, error) {
		m, err := meta.Accessor(obj)
		if err != nil {
			return nil, err
		}
		if m.GetLabels()[dLabelFail] == "yes" {
			return nil, fmt.Errorf("object %s is labelled %s=yes", m.GetName(), dLabelFail)
		}
		return []string{m.GetName()[:1]}, nil
	},
	// latefail errors for objects labelled latefail=yes, and gives the
	// others their namespace twice.
	"latefail": func(obj interface{}) ([]string, error) {
		m, err := meta.Accessor(obj)
		if err != nil {
			return nil, err
		}
		if m.GetLabels()[dLabelLateFail] == "yes" {
			return nil, fmt.Errorf("object %s is labelled %s=yes", m.GetName(), dLabelLateFail)
		}
		return []string{m.GetNamespace(), m.GetNamespace()}, nil
	},
}

var diffIndexNames = func() []string {
	var names []string
	for n := range diffIndexFuncs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}()

// TestDifferentialClientGo applies the same random operations to
// client-go's cache.NewIndexer and to a store of every backend, and compares
// every result: objects, keys, index contents, errors. Where client-go
// would panic (an index function that fails on an object being written or
// backfilled), the store must instead return an error wrapping
// store.ErrInvalid and stay as it was; client-go is then left out of that
// operation. Persistent stores are also closed and reopened at random
// instants and must come back the same. Each round starts from a new
// store whose initial indexes are a random subset, so that AddIndexers
// runs both on empty stores and on full ones.
//
// The seed is fixed (1), so that CI runs the same operations every time;
// -args -diff.seed=0 picks a new one to explore. It is logged, and given in
// every failure; rerun one with -args -diff.seed=N.
func TestDifferentialClientGo(t *testing.T) {
	seed := *diffSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun with -args -diff.seed=%d)", seed, seed)
	rounds, ops := 6, 400
	if testing.Short() {
		rounds, ops = 3, 200
	}
	codec := mustCodec(t, &corev1.Pod{})
	for _, b := range diffBackends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			stats := map[string]int{}
			defer func() { t.Logf("what ran: %v", stats) }()
			for round := range rounds {
				d := &differ{
					t:     t,
					seed:  seed,
					round: round,
					rng:   rand.New(rand.NewPCG(seed, uint64(round))),
					url:   b.url(t.TempDir()),
					codec: codec,
					stats: stats,
				}
				d.run(ops)
				if t.Failed() {
					return
				}
			}
		})
	}
}

// differ runs one round of the differential test on one backend.
type differ struct {
	t     *testing.T
	seed  uint64
	round int
	rng   *rand.Rand
	url   string
	codec store.Codec
	stats map[string]int // outcomes counted, to show what the seed exercised

	ref    cache.Indexer // client-go's
	s      store.Store   // ours
	step   int           // the number of the operation running, for failures
	opName string
	rv     int    // the last resourceVersion given to an object
	resume string // the resume point the store must have
	// seen is the LastStoreSyncResourceVersion the store must have:
	// client-go's after the same writes, and the resume point after a
	// reopen (ref is then told so with a Bookmark).
	seen string
}

// fatalf stops the round, naming the seed, round and operation.
func (d *differ) fatalf(format string, args ...interface{}) {
	d.t.Helper()
	d.t.Fatalf("seed %d round %d op %d (%s): %s", d.seed, d.round, d.step, d.opName, fmt.Sprintf(format, args...))
}

func (d *differ) run(n int) {
	t := d.t
	t.Helper()
	initial := cache.Indexers{}
	for _, name := range diffIndexNames {
		// "latefail" only ever comes with AddIndexers, so that the
		// objects labelled for it are written freely before.
		if name != "latefail" && d.rng.IntN(2) == 0 {
			initial[name] = diffIndexFuncs[name]
		}
	}
	d.ref = cache.NewIndexer(cache.DeletionHandlingMetaNamespaceKeyFunc, copyIndexers(initial))
	d.open(initial)
	defer func() {
		if err := d.s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()
	type op struct {
		name   string
		weight int
		fn     func()
	}
	table := []op{
		{"add", 12, d.opAdd},
		{"update", 12, d.opUpdate},
		{"delete", 10, d.opDelete},
		{"replace", 2, d.opReplace},
		{"add indexers", 2, d.opAddIndexers},
		{"bad input", 2, d.opBadInput},
		{"reopen", 1, d.opReopen},
		{"get", 5, d.opGet},
		{"get by key", 5, d.opGetByKey},
		{"list", 2, d.opList},
		{"list keys", 2, d.opListKeys},
		{"index", 8, d.opIndex},
		{"index keys", 6, d.opIndexKeys},
		{"by index", 6, d.opByIndex},
		{"list index func values", 5, d.opListIndexFuncValues},
		{"get indexers", 2, d.opGetIndexers},
		{"resync", 1, d.opResync},
		{"bookmark", 1, d.opBookmark},
	}
	if d.rng.IntN(2) == 0 {
		// Indexes added to the empty store, before any data.
		d.opName = "add indexers first"
		d.opAddIndexers()
	}
	total := 0
	for _, o := range table {
		total += o.weight
	}
	for d.step = 0; d.step < n; d.step++ {
		r := d.rng.IntN(total)
		for _, o := range table {
			if r < o.weight {
				d.opName = o.name
				o.fn()
				break
			}
			r -= o.weight
		}
		if d.step%30 == 29 {
			d.opName += ", then the full comparison"
			d.compareAll()
		}
	}
	d.opName = "end of round"
	d.compareAll()
}

func copyIndexers(in cache.Indexers) cache.Indexers {
	out := make(cache.Indexers, len(in))
	for k, v := range in {
		out[k] = v
	}
	return out
}

// open opens the store with indexers.
func (d *differ) open(indexers cache.Indexers) {
	d.t.Helper()
	s, err := store.Open(d.t.Context(), d.url, &store.Options{Name: "pods", Codec: d.codec, Indexers: copyIndexers(indexers)})
	if err != nil {
		d.fatalf("open %s: %v", d.url, err)
	}
	d.s = s
}

// Objects: a few namespaces (one of them cluster scope, one a prefix of
// another) and names, so that writes often hit an existing key. Long names
// and values cross the lengths above which bolt (1 KiB) and badger (4 KiB)
// store a digest instead; some share long prefixes, or are prefixes of
// others.
var (
	dNamespaces = []string{"ns1", "ns2", "ns", ""}
	dNames      = []string{
		"a1", "a2", "b1", "b2", "c1", "c2", "d1",
		strings.Repeat("n", 1100) + "1", strings.Repeat("n", 1100) + "2",
		strings.Repeat("m", 4100) + "1", strings.Repeat("m", 4100) + "2",
	}
	dApps   = []string{"web", "db", "api", ""}
	dValues = []string{
		"x", "y", "z", "", "x\x00", "x\xff",
		strings.Repeat("v", 1024), strings.Repeat("v", 1024) + "a", strings.Repeat("v", 1024) + "b",
		strings.Repeat("w", 4096) + "a", strings.Repeat("w", 4096) + "b",
	}
)

// dShort names the long strings of the pools above in messages: their first
// bytes, length and last byte tell them apart.
var dShort = func() map[string]string {
	m := map[string]string{}
	for _, s := range slices.Concat(dNames, dValues) {
		if len(s) > 40 {
			m[s] = fmt.Sprintf("%.3s…(%d bytes)%s", s, len(s), s[len(s)-1:])
		}
	}
	return m
}()

// short shortens the long strings of the pools for messages. (Summaries
// are compared too: other strings are kept whole.)
func short(s string) string {
	if sh, ok := dShort[s]; ok {
		return sh
	}
	return s
}

// newObj returns a new object, with a new resourceVersion so that every
// version is told apart, under a random key or, when key is not "", that
// one.
func (d *differ) newObj(key string) *corev1.Pod {
	ns, name := dNamespaces[d.rng.IntN(len(dNamespaces))], dNames[d.rng.IntN(len(dNames))]
	if key != "" {
		var err error
		if ns, name, err = cache.SplitMetaNamespaceKey(key); err != nil {
			d.fatalf("split key %q: %v", key, err)
		}
	}
	d.rv++
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Namespace: ns, Name: name, ResourceVersion: fmt.Sprint(d.rv),
		Labels: map[string]string{}, Annotations: map[string]string{},
	}}
	if d.rng.IntN(4) != 0 {
		p.Labels["app"] = dApps[d.rng.IntN(len(dApps))]
	}
	if d.rng.IntN(2) == 0 {
		p.Labels["team"] = []string{"red", "blue"}[d.rng.IntN(2)]
	}
	if d.rng.IntN(40) == 0 {
		p.Labels[dLabelFail] = "yes"
	}
	if d.rng.IntN(25) == 0 {
		p.Labels[dLabelLateFail] = "yes"
	}
	for _, ann := range []string{dAnnMulti, dAnnTags} {
		switch d.rng.IntN(6) {
		case 0: // absent
		case 1:
			p.Annotations[ann] = "-"
		default:
			vals := make([]string, d.rng.IntN(4)+1)
			for i := range vals {
				vals[i] = dValues[d.rng.IntN(len(dValues))]
			}
			p.Annotations[ann] = strings.Join(vals, ",")
		}
	}
	return p
}

// randomKey returns the key of a stored object most of the time, and
// otherwise any key, maybe not stored.
func (d *differ) randomKey() string {
	if keys := d.ref.ListKeys(); len(keys) > 0 && d.rng.IntN(4) != 0 {
		sort.Strings(keys)
		return keys[d.rng.IntN(len(keys))]
	}
	k, err := cache.MetaNamespaceKeyFunc(d.newObj(""))
	if err != nil {
		d.fatalf("key: %v", err)
	}
	return k
}

// indexErr returns the first error of client-go's index functions on objs:
// client-go would panic writing them.
func (d *differ) indexErr(indexers cache.Indexers, objs ...interface{}) error {
	for _, obj := range objs {
		for name, f := range indexers {
			if _, err := f(obj); err != nil {
				return fmt.Errorf("index %q: %w", name, err)
			}
		}
	}
	return nil
}

// write applies a write to both: client-go unless it would panic, in which
// case the store must refuse the write with ErrInvalid and change nothing.
func (d *differ) write(what string, ourErr func() error, refErr func() error, panics error) {
	d.t.Helper()
	if panics != nil {
		d.stats[what+" refused (client-go panics)"]++
		err := ourErr()
		if !errors.Is(err, store.ErrInvalid) {
			d.fatalf("%s: error %v; want one wrapping ErrInvalid, as an index function fails (%v), on which client-go panics", what, err, panics)
		}
		// client-go, left out, still has what the store had.
		d.opName += ", refused"
		d.compareAll()
		return
	}
	want := refErr()
	got := ourErr()
	if (want == nil) != (got == nil) {
		d.fatalf("%s: error %v; client-go's %v", what, got, want)
	}
	if got == nil {
		d.seen = d.ref.LastStoreSyncResourceVersion()
		d.checkSeen()
	}
	if got != nil {
		d.stats[what+" failed"]++
	} else {
		d.stats[what]++
	}
}

func (d *differ) opAdd() {
	obj := d.newObj("")
	d.write("Add", func() error { return d.s.Add(obj) }, func() error { return d.ref.Add(obj) }, d.indexErr(d.ref.GetIndexers(), obj))
}

func (d *differ) opUpdate() {
	obj := d.newObj(d.randomKey())
	d.write("Update", func() error { return d.s.Update(obj) }, func() error { return d.ref.Update(obj) }, d.indexErr(d.ref.GetIndexers(), obj))
}

func (d *differ) opDelete() {
	key := d.randomKey()
	var obj interface{}
	switch d.rng.IntN(3) {
	case 0: // the stored object, when there is one
		if o, ok, _ := d.ref.GetByKey(key); ok {
			obj = o
		} else {
			obj = d.newObj(key)
		}
	case 1: // another object under the same key
		obj = d.newObj(key)
	case 2: // a tombstone
		obj = cache.DeletedFinalStateUnknown{Key: key, Obj: d.newObj(key)}
	}
	d.write("Delete", func() error { return d.s.Delete(obj) }, func() error { return d.ref.Delete(obj) }, nil)
}

func (d *differ) opReplace() {
	n, big := d.rng.IntN(12), d.rng.IntN(4) == 0
	if big {
		// Enough for the batch to be sorted by key and encoded in
		// parallel; with this few keys, most come several times.
		n = 64 + d.rng.IntN(100)
	}
	list := make([]interface{}, n)
	for i := range list {
		var p *corev1.Pod
		if i > 0 && d.rng.IntN(5) == 0 {
			// The same key twice: the last one wins.
			prev, _ := cache.MetaNamespaceKeyFunc(list[d.rng.IntN(i)])
			p = d.newObj(prev)
		} else {
			p = d.newObj("")
		}
		if big && d.rng.IntN(8) != 0 {
			// Most objects of a large list would be refused by
			// some index function otherwise.
			delete(p.Labels, dLabelFail)
			delete(p.Labels, dLabelLateFail)
		}
		list[i] = p
	}
	d.rv++
	rv := fmt.Sprint(d.rv)
	if d.rng.IntN(8) == 0 {
		rv = "" // keeps the resume point (client-go clears its RV)
	}
	// An index function failing on an object that a later one under the
	// same key replaces fails our Replace, which validates all its input,
	// while client-go never indexes that object (TestClientGoDifferences):
	// that is counted as a refusal too.
	panics := d.indexErr(d.ref.GetIndexers(), list...)
	d.write("Replace", func() error { return d.s.Replace(slices.Clone(list), rv) }, func() error { return d.ref.Replace(slices.Clone(list), rv) }, panics)
	if panics == nil && rv != "" {
		d.resume = rv
	}
	d.checkResume()
	d.compareAll()
}

func (d *differ) opAddIndexers() {
	more := cache.Indexers{}
	for range d.rng.IntN(3) { // none, one or two, maybe existing
		name := diffIndexNames[d.rng.IntN(len(diffIndexNames))]
		more[name] = diffIndexFuncs[name]
	}
	d.opName = fmt.Sprintf("add indexers %v to %v", slices.Sorted(maps.Keys(more)), slices.Sorted(maps.Keys(d.ref.GetIndexers())))
	current := d.ref.GetIndexers()
	conflict := false
	for name := range more {
		if _, ok := current[name]; ok {
			conflict = true
		}
	}
	var panics error
	if !conflict {
		panics = d.indexErr(more, d.ref.List()...)
	}
	if len(d.ref.ListKeys()) == 0 {
		d.stats["AddIndexers on an empty store"]++
	}
	d.write("AddIndexers", func() error { return d.s.AddIndexers(copyIndexers(more)) }, func() error { return d.ref.AddIndexers(copyIndexers(more)) }, panics)
	if conflict {
		// Callers match client-go's text (the scheduler's tests do).
		if err := d.s.AddIndexers(copyIndexers(more)); err == nil || !strings.Contains(err.Error(), "indexer conflict") || !errors.Is(err, store.ErrIndexExists) {
			d.fatalf("AddIndexers of a taken name: error %v; want one saying \"indexer conflict\", as client-go's, and wrapping ErrIndexExists", err)
		}
	}
	d.compareAll()
}

// opBadInput writes and reads what the key function rejects.
func (d *differ) opBadInput() {
	var nilPod *corev1.Pod
	bad := []interface{}{nil, "not an object", nilPod}[d.rng.IntN(3)]
	d.opName = fmt.Sprintf("bad input %#v", bad)
	// client-go's key function panics on a typed nil (GetNamespace of a
	// nil *Pod); on the others it fails.
	refPanics := bad == interface{}(nilPod)
	for _, f := range []struct {
		name   string
		ours   func() error
		theirs func() error
	}{
		{"Add", func() error { return d.s.Add(bad) }, func() error { return d.ref.Add(bad) }},
		{"Update", func() error { return d.s.Update(bad) }, func() error { return d.ref.Update(bad) }},
		{"Delete", func() error { return d.s.Delete(bad) }, func() error { return d.ref.Delete(bad) }},
		{"Get", func() error { _, _, err := d.s.Get(bad); return err }, func() error { _, _, err := d.ref.Get(bad); return err }},
		{"Replace", func() error { return d.s.Replace([]interface{}{d.newObj(""), bad}, "1") }, func() error { return d.ref.Replace([]interface{}{d.newObj(""), bad}, "1") }},
	} {
		if !refPanics {
			if err := f.theirs(); err == nil {
				d.fatalf("client-go's %s succeeded", f.name)
			}
		}
		got := f.ours()
		if !errors.Is(got, store.ErrInvalid) {
			d.fatalf("%s: error %v; want one wrapping ErrInvalid", f.name, got)
		}
	}
	// Nothing changed: both still hold the same.
	d.compareAll()
}

func (d *differ) opReopen() {
	d.stats["reopen"]++
	if err := d.s.Close(); err != nil {
		d.fatalf("Close: %v", err)
	}
	d.open(d.ref.GetIndexers())
	// A store opened again has seen what its resume point says; client-go
	// is told the same, so that both go on from there.
	d.seen = d.resume
	d.ref.Bookmark(d.resume)
	d.checkResume()
	d.compareAll()
}

func (d *differ) checkResume() {
	d.t.Helper()
	if got := d.s.ResourceVersion(); got != d.resume {
		d.fatalf("ResourceVersion() = %q; want %q (the last Replace's)", got, d.resume)
	}
	d.checkSeen()
}

// checkSeen checks LastStoreSyncResourceVersion against client-go's.
func (d *differ) checkSeen() {
	d.t.Helper()
	if got := d.s.LastStoreSyncResourceVersion(); got != d.seen {
		d.fatalf("LastStoreSyncResourceVersion() = %q; want %q, as client-go's", got, d.seen)
	}
}

func (d *differ) opGet() {
	key := d.randomKey()
	var obj interface{} = d.newObj(key)
	if d.rng.IntN(4) == 0 {
		obj = cache.DeletedFinalStateUnknown{Key: key, Obj: obj}
	}
	w, wok, werr := d.ref.Get(obj)
	g, gok, gerr := d.s.Get(obj)
	d.compareGet("Get", w, wok, werr, g, gok, gerr)
}

func (d *differ) opGetByKey() {
	key := d.randomKey()
	w, wok, werr := d.ref.GetByKey(key)
	g, gok, gerr := d.s.GetByKey(key)
	d.compareGet("GetByKey "+short(key), w, wok, werr, g, gok, gerr)
}

func (d *differ) compareGet(what string, w interface{}, wok bool, werr error, g interface{}, gok bool, gerr error) {
	d.t.Helper()
	if (werr == nil) != (gerr == nil) || wok != gok || summary(w) != summary(g) {
		d.fatalf("%s = %s, %v, %v; client-go's %s, %v, %v", what, summary(g), gok, gerr, summary(w), wok, werr)
	}
}

func (d *differ) opList() {
	d.compareObjects("List", d.ref.List(), nil, d.s.List(), nil)
}

func (d *differ) opListKeys() {
	d.compareStrings("ListKeys", d.ref.ListKeys(), nil, d.s.ListKeys(), nil)
}

// randomIndex returns the name of an index, mostly an existing one.
func (d *differ) randomIndex() string {
	if d.rng.IntN(8) == 0 {
		return "no-such-index"
	}
	return diffIndexNames[d.rng.IntN(len(diffIndexNames))]
}

// randomValue returns an index value, often one the index has.
func (d *differ) randomValue(index string) string {
	if vals := d.ref.ListIndexFuncValues(index); len(vals) > 0 && d.rng.IntN(3) != 0 {
		sort.Strings(vals)
		return vals[d.rng.IntN(len(vals))]
	}
	pool := slices.Concat(dNamespaces, dApps, dValues, []string{"red", "blue", "a", "b", "nobody"})
	return pool[d.rng.IntN(len(pool))]
}

func (d *differ) opIndex() {
	name := d.randomIndex()
	var obj interface{}
	switch d.rng.IntN(20) {
	case 0:
		obj = "not an object"
	case 1:
		obj = nil
	default:
		obj = d.newObj(d.randomKey())
	}
	want, werr := d.ref.Index(name, obj)
	got, gerr := d.s.Index(name, obj)
	what := fmt.Sprintf("Index(%q, %s)", name, summary(obj))
	d.compareObjects(what, want, werr, got, gerr)
	if werr != nil && obj != nil && d.ref.GetIndexers()[name] != nil && !strings.Contains(gerr.Error(), werr.Error()) {
		// The index function's own error: ours must say it too. (A nil
		// object is refused before the index function runs.)
		d.fatalf("%s: error %q does not contain the index function's %q", what, gerr, werr)
	}
}

func (d *differ) opIndexKeys() {
	name := d.randomIndex()
	value := d.randomValue(name)
	want, werr := d.ref.IndexKeys(name, value)
	got, gerr := d.s.IndexKeys(name, value)
	// Both sort: compare the order too.
	d.compareExact(fmt.Sprintf("IndexKeys(%q, %s)", name, short(value)), want, werr, got, gerr)
}

func (d *differ) opByIndex() {
	name := d.randomIndex()
	value := d.randomValue(name)
	want, werr := d.ref.ByIndex(name, value)
	got, gerr := d.s.ByIndex(name, value)
	d.compareObjects(fmt.Sprintf("ByIndex(%q, %s)", name, short(value)), want, werr, got, gerr)
}

func (d *differ) opListIndexFuncValues() {
	name := d.randomIndex()
	d.compareStrings(fmt.Sprintf("ListIndexFuncValues(%q)", name), d.ref.ListIndexFuncValues(name), nil, d.s.ListIndexFuncValues(name), nil)
}

func (d *differ) opGetIndexers() {
	want := slices.Sorted(maps.Keys(d.ref.GetIndexers()))
	got := slices.Sorted(maps.Keys(d.s.GetIndexers()))
	if !slices.Equal(want, got) {
		d.fatalf("GetIndexers() names %q; client-go's %q", got, want)
	}
}

func (d *differ) opBookmark() {
	rv := ""
	if d.rng.IntN(4) != 0 {
		d.rv++
		rv = fmt.Sprint(d.rv)
		d.resume = rv
	}
	d.ref.Bookmark(rv)
	d.s.Bookmark(rv)
	d.seen = d.ref.LastStoreSyncResourceVersion()
	d.checkResume()
}

func (d *differ) opResync() {
	if err := d.s.Resync(); err != nil {
		d.fatalf("Resync: %v", err)
	}
}

// summary describes an object: its type, key, resourceVersion, labels and
// annotations, which tell apart every version the test writes.
func summary(obj interface{}) string {
	if obj == nil {
		return "<nil>"
	}
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return fmt.Sprintf("%T(%v)", obj, obj)
	}
	if p == nil {
		return "(*v1.Pod)(nil)"
	}
	anns := make([]string, 0, len(p.Annotations))
	for k, v := range p.Annotations {
		vals := strings.Split(v, ",")
		for i := range vals {
			vals[i] = short(vals[i])
		}
		anns = append(anns, k+"="+strings.Join(vals, ","))
	}
	sort.Strings(anns)
	return fmt.Sprintf("%s/%s@%s %v %v", p.Namespace, short(p.Name), p.ResourceVersion, p.Labels, anns)
}

func summaries(objs []interface{}) []string {
	if objs == nil {
		return nil
	}
	out := make([]string, len(objs))
	for i, o := range objs {
		out[i] = summary(o)
	}
	return out
}

// compareObjects compares lists of objects in any order, and errors by
// presence. A nil list is told from an empty one: client-go never returns
// nil without an error.
func (d *differ) compareObjects(what string, want []interface{}, werr error, got []interface{}, gerr error) {
	d.t.Helper()
	d.compareStrings(what, summaries(want), werr, summaries(got), gerr)
}

// compareStrings compares lists in any order.
func (d *differ) compareStrings(what string, want []string, werr error, got []string, gerr error) {
	d.t.Helper()
	sortNonNil := func(s []string) []string {
		if s == nil {
			return nil
		}
		s = slices.Clone(s)
		sort.Strings(s)
		return s
	}
	d.compareExact(what, sortNonNil(want), werr, sortNonNil(got), gerr)
}

func (d *differ) compareExact(what string, want []string, werr error, got []string, gerr error) {
	d.t.Helper()
	if (werr == nil) != (gerr == nil) {
		d.fatalf("%s: error %v; client-go's %v", what, gerr, werr)
	}
	if (want == nil) != (got == nil) {
		d.fatalf("%s = %#v; client-go's %#v (nil and empty differ)", what, got, want)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		d.fatalf("%s differs from client-go's (-client-go +ours):\n%s", what, diff)
	}
}

// diffState is what a store holds, as its reads tell.
type diffState struct {
	Objects []string
	Keys    []string
	Indexes []string
	// Entries maps index name, then value, to the sorted keys.
	Entries map[string]map[string][]string
	Objs    map[string]map[string][]string // ByIndex, summarized and sorted
}

// stateOf reads the whole state of ix.
func stateOf(ix cache.Indexer) (diffState, error) {
	s := diffState{
		Objects: summaries(ix.List()),
		Keys:    ix.ListKeys(),
		Indexes: slices.Sorted(maps.Keys(ix.GetIndexers())),
		Entries: map[string]map[string][]string{},
		Objs:    map[string]map[string][]string{},
	}
	sort.Strings(s.Objects)
	sort.Strings(s.Keys)
	for _, name := range s.Indexes {
		s.Entries[name] = map[string][]string{}
		s.Objs[name] = map[string][]string{}
		for _, v := range ix.ListIndexFuncValues(name) {
			keys, err := ix.IndexKeys(name, v)
			if err != nil {
				return s, fmt.Errorf("IndexKeys(%q, %q): %w", name, v, err)
			}
			s.Entries[name][v] = keys
			objs, err := ix.ByIndex(name, v)
			if err != nil {
				return s, fmt.Errorf("ByIndex(%q, %q): %w", name, v, err)
			}
			o := summaries(objs)
			sort.Strings(o)
			s.Objs[name][v] = o
		}
	}
	return s, nil
}

// state reads the store's state, failing on any error.
func (d *differ) state() diffState {
	d.t.Helper()
	s, err := stateOf(d.s)
	if err != nil {
		d.fatalf("read state: %v", err)
	}
	return s
}

// compareAll compares the whole states.
func (d *differ) compareAll() {
	d.t.Helper()
	want, err := stateOf(d.ref)
	if err != nil {
		d.fatalf("read client-go's state: %v", err)
	}
	if diff := cmp.Diff(want, d.state()); diff != "" {
		d.fatalf("state differs from client-go's (-client-go +ours):\n%s", diff)
	}
	// Every index agrees with the objects (invariant 7).
	for _, name := range want.Indexes {
		f := d.ref.GetIndexers()[name]
		byValue := map[string][]string{}
		for _, obj := range d.ref.List() {
			key, _ := cache.MetaNamespaceKeyFunc(obj)
			vals, _ := f(obj)
			for _, v := range slices.Compact(slices.Sorted(slices.Values(vals))) {
				byValue[v] = append(byValue[v], key)
			}
		}
		for v := range byValue {
			sort.Strings(byValue[v])
		}
		if diff := cmp.Diff(byValue, want.Entries[name]); diff != "" {
			d.fatalf("client-go's index %q disagrees with its objects (-computed +index):\n%s", name, diff)
		}
	}
}
