package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/snapshot"
)

// servedDatabase opens the store podsName of a bolt database with n Pods at
// resume point 77, and serves it as a running process would; the store
// stays open until the test ends. It returns the database URL, the store
// and the handler.
func servedDatabase(t *testing.T, n int) (string, store.Store, http.Handler) {
	t.Helper()
	src := "bolt://" + filepath.Join(t.TempDir(), "live.db")
	s, err := store.Open(context.Background(), src, podOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	list := make([]interface{}, n)
	for i := range list {
		list[i] = pod(i)
	}
	if err := s.Replace(list, "77"); err != nil {
		t.Fatal(err)
	}
	h, err := snapshot.NewHandler(src, nil)
	if err != nil {
		t.Fatal(err)
	}
	return src, s, h
}

func mount(h http.Handler) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("/debug/informerdb/", h)
	return mux
}

// TestRemoteSources checks save, status, ls and get of a handler's address,
// while the store it serves is open (the database is locked for other
// processes, and these commands read it anyway).
func TestRemoteSources(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	src, s, h := servedDatabase(t, 12)
	srv := httptest.NewServer(mount(h))
	defer srv.Close()
	addr := srv.URL + "/debug/informerdb/"

	file := filepath.Join(t.TempDir(), "live.idb")
	code, out, stderr := cli(t, "save", addr, file)
	if code != 0 || !strings.Contains(out, "12 objects") {
		t.Fatalf("save %s: exit %d: %s%s", addr, code, out, stderr)
	}
	if code, out, stderr := cli(t, "verify", file); code != 0 {
		t.Errorf("verify of the saved file: exit %d: %s%s", code, out, stderr)
	}
	fromFile := statusJSON(t, file).Store(podsName)
	// Any endpoint of the handler names it as well as its prefix.
	for _, target := range []string{addr, srv.URL + "/debug/informerdb", addr + "status", addr + "snapshot"} {
		live := statusJSON(t, target).Store(podsName)
		if live == nil || fromFile == nil || live.ContentHash != fromFile.ContentHash || live.Objects != 12 || live.Info.ResourceVersion != "77" {
			t.Errorf("status %s: %+v, want the saved file's %+v", target, live, fromFile)
		}
	}
	code, out, stderr = cli(t, "ls", addr)
	if code != 0 || !strings.Contains(out, "pod-003") || !strings.Contains(out, "pod-011") {
		t.Errorf("ls %s: exit %d: %s%s", addr, code, out, stderr)
	}
	code, out, stderr = cli(t, "get", addr, "ns-1/pod-004")
	if code != 0 || !strings.Contains(out, "pod-004") || strings.Contains(out, "pod-003") {
		t.Errorf("get %s: exit %d: %s%s", addr, code, out, stderr)
	}
	code, _, stderr = cli(t, "get", addr, "ns-1/none")
	if code != exitError || !strings.Contains(stderr, "not found") {
		t.Errorf("get of a missing key: exit %d: %s", code, stderr)
	}
	code, _, stderr = cli(t, "ls", "--store", "v1/none", addr)
	if code != exitError || !strings.Contains(stderr, `no store "v1/none"`) {
		t.Errorf("ls of a missing store: exit %d: %s", code, stderr)
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "*")); len(left) > 0 {
		t.Errorf("temporary files left behind: %q", left)
	}
	// A store that was closed has no database to serve.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = cli(t, "save", addr, filepath.Join(t.TempDir(), "closed.idb"))
	if code != exitError || !strings.Contains(stderr, "no store of this process has the file open") {
		t.Errorf("save of a closed database: exit %d: %s", code, stderr)
	}
	if code, _, stderr := cli(t, "status", addr); code != exitError || !strings.Contains(stderr, "503") {
		t.Errorf("status of a closed database: exit %d: %s", code, stderr)
	}
	// The database is not held by the handler: it reads offline again.
	if code, _, stderr := cli(t, "status", src); code != 0 {
		t.Errorf("status %s: exit %d: %s", src, code, stderr)
	}
}

// TestRemoteTLS checks https sources: the certificate is verified against
// the system's roots, unless --insecure-skip-tls-verify.
func TestRemoteTLS(t *testing.T) {
	_, _, h := servedDatabase(t, 3)
	srv := httptest.NewTLSServer(mount(h))
	defer srv.Close()
	addr := srv.URL + "/debug/informerdb/"
	code, _, stderr := cli(t, "status", addr)
	if code != exitError || !strings.Contains(stderr, "certificate") {
		t.Errorf("status of a self-signed https source: exit %d: %s; want the certificate refused", code, stderr)
	}
	code, out, stderr := cli(t, "status", "--insecure-skip-tls-verify", addr)
	if code != 0 || !strings.Contains(out, "3 objects") {
		t.Errorf("status --insecure-skip-tls-verify: exit %d: %s%s", code, out, stderr)
	}
	file := filepath.Join(t.TempDir(), "tls.idb")
	if code, _, stderr := cli(t, "save", "--insecure-skip-tls-verify", addr, file); code != 0 {
		t.Errorf("save --insecure-skip-tls-verify: exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(file); err != nil {
		t.Error(err)
	}
}

// TestRemoteNotAHandler checks that an address that serves something else
// is refused, and nothing is written.
func TestRemoteNotAHandler(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte("<html>metrics</html>"))
	}))
	defer srv.Close()
	file := filepath.Join(t.TempDir(), "x.idb")
	code, _, stderr := cli(t, "save", srv.URL+"/metrics", file)
	if code != exitError || !strings.Contains(stderr, "Content-Type") {
		t.Errorf("save from a non-handler: exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(file); err == nil {
		t.Errorf("%s was written", file)
	}
}

// TestRemoteToken checks --token-file: the token goes to the source as a
// bearer token, as an authenticating metrics server (controller-runtime's
// filters) wants it.
func TestRemoteToken(t *testing.T) {
	_, _, h := servedDatabase(t, 2)
	const token = "s3cret"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		mount(h).ServeHTTP(w, r)
	}))
	defer srv.Close()
	addr := srv.URL + "/debug/informerdb/"
	code, _, stderr := cli(t, "status", addr)
	if code != exitError || !strings.Contains(stderr, "401") {
		t.Errorf("status without a token: exit %d: %s; want the 401", code, stderr)
	}
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := cli(t, "status", "--token-file", file, addr)
	if code != 0 || !strings.Contains(out, "2 objects") {
		t.Errorf("status --token-file: exit %d: %s%s", code, out, stderr)
	}
	if code, _, stderr := cli(t, "status", "--token-file", filepath.Join(t.TempDir(), "none"), addr); code != exitUsage {
		t.Errorf("status --token-file of a missing file: exit %d: %s; want %d", code, stderr, exitUsage)
	}
}

// TestLockedHintsAtHandler checks that a read of a database another
// process holds, which fails with exit 5, points at the process's handler;
// a command that writes gets no such hint.
func TestLockedHintsAtHandler(t *testing.T) {
	path := filepath.Join(t.TempDir(), "held.db")
	fill(t, "bolt://"+path, 2, "3")
	holdLocked(t, path)
	db := "bolt://" + path + "?lock_timeout=100ms"
	for _, tc := range []struct {
		args []string
		hint bool
	}{
		{[]string{"status", db}, true},
		{[]string{"-q", "save", db, filepath.Join(t.TempDir(), "s.idb")}, true},
		{[]string{"ls", db}, true},
		{[]string{"drop", db, "--store", podsName}, false},
	} {
		code, _, stderr := cli(t, tc.args...)
		if code != exitLocked {
			t.Errorf("%v: exit %d (%s), want %d", tc.args, code, stderr, exitLocked)
		}
		if got := strings.Contains(stderr, "http://HOST:PORT/PREFIX/"); got != tc.hint {
			t.Errorf("%v: hint at the handler %v, want %v: %s", tc.args, got, tc.hint, stderr)
		}
	}
}
