package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	bbolt "go.etcd.io/bbolt"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/yaml"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/snapshot"
)

func TestMain(m *testing.M) {
	if path := os.Getenv("SNAPSHOT_TEST_HOLD"); path != "" {
		holdLock(path)
		return
	}
	if mode := os.Getenv(envStallMain); mode != "" {
		os.Exit(stallMain(mode))
	}
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("github.com/dgraph-io/ristretto/v2/z.(*AllocatorPool).freeupAllocators"),
		goleak.IgnoreAnyFunction("k8s.io/klog/v2.(*flushDaemon).run.func1"))
}

// cli runs the command in-process and returns its exit code and outputs.
func cli(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(t.Context(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

const podsName = "v1/pods"

func podOptions(t *testing.T) *store.Options {
	t.Helper()
	c, err := indexer.NewCodec(&corev1.Pod{})
	if err != nil {
		t.Fatal(err)
	}
	return &store.Options{
		Name:       podsName,
		Codec:      c,
		Indexers:   cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
		Durability: store.DurabilityNoSync,
	}
}

func pod(i int) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Namespace:       fmt.Sprintf("ns-%d", i%3),
		Name:            fmt.Sprintf("pod-%03d", i),
		ResourceVersion: fmt.Sprint(10 + i),
	}, Spec: corev1.PodSpec{NodeName: fmt.Sprintf("node-%d", i%2)}}
}

// fill writes n Pods with resume point rv into the store podsName at url.
func fill(t *testing.T, url string, n int, rv string) {
	t.Helper()
	s, err := store.Open(context.Background(), url, podOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	list := make([]interface{}, n)
	for i := range list {
		list[i] = pod(i)
	}
	if err := s.Replace(list, rv); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// savedFile fills a bolt database with n Pods and saves it; it returns the
// database URL and the file.
func savedFile(t *testing.T, n int) (string, string) {
	t.Helper()
	dir := t.TempDir()
	src := "bolt://" + filepath.Join(dir, "src.db")
	fill(t, src, n, "77")
	file := filepath.Join(dir, "snap.idb")
	if code, _, stderr := cli(t, "save", src, file); code != 0 {
		t.Fatalf("save: exit %d: %s", code, stderr)
	}
	return src, file
}

func statusJSON(t *testing.T, target string) *snapshot.Manifest {
	t.Helper()
	code, out, stderr := cli(t, "status", "-w", "json", target)
	if code != 0 {
		t.Fatalf("status %s: exit %d: %s", target, code, stderr)
	}
	var m snapshot.Manifest
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("status -w json: %v\n%s", err, out)
	}
	return &m
}

func TestSaveRestoreStatus(t *testing.T) {
	src, file := savedFile(t, 30)
	fi, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("snapshot mode %v, want 0600", fi.Mode().Perm())
	}
	if left, _ := filepath.Glob(file + ".part*"); len(left) > 0 {
		t.Errorf("temporary files left behind: %q", left)
	}
	want := statusJSON(t, src).Store(podsName)
	fromFile := statusJSON(t, file).Store(podsName)
	if want == nil || fromFile == nil {
		t.Fatalf("status lacks %s", podsName)
	}
	if diff := cmp.Diff(want.ContentHash, fromFile.ContentHash); diff != "" || fromFile.Objects != 30 || fromFile.Info.ResourceVersion != "77" {
		t.Errorf("file status %+v, want hash %s, 30 objects, rv 77", fromFile, want.ContentHash)
	}
	for _, dst := range []string{
		"badger://" + filepath.Join(t.TempDir(), "db"),
		"memory://" + filepath.Join(t.TempDir(), "m.snap"),
	} {
		t.Run(strings.SplitN(dst, ":", 2)[0], func(t *testing.T) {
			code, out, stderr := cli(t, "restore", file, dst)
			if code != 0 {
				t.Fatalf("restore: exit %d: %s", code, stderr)
			}
			if !strings.Contains(out, "30 objects") {
				t.Errorf("restore output %q does not count 30 objects", out)
			}
			got := statusJSON(t, dst).Store(podsName)
			if got == nil || got.ContentHash != want.ContentHash || got.Info.ResourceVersion != "77" {
				t.Errorf("restored status %+v, want hash %s, rv 77", got, want.ContentHash)
			}
			// A second restore meets a full target.
			code, _, stderr = cli(t, "restore", file, dst)
			if code != exitNotEmpty {
				t.Errorf("restore into a full target: exit %d (%s), want %d", code, stderr, exitNotEmpty)
			}
			code, _, stderr = cli(t, "restore", "--force", "--drop-resume-point", file, dst)
			if code != 0 {
				t.Fatalf("forced restore: exit %d: %s", code, stderr)
			}
			got = statusJSON(t, dst).Store(podsName)
			if got == nil || got.Info.ResourceVersion != "" || got.Objects != 30 {
				t.Errorf("after --drop-resume-point: %+v, want 30 objects and no resume point", got)
			}
			code, out, stderr = cli(t, "verify", dst)
			if code != 0 || !strings.HasPrefix(out, "OK") {
				t.Errorf("verify %s: exit %d: %s%s", dst, code, out, stderr)
			}
		})
	}
}

func TestStatusFormats(t *testing.T) {
	_, file := savedFile(t, 5)
	for _, tc := range []struct {
		format string
		want   []string
	}{
		{"simple", []string{podsName + ", 5 objects", "resume point 77", "type k8s.io/api/core/v1.Pod", "codec protobuf", "indexes [namespace]"}},
		{"table", []string{"STORE", "OBJECTS", "RESUME POINT", podsName, "k8s.io/api/core/v1.Pod", "namespace"}},
		{"json", []string{`"objects": 5`, `"ResourceVersion": "77"`, `"contentHash"`}},
	} {
		t.Run(tc.format, func(t *testing.T) {
			code, out, stderr := cli(t, "status", "-w", tc.format, file)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

func TestObjects(t *testing.T) {
	src, file := savedFile(t, 6)
	for _, target := range []string{file, src} {
		t.Run(strings.SplitN(target, ":", 2)[0], func(t *testing.T) {
			code, out, stderr := cli(t, "get", target, "ns-1/pod-004", "-o", "yaml")
			if code != 0 {
				t.Fatalf("get: exit %d: %s", code, stderr)
			}
			var got corev1.Pod
			if err := yaml.Unmarshal([]byte(out), &got); err != nil {
				t.Fatalf("get -o yaml: %v\n%s", err, out)
			}
			want := pod(4)
			want.APIVersion, want.Kind = "v1", "Pod"
			if diff := cmp.Diff(want, &got); diff != "" {
				t.Errorf("get (-want +got):\n%s", diff)
			}

			code, out, stderr = cli(t, "by-index", target, "namespace", "ns-2", "-o", "json")
			if code != 0 {
				t.Fatalf("by-index: exit %d: %s", code, stderr)
			}
			var names []string
			dec := json.NewDecoder(strings.NewReader(out))
			for dec.More() {
				var p corev1.Pod
				if err := dec.Decode(&p); err != nil {
					t.Fatalf("by-index -o json: %v\n%s", err, out)
				}
				names = append(names, p.Name)
			}
			if diff := cmp.Diff([]string{"pod-002", "pod-005"}, names); diff != "" {
				t.Errorf("by-index namespace ns-2 (-want +got):\n%s", diff)
			}

			code, out, stderr = cli(t, "ls", target, "-o", "yaml")
			if code != 0 {
				t.Fatalf("ls: exit %d: %s", code, stderr)
			}
			if n := strings.Count(out, "kind: Pod"); n != 6 {
				t.Errorf("ls printed %d Pods, want 6:\n%s", n, out)
			}

			code, _, _ = cli(t, "get", target, "ns-0/absent")
			if code != exitError {
				t.Errorf("get of an absent key: exit %d, want %d", code, exitError)
			}
			code, _, _ = cli(t, "by-index", target, "no-such-index", "x")
			if code != exitError {
				t.Errorf("by-index of an unknown index: exit %d, want %d", code, exitError)
			}
		})
	}
}

func TestUsageErrors(t *testing.T) {
	_, file := savedFile(t, 1)
	for _, args := range [][]string{
		{},
		{"save", "only-one-arg"},
		{"save", file, filepath.Join(t.TempDir(), "x")}, // a snapshot file, not a database
		{"restore", file},
		{"status", "-w", "xml", file},
		{"status", "--no-such-flag", file},
		{"get", file, "k", "-o", "toml"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			code, _, stderr := cli(t, args...)
			if code != exitUsage {
				t.Errorf("exit %d (%s), want %d", code, stderr, exitUsage)
			}
		})
	}
}

func TestCompact(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.db")
	url := "bolt://" + path
	fill(t, url, 300, "5")
	fill(t, url, 3, "6") // leaves free pages behind
	before := statusJSON(t, url).Store(podsName)
	code, out, stderr := cli(t, "compact", path)
	if code != 0 {
		t.Fatalf("compact: exit %d: %s", code, stderr)
	}
	if !strings.Contains(out, "Compacted") {
		t.Errorf("compact output %q", out)
	}
	after := statusJSON(t, url).Store(podsName)
	if diff := cmp.Diff(before, after); diff != "" {
		t.Errorf("compact changed the contents (-before +after):\n%s", diff)
	}
	if _, err := os.Stat(path + ".compact.part"); !os.IsNotExist(err) {
		t.Errorf("compact left its copy: %v", err)
	}

	// Refused while the file is in use.
	s, err := store.Open(t.Context(), url, podOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if code, _, stderr := cli(t, "compact", path); code != exitLocked {
		t.Errorf("compact of a file in use: exit %d (%s), want %d", code, stderr, exitLocked)
	}
}

func TestBadFileExitCodes(t *testing.T) {
	_, file := savedFile(t, 10)
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"truncated", data[:len(data)-10]},
		{"flipped byte", func() []byte {
			b := bytes.Clone(data)
			b[len(b)/2] ^= 0xff
			return b
		}()},
		{"not a snapshot", []byte("hello, this is not a snapshot file at all, but long enough")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := filepath.Join(dir, tc.name+".idb")
			if err := os.WriteFile(bad, tc.data, 0o600); err != nil {
				t.Fatal(err)
			}
			// A damaged snapshot is corrupt data (exit 3); a file that
			// is no snapshot at all, nor a database, is not what the
			// commands take (exit 2, saying what they take).
			want, says := exitCorrupt, bad
			if tc.name == "not a snapshot" {
				want, says = exitUsage, "bolt:///"
			}
			for _, args := range [][]string{{"status", bad}, {"verify", bad}, {"ls", bad}} {
				if code, _, stderr := cli(t, args...); code != want || !strings.Contains(stderr, says) {
					t.Errorf("%v: exit %d (%s), want %d saying %q", args, code, stderr, want, says)
				}
			}
			dst := filepath.Join(t.TempDir(), "dst.db")
			code, _, stderr := cli(t, "restore", bad, "bolt://"+dst)
			if code != want || !strings.Contains(stderr, says) {
				t.Errorf("restore: exit %d (%s), want %d saying %q", code, stderr, want, says)
			}
			if !strings.Contains(stderr, bad) {
				t.Errorf("restore error %q does not name the file", stderr)
			}
			if _, err := os.Stat(dst); !os.IsNotExist(err) {
				t.Errorf("a refused restore created the target: %v", err)
			}
		})
	}
}

func TestUnstructuredObjects(t *testing.T) {
	gvk := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	url := "bolt://" + filepath.Join(t.TempDir(), "u.db")
	s, err := store.Open(t.Context(), url, &store.Options{Name: "widgets", Codec: indexer.NewUnstructuredCodec(gvk), Durability: store.DurabilityNoSync})
	if err != nil {
		t.Fatal(err)
	}
	obj := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]interface{}{"name": "w1", "namespace": "default"},
		"spec":     map[string]interface{}{"size": int64(3)},
	}}
	if err := s.Add(obj); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := cli(t, "get", url, "default/w1", "-o", "json")
	if code != 0 {
		t.Fatalf("get: exit %d: %s", code, stderr)
	}
	var got map[string]interface{}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	want := map[string]interface{}{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]interface{}{"name": "w1", "namespace": "default"},
		"spec":     map[string]interface{}{"size": float64(3)},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("get (-want +got):\n%s", diff)
	}
}

// holdLock is the child process of TestLockedByAnotherProcess: it holds the
// bolt file's lock until its stdin closes.
func holdLock(path string) {
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println("ready")
	// Any end of stdin, EOF or an error, means the parent is done with us.
	_, _ = io.Copy(io.Discard, os.Stdin)
	if err := db.Close(); err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
}

// holdLocked starts a child process (this test binary, SNAPSHOT_TEST_HOLD)
// that opens the bolt file at path and holds its lock until the test ends.
func holdLocked(t *testing.T, path string) {
	t.Helper()
	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), "SNAPSHOT_TEST_HOLD="+path)
	stdin, err := child.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Closing stdin tells the child to release the lock and exit; its
		// exit status is checked so a child that failed to close the
		// database shows.
		_ = stdin.Close()
		if err := child.Wait(); err != nil {
			t.Errorf("child holding the lock: %v", err)
		}
	})
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("child: %q, %v", line, err)
	}
}

func TestLockedByAnotherProcess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "held.db")
	fill(t, "bolt://"+path, 5, "3")
	holdLocked(t, path)
	for _, args := range [][]string{
		{"compact", "--lock-timeout", "100ms", path},
		{"save", "bolt://" + path + "?lock_timeout=100ms", filepath.Join(t.TempDir(), "s.idb")},
		{"status", "bolt://" + path + "?lock_timeout=100ms"},
		{"drop", "bolt://" + path + "?lock_timeout=100ms", "--store", podsName},
	} {
		code, _, stderr := cli(t, args...)
		if code != exitLocked {
			t.Errorf("%v while another process holds the file: exit %d (%s), want %d", args, code, stderr, exitLocked)
		}
		if args[0] != "compact" {
			continue
		}
		// compact takes no URL parameters: its advice must be the flag.
		if !strings.Contains(stderr, "compact") {
			t.Errorf("error does not name the operation: %q", stderr)
		}
		if strings.Contains(stderr, "lock_timeout=") && !strings.Contains(stderr, "--lock-timeout") {
			t.Errorf("error advises lock_timeout=, which compact refuses: %q", stderr)
		}
	}
}

// TestSaveDoesNotFollowPlantedPartLink plants a symbolic link where an
// older build wrote its temporary file (<file>.part, opened with O_TRUNC
// and then chmodded): save must not truncate, overwrite or chmod the file
// it points to.
func TestSaveDoesNotFollowPlantedPartLink(t *testing.T) {
	src, _ := savedFile(t, 3)
	dir := t.TempDir()
	victim := filepath.Join(t.TempDir(), "victim.conf")
	if err := os.WriteFile(victim, []byte("precious\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "backup.idb")
	if err := os.Symlink(victim, out+".part"); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := cli(t, "save", src, out)
	data, _ := os.ReadFile(victim)
	fi, _ := os.Stat(victim)
	if string(data) != "precious\n" || fi.Mode().Perm() != 0o644 {
		t.Errorf("save (exit %d %s) wrote through the link %s.part: victim now %d bytes, mode %v", code, strings.TrimSpace(stderr), out, len(data), fi.Mode().Perm())
	}
}

// TestCompactChecksPath checks that compact refuses, as every other command
// does (driver.CheckPath), a database path other users could tamper with: a
// file in a directory others may write (where a link planted at the name of
// its copy would make a root compact clobber any file), and a symbolic
// link.
func TestCompactChecksPath(t *testing.T) {
	t.Run("shared directory", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "shared")
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "c.db")
		fill(t, "bolt://"+path, 20, "5")
		if err := os.Chmod(dir, 0o777); err != nil { // others may write, no sticky bit
			t.Fatal(err)
		}
		code, _, stderr := cli(t, "status", "bolt://"+path)
		if code == 0 {
			t.Fatalf("status accepted a database in a world-writable directory")
		}
		t.Logf("status: exit %d: %s", code, strings.TrimSpace(stderr))
		code, _, stderr = cli(t, "compact", path)
		if code == 0 {
			t.Errorf("compact rewrote a database in a world-writable directory that every other command refuses (%s)", strings.TrimSpace(stderr))
		}
		if !strings.Contains(stderr, "compact") || !strings.Contains(stderr, "other users could replace") {
			t.Errorf("compact's refusal %q does not name the operation and the cause", stderr)
		}
	})
	t.Run("symbolic link", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "c.db")
		fill(t, "bolt://"+path, 20, "5")
		link := filepath.Join(dir, "link.db")
		if err := os.Symlink(path, link); err != nil {
			t.Fatal(err)
		}
		before, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		code, _, stderr := cli(t, "compact", link)
		if code == 0 || !strings.Contains(stderr, "symbolic link") {
			t.Errorf("compact of a symbolic link: exit %d (%s); want a refusal naming the link", code, strings.TrimSpace(stderr))
		}
		if after, err := os.Lstat(path); err != nil || !os.SameFile(before, after) {
			t.Errorf("compact of a link replaced the file it points to")
		}
	})
}

// TestCompactKeepsOwner checks that compact run by root (sudo snapshot
// compact) on a controller's database leaves the file to its owner: a copy
// that belonged to root would lock the controller out of its cache
// (CheckPath refuses a file of another user, and mode 0600 keeps it out
// anyway).
func TestCompactKeepsOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to chown")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "c.db")
	fill(t, "bolt://"+path, 50, "5")
	const uid, gid = 4242, 4242
	if err := os.Chown(path, uid, gid); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := cli(t, "compact", path); code != 0 {
		t.Fatalf("compact: exit %d: %s", code, stderr)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if st.Uid != uid || st.Gid != gid {
		t.Errorf("compact changed the owner of %s from %d:%d to %d:%d", path, uid, gid, st.Uid, st.Gid)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("compact changed the mode of %s to %v", path, fi.Mode().Perm())
	}
}

// TestStatusOfEmptyBadgerDirectory checks that a read-only command (status)
// on an existing empty directory says there is no database there, as drop
// does, instead of making a badger database of it and chmodding it.
func TestStatusOfEmptyBadgerDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "empty")
	if err := os.Mkdir(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := cli(t, "status", "badger://"+dir)
	ents, _ := os.ReadDir(dir)
	fi, _ := os.Stat(dir)
	if len(ents) > 0 || fi.Mode().Perm() != 0o750 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("status (exit %d, %q %q) wrote into %s: mode now %v, files %q", code, out, stderr, dir, fi.Mode().Perm(), names)
	}
	if code != exitError || !strings.Contains(stderr, "no database") {
		t.Errorf("status of an empty directory: exit %d (%s); want %d saying there is no database", code, stderr, exitError)
	}
}
