package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/snapshot"
)

// TestBinary runs the built command, as users do: the command is built
// once into the test's temporary directory, and each subtest executes it.
func TestBinary(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "snapshot")
	if runtime.GOOS == "windows" {
		bin += ".exe"
	}
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	t.Run("PathsByContent", func(t *testing.T) { testPathsByContent(t, bin) })
	t.Run("PathsRefused", func(t *testing.T) { testPathsRefused(t, bin) })
	t.Run("ObjectOutputs", func(t *testing.T) { testObjectOutputs(t, bin) })
	t.Run("ObjectFlagErrors", func(t *testing.T) { testObjectFlagErrors(t, bin) })
	t.Run("NoArguments", func(t *testing.T) { testNoArguments(t, bin) })
	t.Run("LockedNamesTimeout", func(t *testing.T) { testLockedNamesTimeout(t, bin) })
}

// runBin runs the built command and returns its exit code and outputs.
func runBin(t *testing.T, bin string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, out.String(), errOut.String()
	case errors.As(err, &ee) && ee.Exited():
		return ee.ExitCode(), out.String(), errOut.String()
	}
	t.Fatalf("%v: %v (%s)", args, err, errOut.String())
	return 0, "", ""
}

// testPathsByContent checks that a path without a scheme is recognised by
// what it holds: a bolt file (status said "not an informerdb snapshot
// (magic ...): data is corrupt", exit 3), a badger directory, a memory
// snapshot file and a portable snapshot file, each read as its URL would
// be, relative paths too.
func testPathsByContent(t *testing.T, bin string) {
	dir := t.TempDir()
	boltPath := filepath.Join(dir, "informers.db")
	badgerPath := filepath.Join(dir, "badger-cache")
	memPath := filepath.Join(dir, "cache.snap")
	filePath := filepath.Join(dir, "snap.idb")
	fill(t, "bolt://"+boltPath, 4, "40")
	fill(t, "badger://"+badgerPath, 5, "50")
	fill(t, "memory://"+memPath, 6, "60")
	if code, _, stderr := runBin(t, bin, "-q", "save", boltPath, filePath); code != exitOK {
		t.Fatalf("save %s (a bolt file given as a path): exit %d: %s", boltPath, code, stderr)
	}
	for _, tc := range []struct {
		path, source string
		objects      int64
	}{
		{boltPath, "bolt://" + boltPath, 4},
		{badgerPath, "badger://" + badgerPath, 5},
		{memPath, "memory://" + memPath, 6},
		{filePath, filePath, 4},
	} {
		t.Run(filepath.Base(tc.path), func(t *testing.T) {
			code, out, stderr := runBin(t, bin, "-q", "status", "-w", "json", tc.path)
			if code != exitOK {
				t.Fatalf("status %s: exit %d: %s", tc.path, code, stderr)
			}
			var m snapshot.Manifest
			if err := json.Unmarshal([]byte(out), &m); err != nil {
				t.Fatalf("status -w json: %v\n%s", err, out)
			}
			if m.Source != tc.source {
				t.Errorf("status %s read %s; want %s", tc.path, m.Source, tc.source)
			}
			if s := m.Store(podsName); s == nil || s.Objects != tc.objects {
				t.Errorf("status %s: store %s is %+v; want %d objects", tc.path, podsName, s, tc.objects)
			}
			code, out, stderr = runBin(t, bin, "ls", tc.path)
			if code != exitOK || strings.Count(out, "\n") != int(tc.objects) {
				t.Errorf("ls %s: exit %d, %q (%s); want %d names", tc.path, code, out, stderr, tc.objects)
			}
		})
	}
	// A relative path is made absolute, as for a URL.
	t.Chdir(dir)
	code, out, stderr := runBin(t, bin, "-q", "status", "informers.db")
	if code != exitOK || !strings.Contains(out, "bolt://"+boltPath) {
		t.Errorf("status informers.db in its directory: exit %d: %s%s", code, out, stderr)
	}
	// A database a command writes, given as a path.
	code, out, stderr = runBin(t, bin, "-q", "restore", "--force", filePath, badgerPath)
	if code != exitOK || !strings.Contains(out, "badger://"+badgerPath) {
		t.Errorf("restore into %s: exit %d: %s%s", badgerPath, code, out, stderr)
	}
}

// testPathsRefused checks that an argument that is no snapshot file and no
// database (an empty or foreign file, a directory without badger's files,
// an empty argument, file://) is refused as usage (exit 2) with what to
// type instead, never called corrupt; a missing path is an error naming
// it, and a new database to restore into wants its URL.
func testPathsRefused(t *testing.T, bin string) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.db")
	text := filepath.Join(dir, "notes.txt")
	emptyDir := filepath.Join(dir, "emptydir")
	missing := filepath.Join(dir, "missing.db")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(text, []byte("these are notes, not a database of any kind\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(emptyDir, 0o700); err != nil {
		t.Fatal(err)
	}
	_, file := savedFile(t, 2)
	const schemes = "bolt:///abs/file.db, badger:///abs/dir, memory:///abs/file.snap, memdb:///abs/file.snap"
	for _, tc := range []struct {
		args []string
		code int
		says []string
	}{
		{[]string{"status", empty}, exitUsage, []string{"status: " + empty, "is not a snapshot file, a bolt file or a badger directory", schemes}},
		{[]string{"ls", text}, exitUsage, []string{"ls: " + text, schemes}},
		{[]string{"verify", emptyDir}, exitUsage, []string{"verify: " + emptyDir, schemes}},
		{[]string{"status", ""}, exitUsage, []string{"status: an empty argument", schemes}},
		{[]string{"status", "file://" + file}, exitUsage, []string{`unknown scheme "file"`, schemes}},
		{[]string{"get", "file://" + file, "ns-0/pod-000"}, exitUsage, []string{`unknown scheme "file"`, schemes}},
		{[]string{"status", "bolt://" + dir + "/%zz.db"}, exitUsage, []string{"status: parse", "invalid URL escape", schemes}},
		{[]string{"status", missing}, exitError, []string{missing, "no such file"}},
		{[]string{"restore", file, missing}, exitUsage, []string{"does not exist", "bolt://" + missing, "badger://" + missing}},
		{[]string{"restore", file, file}, exitUsage, []string{"is a snapshot file, not a database"}},
		{[]string{"save", file, filepath.Join(dir, "copy.idb")}, exitUsage, []string{"is a snapshot file already"}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, out, stderr := runBin(t, bin, tc.args...)
			if code != tc.code {
				t.Errorf("exit %d (%s%s), want %d", code, out, stderr, tc.code)
			}
			for _, s := range tc.says {
				if !strings.Contains(stderr, s) {
					t.Errorf("stderr %q does not say %q", stderr, s)
				}
			}
			if strings.Contains(stderr, "corrupt") || strings.Contains(stderr, "forgotten import") {
				t.Errorf("stderr %q calls the argument corrupt, or a missing import", stderr)
			}
		})
	}
	if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused restore made %s: %v", missing, err)
	}
}

// objectsDB is a bolt database of three stores: Pods with labels and
// creation times, Deployments (a group other than the core one) and
// Namespaces (cluster-scoped).
func objectsDB(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "objects.db")
	created := metav1.NewTime(time.Now().Add(-400 * 24 * time.Hour))
	put := func(name string, sample any, objs ...any) {
		c, err := indexer.NewCodec(sample)
		if err != nil {
			t.Fatal(err)
		}
		s, err := store.Open(t.Context(), "bolt://"+path, &store.Options{Name: name, Codec: c, Durability: store.DurabilityNoSync})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Replace(objs, "9"); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	pod := func(ns, name, app, rv string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: rv,
			Labels: map[string]string{"app": app}, CreationTimestamp: created}}
	}
	put("core/v1/pods", &corev1.Pod{},
		pod("default", "web-1", "web", "11"), pod("default", "db-1", "db", "12"), pod("shop", "web-2", "web", "13"))
	put("apps/v1/deployments", &appsv1.Deployment{},
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", ResourceVersion: "21", Labels: map[string]string{"app": "web"}}})
	put("core/v1/namespaces", &corev1.Namespace{},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop", ResourceVersion: "31"}})
	return path
}

// testObjectOutputs checks ls's and get's output formats, kubectl's:
// names by default for ls (kind[.group]/key), a table with -o wide, whole
// objects with -o yaml and -o json; and ls's -l and -n filters.
func testObjectOutputs(t *testing.T, bin string) {
	path := objectsDB(t)
	lines := func(s string) []string { return strings.Split(strings.TrimSuffix(s, "\n"), "\n") }
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"ls", path}, []string{
			"deployment.apps/shop/web",
			"namespace/shop",
			"pod/default/db-1", "pod/default/web-1", "pod/shop/web-2",
		}},
		{[]string{"ls", path, "-o", "name", "--store", "core/v1/pods"}, []string{"pod/default/db-1", "pod/default/web-1", "pod/shop/web-2"}},
		{[]string{"ls", path, "-l", "app=web"}, []string{"deployment.apps/shop/web", "pod/default/web-1", "pod/shop/web-2"}},
		{[]string{"ls", path, "-l", "app in (web,db),app!=web"}, []string{"pod/default/db-1"}},
		{[]string{"ls", path, "-n", "shop"}, []string{"deployment.apps/shop/web", "pod/shop/web-2"}},
		{[]string{"ls", path, "-n", "shop", "-l", "app=web", "--store", "core/v1/pods"}, []string{"pod/shop/web-2"}},
		{[]string{"get", path, "default/web-1", "--store", "core/v1/pods", "-o", "name"}, []string{"pod/default/web-1"}},
		// What ls prints is what get takes.
		{[]string{"get", path, "pod/default/web-1", "-o", "name"}, []string{"pod/default/web-1"}},
		{[]string{"get", path, "deployment.apps/shop/web", "-o", "name"}, []string{"deployment.apps/shop/web"}},
		{[]string{"get", path, "namespace/shop", "-o", "name", "--store", "core/v1/namespaces"}, []string{"namespace/shop"}},
		{[]string{"ls", path, "-o", "wide", "--store", "core/v1/pods"}, []string{
			"NAMESPACE   NAME        RESOURCE VERSION   AGE    STORE",
			"default     pod/db-1    12                 400d   core/v1/pods",
			"default     pod/web-1   11                 400d   core/v1/pods",
			"shop        pod/web-2   13                 400d   core/v1/pods",
		}},
		{[]string{"get", path, "shop", "--store", "core/v1/namespaces", "-o", "wide"}, []string{
			"NAMESPACE   NAME             RESOURCE VERSION   AGE         STORE",
			"-           namespace/shop   31                 <unknown>   core/v1/namespaces",
		}},
	} {
		t.Run(strings.Join(tc.args[2:], " "), func(t *testing.T) {
			code, out, stderr := runBin(t, bin, tc.args...)
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			if diff := cmp.Diff(tc.want, lines(out)); diff != "" {
				t.Errorf("output (-want +got):\n%s", diff)
			}
		})
	}

	// A name of another kind is not the object.
	if code, out, stderr := runBin(t, bin, "get", path, "service/default/web-1"); code == exitOK || out != "" || !strings.Contains(stderr, "not found") {
		t.Errorf("get service/default/web-1: exit %d, %q, %q; want a not-found error", code, out, stderr)
	}

	// Nothing matched: no output, and a note on stderr.
	code, out, stderr := runBin(t, bin, "ls", path, "-l", "app=none")
	if code != exitOK || out != "" || !strings.Contains(stderr, "No objects found") {
		t.Errorf("ls -l app=none: exit %d, %q, %q; want nothing on stdout and a note", code, out, stderr)
	}

	// Whole objects, selected as the names are.
	code, out, stderr = runBin(t, bin, "ls", path, "-o", "json", "-l", "app=web", "--store", "core/v1/pods")
	if code != exitOK {
		t.Fatalf("ls -o json: exit %d: %s", code, stderr)
	}
	var names []string
	dec := json.NewDecoder(strings.NewReader(out))
	for dec.More() {
		var p corev1.Pod
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("ls -o json: %v\n%s", err, out)
		}
		if gvk := p.GroupVersionKind(); gvk != (schema.GroupVersionKind{Version: "v1", Kind: "Pod"}) {
			t.Errorf("ls -o json: %s is a %v", p.Name, gvk)
		}
		names = append(names, p.Namespace+"/"+p.Name)
	}
	if diff := cmp.Diff([]string{"default/web-1", "shop/web-2"}, names); diff != "" {
		t.Errorf("ls -o json -l app=web (-want +got):\n%s", diff)
	}
	code, out, stderr = runBin(t, bin, "get", path, "shop/web", "--store", "apps/v1/deployments")
	if code != exitOK || !strings.Contains(out, "kind: Deployment\n") || !strings.Contains(out, "  name: web\n") {
		t.Errorf("get (YAML by default): exit %d: %s%s", code, out, stderr)
	}
}

// testObjectFlagErrors checks that bad values of -o, -l and -n are usage
// errors (exit 2) naming the flag and what is wrong.
func testObjectFlagErrors(t *testing.T, bin string) {
	path := objectsDB(t)
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"ls", path, "-o", "table"}, `-o "table": want one of name, wide, yaml, json`},
		{[]string{"get", path, "shop", "-o", "xml", "--store", "core/v1/namespaces"}, `-o "xml": want one of name, wide, yaml, json`},
		{[]string{"ls", path, "-l", "app in (web"}, `-l "app in (web"`},
		{[]string{"ls", path, "-l", "=web"}, `-l "=web"`},
		{[]string{"ls", path, "-n", "Shop_1"}, `-n "Shop_1": not a namespace name`},
		{[]string{"get", path, "shop", "-l", "app=web"}, "unknown shorthand flag: 'l'"},
	} {
		t.Run(strings.Join(tc.args[2:], " "), func(t *testing.T) {
			code, out, stderr := runBin(t, bin, tc.args...)
			if code != exitUsage || !strings.Contains(stderr, tc.says) || out != "" {
				t.Errorf("exit %d, stdout %q, stderr %q; want %d saying %q", code, out, stderr, exitUsage, tc.says)
			}
		})
	}
}

// testNoArguments checks that the command without arguments prints its
// usage on stderr and exits 2 (it exited 0).
func testNoArguments(t *testing.T, bin string) {
	code, out, stderr := runBin(t, bin)
	if code != exitUsage || out != "" || !strings.Contains(stderr, "Usage:") || !strings.Contains(stderr, "Available Commands:") {
		t.Errorf("no arguments: exit %d, stdout %q, stderr %q; want %d and the usage on stderr", code, out, stderr, exitUsage)
	}
}

// testLockedNamesTimeout checks that a database another process holds is
// exit 5 with an error naming how long the command waited and how to wait
// longer (it ended in a dangling "lock_timeout=)").
func testLockedNamesTimeout(t *testing.T, bin string) {
	path := filepath.Join(t.TempDir(), "held.db")
	fill(t, "bolt://"+path, 2, "3")
	holdLocked(t, path)
	code, _, stderr := runBin(t, bin, "-q", "status", fmt.Sprintf("bolt://%s?lock_timeout=150ms", path))
	if code != exitLocked {
		t.Errorf("status of a held file: exit %d (%s), want %d", code, stderr, exitLocked)
	}
	for _, want := range []string{path, "database is locked by another process (waited 150ms; ", "lock_timeout=<duration>"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr %q does not say %q", stderr, want)
		}
	}
	if strings.Contains(stderr, "lock_timeout=)") {
		t.Errorf("stderr %q ends its advice in a dangling lock_timeout=", stderr)
	}
}
