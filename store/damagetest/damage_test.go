package damagetest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/badger"
	"github.com/informerdb/informerdb/store/bolt"
	_ "github.com/informerdb/informerdb/store/memdb"
	_ "github.com/informerdb/informerdb/store/memory"
	"github.com/informerdb/informerdb/store/snapshot"
)

// Environment of the test and of its child.
const (
	envChild   = "INFORMERDB_DAMAGE_CHILD"
	envTrials  = "INFORMERDB_DAMAGE_TRIALS"
	envObjects = "INFORMERDB_DAMAGE_OBJECTS"
	envSeed    = "INFORMERDB_DAMAGE_SEED"
	envKinds   = "INFORMERDB_DAMAGE_KINDS"
)

// Defaults of the short profile, which `make test` runs.
const (
	defaultTrials  = 2
	defaultObjects = 150
	defaultSeed    = 32
)

// deadline bounds one trial: a child that has not finished by then hangs.
// Opening and reading 2,000 objects takes well under a second; the
// deadline leaves room for the race detector on a loaded machine.
const deadline = 60 * time.Second

func TestMain(m *testing.M) {
	if spec := os.Getenv(envChild); spec != "" {
		os.Exit(child(spec))
	}
	goleak.VerifyTestMain(m)
}

// kind is one kind of file to damage.
type kind struct {
	name string
	// db names the pristine database the trials copy (see build).
	db dbSpec
	// files matches the names of the files of this kind in the database's
	// directory; a trial damages one of them.
	files string
}

// dbSpec describes a pristine database.
type dbSpec struct {
	backend   string // bolt, badger, memory, memdb, portable
	bounded   bool
	encrypted bool
}

func (d dbSpec) String() string {
	s := d.backend
	if d.bounded {
		s += "-bounded"
	}
	if d.encrypted {
		s += "-encrypted"
	}
	return s
}

// cacheSize is the bounded mode's size: far fewer than the objects, so
// that reads decode from the files.
const cacheSize = 8

// dbFile is the name of the database file (bolt, memory, memdb,
// portable) or directory (badger) in a trial's directory.
func (d dbSpec) dbFile() string {
	switch d.backend {
	case "bolt":
		return "cache.db"
	case "badger":
		return "db"
	case "portable":
		return "cache.idb"
	}
	return "cache.snap"
}

// url returns the URL a store opens the database in dir with.
func (d dbSpec) url(dir string) string {
	u := d.baseURL(dir)
	if d.bounded {
		u += "?cache=" + strconv.Itoa(cacheSize)
	}
	return u
}

// baseURL is the database's URL without parameters, as snapshot.Verify
// takes it.
func (d dbSpec) baseURL(dir string) string {
	p := filepath.Join(dir, d.dbFile())
	if d.backend == "portable" {
		return p
	}
	return d.backend + "://" + p
}

var kinds = []kind{
	{"bolt", dbSpec{backend: "bolt"}, `^cache\.db$`},
	{"bolt-bounded", dbSpec{backend: "bolt", bounded: true}, `^cache\.db$`},
	{"bolt-encrypted", dbSpec{backend: "bolt", encrypted: true}, `^cache\.db$`},
	{"bolt-bounded-encrypted", dbSpec{backend: "bolt", bounded: true, encrypted: true}, `^cache\.db$`},
	{"badger-MANIFEST", dbSpec{backend: "badger"}, `^db/MANIFEST$`},
	{"badger-sst", dbSpec{backend: "badger"}, `^db/.*\.sst$`},
	{"badger-vlog", dbSpec{backend: "badger"}, `^db/.*\.vlog$`},
	{"badger-bounded-MANIFEST", dbSpec{backend: "badger", bounded: true}, `^db/MANIFEST$`},
	{"badger-bounded-sst", dbSpec{backend: "badger", bounded: true}, `^db/.*\.sst$`},
	{"badger-bounded-vlog", dbSpec{backend: "badger", bounded: true}, `^db/.*\.vlog$`},
	{"badger-encrypted-vlog", dbSpec{backend: "badger", encrypted: true}, `^db/.*\.vlog$`},
	{"memory", dbSpec{backend: "memory"}, `^cache\.snap$`},
	{"memdb", dbSpec{backend: "memdb"}, `^cache\.snap$`},
	{"portable", dbSpec{backend: "portable"}, `^cache\.idb$`},
}

// pending lists the kinds whose bad outcomes the test only reports, while
// a fix is under way; every other kind fails the test on any bad outcome.
var pending = map[string]bool{}

// Outcomes of a trial.
const (
	outError    = "error"
	outNoEffect = "no effect"
	outReset    = "reset"
	outPanic    = "panic"
	outHang     = "hang"
	outWrong    = "wrong data"
	outEmpty    = "silent empty"
	outFailed   = "child failed" // the child could not run the trial
)

// result is what a child reports about its trial.
type result struct {
	// Verify is "ok", "fail" or "" (not reached), VerifyErr its error and
	// Modified whether it changed a file.
	Verify    string `json:"verify"`
	VerifyErr string `json:"verifyErr,omitempty"`
	Modified  bool   `json:"modified,omitempty"`
	// Outcome classifies the reads; Detail says what was seen.
	Outcome string `json:"outcome"`
	Detail  string `json:"detail,omitempty"`
}

// bad reports whether r is an outcome damage must never have, and why.
func (r result) bad() string {
	switch r.Outcome {
	case outPanic, outHang, outWrong, outEmpty, outFailed:
		return r.Outcome
	case outReset:
		if !strings.HasPrefix(r.Detail, "corrupt") {
			return "reset not for corruption"
		}
	}
	if r.Modified {
		return "verify modified a file"
	}
	if r.Verify == "ok" && r.Outcome != outNoEffect {
		return "verify passed a damaged file"
	}
	return ""
}

// childSpec is what the parent tells a child.
type childSpec struct {
	DB      dbSpecJSON `json:"db"`
	Dir     string     `json:"dir"`
	Objects int        `json:"objects"`
}

type dbSpecJSON struct {
	Backend   string `json:"backend"`
	Bounded   bool   `json:"bounded"`
	Encrypted bool   `json:"encrypted"`
}

func (d dbSpec) json() dbSpecJSON { return dbSpecJSON{d.backend, d.bounded, d.encrypted} }
func (d dbSpecJSON) spec() dbSpec { return dbSpec{d.Backend, d.Bounded, d.Encrypted} }

func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive number", name, v)
	}
	return n
}

func TestDamage(t *testing.T) {
	trials := envInt(t, envTrials, defaultTrials)
	objects := envInt(t, envObjects, defaultObjects)
	seed := uint64(envInt(t, envSeed, defaultSeed))
	sel := regexp.MustCompile(os.Getenv(envKinds))
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s=%d %s=%d %s=%d", envTrials, trials, envObjects, objects, envSeed, seed)
	root := t.TempDir()
	pristine := map[dbSpec]string{}
	var rows []row
	for ki, k := range kinds {
		if !sel.MatchString(k.name) {
			continue
		}
		dir, ok := pristine[k.db]
		if !ok {
			dir = filepath.Join(root, "pristine-"+k.db.String())
			if err := build(t.Context(), k.db, dir, objects); err != nil {
				t.Fatalf("build %s: %v", k.db, err)
			}
			pristine[k.db] = dir
		}
		files, err := matching(dir, k.files)
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: no file matches %s in %s (%v)", k.name, k.files, dir, err)
		}
		r := rand.New(rand.NewPCG(seed, uint64(ki)))
		rw := row{kind: k.name, counts: map[string]int{}, resets: map[string]int{}}
		for i := range trials {
			tdir := filepath.Join(root, fmt.Sprintf("%s-%03d", k.name, i))
			if err := os.CopyFS(tdir, os.DirFS(dir)); err != nil {
				t.Fatal(err)
			}
			// Half the trials flip bytes, half truncate.
			what, err := damage(filepath.Join(tdir, files[r.IntN(len(files))]), r, i%2 == 1)
			if err != nil {
				t.Fatal(err)
			}
			res := runChild(t, exe, childSpec{DB: k.db.json(), Dir: tdir, Objects: objects})
			rw.add(res)
			if why := res.bad(); why != "" {
				rw.bad++
				msg := fmt.Sprintf("%s trial %d (%s): %s: %s (verify %s: %s)", k.name, i, what, why, res.Detail, res.Verify, res.VerifyErr)
				if pending[k.name] {
					t.Log("pending: " + msg)
				} else {
					t.Error(msg)
				}
			}
			if err := os.RemoveAll(tdir); err != nil {
				t.Fatal(err)
			}
		}
		rows = append(rows, rw)
	}
	t.Log("\n" + table(rows))
}

// matching returns the files under dir whose slash-separated relative path
// matches pattern, sorted.
func matching(dir, pattern string) ([]string, error) {
	re := regexp.MustCompile(pattern)
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if re.MatchString(filepath.ToSlash(rel)) {
			out = append(out, rel)
		}
		return nil
	})
	slices.Sort(out)
	return out, err
}

// damage flips 1 to 16 bytes of the file at path at random offsets, or
// truncates it at a random length, and says what it did.
func damage(path string, r *rand.Rand, truncate bool) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	name := filepath.Base(path)
	if len(data) == 0 {
		return name + " empty, left as is", nil
	}
	if truncate {
		n := r.IntN(len(data))
		return fmt.Sprintf("%s truncated from %d to %d bytes", name, len(data), n), os.Truncate(path, int64(n))
	}
	flips := 1 + r.IntN(16)
	offs := make([]int, flips)
	for i := range offs {
		offs[i] = r.IntN(len(data))
		data[offs[i]] ^= byte(1 + r.IntN(255))
	}
	slices.Sort(offs)
	return fmt.Sprintf("%s (%d bytes) flipped at %v", name, len(data), offs), os.WriteFile(path, data, 0o600)
}

// runChild runs one trial in a child process, bounded by deadline.
func runChild(t *testing.T, exe string, spec childSpec) result {
	t.Helper()
	js, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), deadline)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), envChild+"="+string(js))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	var res result
	// The child prints a line after Verify and one after the reads; the
	// last one it printed is what it got to.
	for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		if line != "" {
			_ = json.Unmarshal([]byte(line), &res)
		}
	}
	switch {
	case ctx.Err() != nil:
		res.Outcome, res.Detail = outHang, fmt.Sprintf("no result after %v; stage reached: verify=%q", deadline, res.Verify)
	case strings.Contains(stderr.String(), "panic:") || strings.Contains(stderr.String(), "fatal error:"):
		res.Outcome, res.Detail = outPanic, firstLines(stderr.String(), 8)
	case err != nil || res.Outcome == "":
		res.Outcome, res.Detail = outFailed, fmt.Sprintf("%v: %s", err, firstLines(stderr.String(), 8))
	}
	return res
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	return strings.Join(lines[:min(n, len(lines))], " | ")
}

// row counts the outcomes of one kind's trials.
type row struct {
	kind   string
	trials int
	counts map[string]int
	resets map[string]int
	// verifyMissed counts trials where Verify passed while a read did
	// not; modified, those where Verify changed a file.
	verifyMissed, modified, bad int
}

func (rw *row) add(r result) {
	rw.trials++
	rw.counts[r.Outcome]++
	if r.Outcome == outReset {
		reason, _, _ := strings.Cut(r.Detail, ":")
		rw.resets[reason]++
	}
	if r.Verify == "ok" && r.Outcome != outNoEffect {
		rw.verifyMissed++
	}
	if r.Modified {
		rw.modified++
	}
}

func table(rows []row) string {
	var b strings.Builder
	b.WriteString("| damaged file | trials | error | no effect | reset (reason) | panic | hang | wrong data | silent empty | verify passed damage | verify modified | bad |\n")
	b.WriteString("|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rows {
		var resets []string
		for _, k := range slices.Sorted(maps.Keys(r.resets)) {
			resets = append(resets, fmt.Sprintf("%d %s", r.resets[k], k))
		}
		failed := ""
		if n := r.counts[outFailed]; n > 0 {
			failed = fmt.Sprintf(" (+%d child failed)", n)
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %s | %d | %d | %d | %d | %d | %d | %d%s |\n", r.kind, r.trials,
			r.counts[outError], r.counts[outNoEffect], strings.Join(resets, ", "), r.counts[outPanic], r.counts[outHang],
			r.counts[outWrong], r.counts[outEmpty], r.verifyMissed, r.modified, r.bad, failed)
	}
	return b.String()
}

// The data every database holds: objects ConfigMaps in 5 namespaces with
// an "app" label of 7 values, written in commits of 50, then every tenth
// updated and every twentieth deleted, each step with its resume point.

const storeName = "configmaps"

var encryptionKey = bytes.Repeat([]byte{0x32}, indexer.KeySize)

func codec(encrypted bool) store.Codec {
	c, err := indexer.NewCodec(&corev1.ConfigMap{})
	if err != nil {
		panic(err)
	}
	if !encrypted {
		return c
	}
	k, err := indexer.NewEncryptionKey(encryptionKey)
	if err != nil {
		panic(err)
	}
	ring, err := indexer.NewKeyRing(k)
	if err != nil {
		panic(err)
	}
	ec, err := indexer.NewEncryptedCodec(c, ring)
	if err != nil {
		panic(err)
	}
	return ec
}

func options(encrypted bool) *store.Options {
	return &store.Options{
		Name:  storeName,
		Codec: codec(encrypted),
		Indexers: cache.Indexers{
			"namespace": indexer.NamespaceIndexFunc,
			"app":       indexer.LabelIndexFunc("app"),
		},
		Scope: "damage-test",
	}
}

func configMap(i, version int) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       fmt.Sprintf("ns-%d", i%5),
			Name:            fmt.Sprintf("cm-%05d", i),
			ResourceVersion: strconv.Itoa(version),
			Labels:          map[string]string{"app": fmt.Sprintf("app-%d", i%7)},
		},
		Data: map[string]string{"payload": strings.Repeat(fmt.Sprintf("%d-%d;", i, version), 60)},
	}
}

// step is one commit of the history: its operations and resume point.
type step struct {
	ops []store.Op
	rv  string
}

// history returns the commits that write the data, and the final state.
func history(n int) ([]step, map[string]*corev1.ConfigMap) {
	state := map[string]*corev1.ConfigMap{}
	var steps []step
	version := 0
	for start := 0; start < n; start += 50 {
		version++
		var s step
		for i := start; i < min(start+50, n); i++ {
			cm := configMap(i, version)
			state[cm.Namespace+"/"+cm.Name] = cm
			s.ops = append(s.ops, store.Op{Type: store.OpPut, Object: cm})
		}
		s.rv = strconv.Itoa(version)
		steps = append(steps, s)
	}
	version++
	s := step{rv: strconv.Itoa(version)}
	for i := 0; i < n; i++ {
		cm := configMap(i, version)
		key := cm.Namespace + "/" + cm.Name
		switch {
		case i%20 == 7:
			delete(state, key)
			s.ops = append(s.ops, store.Op{Type: store.OpDelete, Key: key})
		case i%10 == 3:
			state[key] = cm
			s.ops = append(s.ops, store.Op{Type: store.OpPut, Object: cm})
		}
	}
	steps = append(steps, s)
	return steps, state
}

// build writes the pristine database of d under dir.
func build(ctx context.Context, d dbSpec, dir string, n int) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	steps, _ := history(n)
	src := d
	if d.backend == "portable" {
		// A portable snapshot of a bolt database.
		src = dbSpec{backend: "bolt"}
	}
	s, err := store.Open(ctx, src.url(dir), options(d.encrypted))
	if err != nil {
		return err
	}
	for _, st := range steps {
		if err := s.Commit(ctx, store.Batch{Ops: st.ops, ResourceVersion: st.rv}); err != nil {
			s.Close()
			return err
		}
	}
	if err := s.Close(); err != nil {
		return err
	}
	if d.backend == "portable" {
		db := filepath.Join(dir, src.dbFile())
		if _, err := snapshot.SaveURL(ctx, filepath.Join(dir, d.dbFile()), src.url(dir), nil); err != nil {
			return err
		}
		return os.Remove(db)
	}
	return nil
}

// hashFiles returns the SHA-256 of every file under dir, by path.
func hashFiles(dir string) (map[string][32]byte, error) {
	sums := map[string][32]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		sums[p] = sha256.Sum256(data)
		return nil
	})
	return sums, err
}

// child runs the trial spec describes: Verify, then the reads. It prints
// a result line after each and returns the exit code.
func child(specJSON string) int {
	var spec childSpec
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
		fmt.Fprintln(os.Stderr, "damagetest child:", err)
		return 3
	}
	ctx := context.Background()
	d := spec.DB.spec()
	var res result
	emit := func() {
		js, _ := json.Marshal(res)
		fmt.Println(string(js))
	}
	before, err := hashFiles(spec.Dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "damagetest child:", err)
		return 3
	}
	// Verify decodes every object, as the snapshot command does.
	dec := codec(d.encrypted)
	_, verr := snapshot.Verify(ctx, d.baseURL(spec.Dir), &snapshot.VerifyOptions{
		Entries: map[string]snapshot.IndexEntries{
			bolt.Scheme: bolt.IndexEntries, badger.Scheme: badger.IndexEntries,
		},
		Decoder: func(store.Info) (func([]byte) error, error) {
			return func(data []byte) error {
				_, err := dec.Decode(data)
				return err
			}, nil
		},
	})
	res.Verify = "ok"
	if verr != nil {
		res.Verify, res.VerifyErr = "fail", verr.Error()
	}
	after, err := hashFiles(spec.Dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "damagetest child:", err)
		return 3
	}
	res.Modified = !maps.Equal(before, after)
	emit()
	steps, want := history(spec.Objects)
	wantRV := steps[len(steps)-1].rv
	if d.backend == "portable" {
		res.Outcome, res.Detail = readPortable(ctx, filepath.Join(spec.Dir, d.dbFile()), want, wantRV)
	} else {
		res.Outcome, res.Detail = readStore(ctx, d.url(spec.Dir), d.encrypted, want, wantRV)
	}
	emit()
	return 0
}

// plain is the codec objects are compared with: its encoding is
// deterministic.
var plain = codec(false)

func encode(obj interface{}) ([]byte, error) { return plain.Encode(obj) }

// readStore opens the store at url, reads everything back and classifies
// what it finds against want.
func readStore(ctx context.Context, url string, encrypted bool, want map[string]*corev1.ConfigMap, wantRV string) (outcome, detail string) {
	s, err := store.Open(ctx, url, options(encrypted))
	if err != nil {
		return outError, "open: " + err.Error()
	}
	defer func() {
		if err := s.Close(); err != nil && outcome == outNoEffect {
			outcome, detail = outError, "close: "+err.Error()
		}
	}()
	info := s.Info()
	keys := s.ListKeys()
	if info.Reset != "" {
		if len(keys) != 0 || s.ResourceVersion() != "" {
			return outWrong, fmt.Sprintf("reset (%s) but holds %d keys, resume point %q", info.Reset, len(keys), s.ResourceVersion())
		}
		return outReset, info.Reset
	}
	if len(keys) == 0 && len(want) > 0 && readErr(s) == nil {
		return outEmpty, fmt.Sprintf("0 keys, resume point %q", s.ResourceVersion())
	}
	var problems []string
	if rv := s.ResourceVersion(); rv != wantRV {
		problems = append(problems, fmt.Sprintf("resume point %q, want %q", rv, wantRV))
	}
	slices.Sort(keys)
	if wk := slices.Sorted(maps.Keys(want)); !slices.Equal(keys, wk) {
		problems = append(problems, fmt.Sprintf("ListKeys: %d keys, want %d (%s)", len(keys), len(wk), diffKeys(keys, wk)))
	}
	for _, k := range slices.Sorted(maps.Keys(want)) {
		obj, ok, err := s.GetByKey(k)
		if err != nil {
			return outError, fmt.Sprintf("get %s: %v", k, err)
		}
		if p := compare(k, obj, ok, want[k]); p != "" {
			problems = append(problems, p)
		}
	}
	listed := map[string]bool{}
	for _, obj := range s.List() {
		cm, ok := obj.(*corev1.ConfigMap)
		if !ok {
			problems = append(problems, fmt.Sprintf("List: a %T", obj))
			continue
		}
		k := cm.Namespace + "/" + cm.Name
		listed[k] = true
		if p := compare(k, obj, true, want[k]); p != "" {
			problems = append(problems, "List: "+p)
		}
	}
	if len(listed) != len(want) {
		problems = append(problems, fmt.Sprintf("List: %d objects, want %d", len(listed), len(want)))
	}
	for a := range 7 {
		v := fmt.Sprintf("app-%d", a)
		got, err := s.IndexKeys("app", v)
		if err != nil {
			return outError, fmt.Sprintf("IndexKeys app %s: %v", v, err)
		}
		var wk []string
		for k, cm := range want {
			if cm.Labels["app"] == v {
				wk = append(wk, k)
			}
		}
		slices.Sort(got)
		slices.Sort(wk)
		if !slices.Equal(got, wk) {
			problems = append(problems, fmt.Sprintf("IndexKeys app %s: %s", v, diffKeys(got, wk)))
		}
	}
	if err := readErr(s); err != nil {
		return outError, "read: " + err.Error()
	}
	if len(problems) > 0 {
		if len(problems) > 3 {
			problems = append(problems[:3], fmt.Sprintf("and %d more", len(problems)-3))
		}
		return outWrong, strings.Join(problems, "; ")
	}
	return outNoEffect, ""
}

// readErr returns the read error a store reports for its cache.Indexer
// methods, which cannot return one, if it reports them.
func readErr(s store.Store) error {
	if r, ok := s.(interface{ ReadErr() error }); ok {
		return r.ReadErr()
	}
	return nil
}

func compare(key string, obj interface{}, ok bool, want *corev1.ConfigMap) string {
	switch {
	case !ok && want == nil:
		return ""
	case !ok:
		return fmt.Sprintf("%s missing", key)
	case want == nil:
		return fmt.Sprintf("%s is not in the store", key)
	}
	got, err := encode(obj)
	if err != nil {
		return fmt.Sprintf("%s: a %T: %v", key, obj, err)
	}
	w, _ := encode(want)
	if !bytes.Equal(got, w) {
		return fmt.Sprintf("%s differs", key)
	}
	return ""
}

func diffKeys(got, want []string) string {
	var extra, missing []string
	for _, k := range got {
		if _, ok := slices.BinarySearch(want, k); !ok {
			extra = append(extra, k)
		}
	}
	for _, k := range want {
		if _, ok := slices.BinarySearch(got, k); !ok {
			missing = append(missing, k)
		}
	}
	return fmt.Sprintf("extra %q, missing %q", firstN(extra, 3), firstN(missing, 3))
}

func firstN(s []string, n int) []string { return s[:min(n, len(s))] }

// readPortable reads the snapshot file at path and classifies its records
// against want.
func readPortable(ctx context.Context, path string, want map[string]*corev1.ConfigMap, wantRV string) (string, string) {
	got := map[string][]byte{}
	m, err := snapshot.Read(ctx, path, func(name string, rec store.Record) error {
		if name == storeName {
			got[rec.Key] = bytes.Clone(rec.Data)
		}
		return nil
	})
	if err != nil {
		return outError, "read: " + err.Error()
	}
	h := m.Store(storeName)
	if h == nil {
		return outWrong, "store missing from the file"
	}
	var problems []string
	if h.Info.ResourceVersion != wantRV {
		problems = append(problems, fmt.Sprintf("resume point %q, want %q", h.Info.ResourceVersion, wantRV))
	}
	for k, data := range got {
		obj, err := plain.Decode(data)
		if err != nil {
			return outError, fmt.Sprintf("decode %s: %v", k, err)
		}
		if p := compare(k, obj, true, want[k]); p != "" {
			problems = append(problems, p)
		}
	}
	if len(got) != len(want) {
		problems = append(problems, fmt.Sprintf("%d records, want %d", len(got), len(want)))
	}
	if len(problems) > 0 {
		return outWrong, strings.Join(firstN(problems, 3), "; ")
	}
	return outNoEffect, ""
}
