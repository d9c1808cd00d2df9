package snapshot_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/snapshot"
)

// liveBackends are the backends a Handler serves, with whether their live
// view is one point of the whole database (memdb's stores are each read at
// a point of their own: see store.RawLiveViewer).
var liveBackends = []struct {
	name  string
	url   func(testing.TB) string
	atomo bool
}{
	{"bolt", boltURL, true},
	{"badger", badgerURL, true},
	{"memory", memoryURL, true},
	{"memdb", memdbURL, false},
}

const otherName = "v1/pods-other"

// openPair opens the stores podsName and otherName at rawURL; the test's
// cleanup closes them.
func openPair(t *testing.T, rawURL string) (a, b store.Store) {
	t.Helper()
	var out [2]store.Store
	for i, name := range []string{podsName, otherName} {
		o := podOptions(t)
		o.Name = name
		s, err := store.Open(context.Background(), rawURL, o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := s.Close(); err != nil && !errors.Is(err, store.ErrClosed) {
				t.Error(err)
			}
		})
		out[i] = s
	}
	return out[0], out[1]
}

// commit puts Pod k-1 into s with resume point k: after k commits, a store
// holds k objects at resume point k.
func commit(t testing.TB, s store.Store, k int) {
	t.Helper()
	err := s.Commit(context.Background(), store.Batch{
		Ops:             []store.Op{{Type: store.OpPut, Object: pod(k-1, 0)}},
		ResourceVersion: strconv.Itoa(k),
	})
	if err != nil {
		t.Error(err)
	}
}

// serve mounts a Handler of rawURL under /debug/informerdb/ on a test
// server, and returns the prefix's address.
func serve(t *testing.T, rawURL string, o *snapshot.HandlerOptions) string {
	t.Helper()
	h, err := snapshot.NewHandler(rawURL, o)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/debug/informerdb/", h)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL + "/debug/informerdb/"
}

// storesOf is what a live and an offline manifest of one database share.
func storesOf(m *snapshot.Manifest) []snapshot.StoreHeader { return m.Stores }

// TestHandlerServesLiveDatabase checks, on every backend, that a process
// with stores open serves their database: Fetch saves a snapshot whose
// stores are those the process committed (the same content hashes as an
// offline read of the database once closed), FetchStatus describes them the
// same way, and serving changes nothing.
func TestHandlerServesLiveDatabase(t *testing.T) {
	for _, bc := range liveBackends {
		t.Run(bc.name, func(t *testing.T) {
			ctx := t.Context()
			rawURL := bc.url(t)
			a, b := openPair(t, rawURL)
			for k := 1; k <= 30; k++ {
				commit(t, a, k)
				if k <= 20 {
					commit(t, b, k)
				}
			}
			addr := serve(t, rawURL, nil)
			file := snapPath(t)
			got, err := snapshot.Fetch(ctx, file, addr, nil)
			if err != nil {
				t.Fatalf("Fetch: %v", err)
			}
			status, err := snapshot.FetchStatus(ctx, addr, nil)
			if err != nil {
				t.Fatalf("FetchStatus: %v", err)
			}
			one, err := snapshot.Fetch(ctx, snapPath(t), addr+"snapshot", &snapshot.FetchOptions{Stores: []string{otherName}})
			if err != nil {
				t.Fatalf("Fetch of one store: %v", err)
			}
			for _, s := range []store.Store{a, b} {
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
			}
			offline, err := snapshot.Status(ctx, rawURL, nil)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(storesOf(offline), storesOf(got)); diff != "" {
				t.Errorf("fetched snapshot (-database +snapshot):\n%s", diff)
			}
			if diff := cmp.Diff(storesOf(offline), storesOf(status)); diff != "" {
				t.Errorf("fetched status (-database +status):\n%s", diff)
			}
			// Memory and memdb files are written when their stores
			// close: their size is 0 until then.
			onDisk := bc.name == "bolt" || bc.name == "badger"
			if (status.Size > 0) != onDisk || !strings.HasPrefix(status.Source, bc.name+"://") {
				t.Errorf("status source %q, size %d: want the database's URL and its size", status.Source, status.Size)
			}
			if len(one.Stores) != 1 || one.Stores[0].Info.Name != otherName || one.Stores[0].Objects != 20 {
				t.Errorf("store=%s fetched %+v, want that store's 20 objects alone", otherName, one.Stores)
			}
			if g := map[string]string{}; len(got.Stores) == 2 {
				for _, s := range got.Stores {
					g[s.Info.Name] = s.Info.ResourceVersion
				}
				if g[podsName] != "30" || g[otherName] != "20" {
					t.Errorf("resume points %v, want %s at 30 and %s at 20", g, podsName, otherName)
				}
			} else {
				t.Errorf("fetched %d stores, want 2", len(got.Stores))
			}
			// The file is a snapshot like any other: it restores.
			dst := bc.url(t)
			if _, err := snapshot.Restore(ctx, file, dst, nil); err != nil {
				t.Fatalf("restore of the fetched file: %v", err)
			}
		})
	}
}

// TestHandlerSnapshotIsOnePoint fetches snapshots while a writer commits to
// two stores in turn (store A's k-th commit, then B's), and checks each:
// every store holds exactly what its resume point says (k objects at k),
// and, where the backend's view is one point of the database, A is at most
// one commit ahead of B and never behind, which a store-by-store read could
// not promise. Between fetches it waits for the writer to commit more: the
// commits go on while the database is served.
func TestHandlerSnapshotIsOnePoint(t *testing.T) {
	for _, bc := range liveBackends {
		t.Run(bc.name, func(t *testing.T) {
			ctx := t.Context()
			rawURL := bc.url(t)
			a, b := openPair(t, rawURL)
			addr := serve(t, rawURL, nil)
			var done atomic.Int64
			stop := make(chan struct{})
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				for k := 1; ; k++ {
					select {
					case <-stop:
						return
					default:
					}
					commit(t, a, k)
					commit(t, b, k)
					done.Store(int64(k))
				}
			}()
			defer func() {
				close(stop)
				wg.Wait()
			}()
			last := -1
			for i := 0; i < 8; i++ {
				m, err := snapshot.Fetch(ctx, snapPath(t), addr, nil)
				if err != nil {
					t.Fatalf("fetch %d: %v", i, err)
				}
				rv := map[string]int{}
				for _, s := range m.Stores {
					n := 0
					if s.Info.ResourceVersion != "" {
						if n, err = strconv.Atoi(s.Info.ResourceVersion); err != nil {
							t.Fatal(err)
						}
					}
					if int64(n) != s.Objects {
						t.Errorf("fetch %d: store %s holds %d objects at resume point %q: not one commit", i, s.Info.Name, s.Objects, s.Info.ResourceVersion)
					}
					rv[s.Info.Name] = n
				}
				if bc.atomo {
					if d := rv[podsName] - rv[otherName]; d != 0 && d != 1 {
						t.Errorf("fetch %d: %s at %d, %s at %d: not one point of the database", i, podsName, rv[podsName], otherName, rv[otherName])
					}
				}
				if rv[podsName] <= last {
					t.Errorf("fetch %d: %s at %d, not past the previous fetch's %d", i, podsName, rv[podsName], last)
				}
				last = rv[podsName]
				waitUntil(t, func() bool { return done.Load() > int64(last) })
			}
		})
	}
}

// waitUntil polls cond, failing the test if it does not hold within a
// minute (a stuck writer).
func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within a minute")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestLiveViewDoesNotBlockCommits holds a live view open while the
// process commits, on every backend: the commits finish while it is open,
// and the view still reads the database as it was when it began.
func TestLiveViewDoesNotBlockCommits(t *testing.T) {
	for _, bc := range liveBackends {
		t.Run(bc.name, func(t *testing.T) {
			ctx := t.Context()
			rawURL := bc.url(t)
			a, _ := openPair(t, rawURL)
			for k := 1; k <= 5; k++ {
				commit(t, a, k)
			}
			err := store.LiveView(ctx, rawURL, func(v store.RawView) error {
				for k := 6; k <= 50; k++ {
					commit(t, a, k)
				}
				n := 0
				info, err := v.Export(ctx, podsName, func(store.Record) error { n++; return nil })
				if err != nil {
					return err
				}
				if n != 5 || info.ResourceVersion != "5" {
					t.Errorf("view opened at commit 5 reads %d objects at resume point %q after 45 more commits", n, info.ResourceVersion)
				}
				if _, err := v.Export(ctx, "none", func(store.Record) error { return nil }); !errors.Is(err, store.ErrNotFound) {
					t.Errorf("Export of a store the view lacks: %v, want store.ErrNotFound", err)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if got := a.ResourceVersion(); got != "50" {
				t.Errorf("resume point after the view: %q, want 50", got)
			}
		})
	}
}

// TestHandlerRequests checks the requests a Handler refuses, and what it
// answers when no store has its database open.
func TestHandlerRequests(t *testing.T) {
	rawURL := boltURL(t)
	a, b := openPair(t, rawURL)
	commit(t, a, 1)
	addr := serve(t, rawURL, nil)
	type answer struct {
		Code   int
		Reason string
		Allow  string
	}
	do := func(method, target string) (answer, http.Header, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), method, target, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		got := answer{Code: resp.StatusCode, Allow: resp.Header.Get("Allow")}
		if resp.StatusCode != http.StatusOK {
			var e struct{ Error, Reason string }
			if err := json.Unmarshal(body, &e); err != nil || e.Error == "" {
				t.Errorf("%s %s: %s with body %q: want a JSON error", method, target, resp.Status, body)
			}
			got.Reason = e.Reason
		}
		return got, resp.Header, string(body)
	}
	for _, tc := range []struct {
		method, path string
		want         answer
	}{
		{http.MethodPost, "snapshot", answer{Code: 405, Allow: "GET, HEAD"}},
		{http.MethodPut, "snapshot", answer{Code: 405, Allow: "GET, HEAD"}},
		{http.MethodDelete, "status", answer{Code: 405, Allow: "GET, HEAD"}},
		{http.MethodPatch, "", answer{Code: 405, Allow: "GET, HEAD"}},
		{http.MethodGet, "", answer{Code: 404, Reason: "notFound"}},
		{http.MethodGet, "objects", answer{Code: 404, Reason: "notFound"}},
		{http.MethodGet, "snapshot?store=none", answer{Code: 404, Reason: "notFound"}},
		{http.MethodGet, "snapshot?force=1", answer{Code: 400, Reason: "invalid"}},
		{http.MethodGet, "snapshot?store=%zz", answer{Code: 400, Reason: "invalid"}},
		{http.MethodGet, "status?store=" + url.QueryEscape(podsName), answer{Code: 400, Reason: "invalid"}},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			got, _, _ := do(tc.method, addr+tc.path)
			if got != tc.want {
				t.Errorf("%s %s: %+v, want %+v", tc.method, tc.path, got, tc.want)
			}
		})
	}
	t.Run("HEAD", func(t *testing.T) {
		for path, ctype := range map[string]string{"snapshot": snapshot.ContentType, "status": "application/json"} {
			got, hdr, body := do(http.MethodHead, addr+path)
			if got.Code != 200 || hdr.Get("Content-Type") != ctype || body != "" {
				t.Errorf("HEAD %s: %+v, Content-Type %q, body %q: want 200, %s, no body", path, got, hdr.Get("Content-Type"), body, ctype)
			}
		}
	})
	t.Run("database closed", func(t *testing.T) {
		for _, s := range []store.Store{a, b} {
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
		}
		for _, path := range []string{"snapshot", "status"} {
			if got, _, _ := do(http.MethodGet, addr+path); got != (answer{Code: 503, Reason: "closed"}) {
				t.Errorf("GET %s with the stores closed: %+v, want 503 closed", path, got)
			}
		}
		file := snapPath(t)
		if _, err := snapshot.Fetch(t.Context(), file, addr, nil); !errors.Is(err, store.ErrClosed) {
			t.Errorf("Fetch with the stores closed: %v, want store.ErrClosed", err)
		}
		if _, err := os.Stat(file); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("a failed Fetch left %s: %v", file, err)
		}
		if _, err := snapshot.FetchStatus(t.Context(), addr, nil); !errors.Is(err, store.ErrClosed) {
			t.Errorf("FetchStatus with the stores closed: %v, want store.ErrClosed", err)
		}
		// Closed, the database is not held: another open (this
		// process's, or another's) proceeds.
		s, err := store.Open(t.Context(), rawURL, podOptions(t))
		if err != nil {
			t.Fatalf("open after the handler's requests: %v", err)
		}
		if got := s.ResourceVersion(); got != "1" {
			t.Errorf("resume point %q, want 1: the handler changed the database", got)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	})
}

// TestNewHandlerRefuses checks the URLs and options NewHandler refuses.
func TestNewHandlerRefuses(t *testing.T) {
	for _, tc := range []struct {
		name   string
		rawURL string
		o      *snapshot.HandlerOptions
	}{
		{"unknown scheme", "nosuch:///x", nil},
		{"memory without a file", "memory://", nil},
		{"relative bolt path", "bolt://cache.db", nil},
		{"relative badger path", "badger://dir", nil},
		{"memdb directory", "memdb:///tmp/dir/", nil},
		{"negative timeout", boltURL(t), &snapshot.HandlerOptions{Timeout: -time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := snapshot.NewHandler(tc.rawURL, tc.o)
			if !errors.Is(err, store.ErrInvalid) || h != nil {
				t.Errorf("NewHandler(%q) = %v, %v; want an error wrapping store.ErrInvalid", tc.rawURL, h, err)
			}
		})
	}
	// Mounted before the informers open their stores: fine.
	if _, err := snapshot.NewHandler(boltURL(t), nil); err != nil {
		t.Errorf("NewHandler of a database not open yet: %v", err)
	}
}

// TestHandlerTimeout checks that HandlerOptions.Timeout ends a request.
func TestHandlerTimeout(t *testing.T) {
	rawURL := memoryURL(t)
	a, _ := openPair(t, rawURL)
	commit(t, a, 1)
	addr := serve(t, rawURL, &snapshot.HandlerOptions{Timeout: time.Nanosecond})
	if _, err := snapshot.Fetch(t.Context(), snapPath(t), addr, nil); err == nil || !strings.Contains(err.Error(), "deadline") {
		t.Errorf("Fetch from a handler with a 1ns timeout: %v, want the deadline's error", err)
	}
}

// TestFetchDetectsCutStreams serves a valid snapshot cut at several
// offsets, as a dropped connection or a failed server leaves it, with and
// without the handler's error trailer: Fetch refuses each, leaves no file,
// and keeps the file that was at the path.
func TestFetchDetectsCutStreams(t *testing.T) {
	src := boltURL(t)
	fill(t, src, 50, 200, "7")
	whole := snapPath(t)
	if _, err := snapshot.SaveURL(t.Context(), whole, src, nil); err != nil {
		t.Fatal(err)
	}
	data := readFile(t, whole)
	for _, cut := range []int{0, 10, len(data) / 2, len(data) - 33, len(data) - 1} {
		for _, trailer := range []bool{false, true} {
			t.Run(fmt.Sprintf("cut at %d trailer %v", cut, trailer), func(t *testing.T) {
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Content-Type", snapshot.ContentType)
					if trailer {
						w.Header().Set("Trailer", snapshot.ErrorTrailer)
					}
					_, _ = w.Write(data[:cut])
					if trailer {
						w.Header().Set(snapshot.ErrorTrailer, "store v1/pods: disk on fire")
					}
				}))
				defer srv.Close()
				dir := t.TempDir()
				path := filepath.Join(dir, "snap.idb")
				if err := os.WriteFile(path, []byte("previous"), 0o600); err != nil {
					t.Fatal(err)
				}
				_, err := snapshot.Fetch(t.Context(), path, srv.URL, nil)
				switch {
				case err == nil:
					t.Fatal("Fetch of a cut stream succeeded")
				case trailer && !strings.Contains(err.Error(), "disk on fire"):
					t.Errorf("Fetch: %v, want the trailer's message", err)
				case !trailer && !errors.Is(err, store.ErrCorrupt):
					t.Errorf("Fetch: %v, want store.ErrCorrupt", err)
				}
				if got := string(readFile(t, path)); got != "previous" {
					t.Errorf("the file at the path is now %q", got)
				}
				if left, _ := filepath.Glob(path + ".part*"); len(left) > 0 {
					t.Errorf("temporary files left behind: %q", left)
				}
			})
		}
	}
}

// failingDriver serves a live view whose export of store "s" hands out
// 3 MiB of records (more than the stream's buffer) and then fails.
type failingDriver struct{ store.RawDriver }

func (failingDriver) LiveView(_ context.Context, _ *url.URL, fn func(store.RawView) error) error {
	return fn(failingView{})
}

type failingView struct{}

func (failingView) ListStores(context.Context) ([]store.StoreEntry, error) {
	return []store.StoreEntry{{Info: store.Info{Backend: "failing", Name: "s", Codec: "json"}}}, nil
}

func (failingView) Export(_ context.Context, name string, fn func(store.Record) error) (store.Info, error) {
	data := []byte(`"` + strings.Repeat("x", 1<<16) + `"`)
	for i := 0; i < 48; i++ {
		if err := fn(store.Record{Key: fmt.Sprintf("k%02d", i), Data: data}); err != nil {
			return store.Info{}, err
		}
	}
	return store.Info{}, fmt.Errorf("export %s: page 7: %w", name, store.ErrCorrupt)
}

// TestHandlerFailsMidStream checks that a snapshot that fails after its
// stream started ends without the format's checksum and with the cause in
// the error trailer, which Fetch reports.
func TestHandlerFailsMidStream(t *testing.T) {
	addr := serve(t, "failing:///db", nil)
	resp, err := http.Get(addr + "snapshot")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || len(body) < 1<<20 {
		t.Fatalf("%s with %d bytes: want 200 and the stream's first MiBs", resp.Status, len(body))
	}
	if got := resp.Trailer.Get(snapshot.ErrorTrailer); !strings.Contains(got, "page 7") {
		t.Errorf("trailer %s: %q, want the export's error", snapshot.ErrorTrailer, got)
	}
	if _, err := snapshot.ReadFrom(t.Context(), "stream", strings.NewReader(string(body)), int64(len(body)), nil); !errors.Is(err, store.ErrCorrupt) {
		t.Errorf("the cut stream reads as %v, want store.ErrCorrupt", err)
	}
	if _, err := snapshot.Fetch(t.Context(), snapPath(t), addr, nil); err == nil || !strings.Contains(err.Error(), "page 7") {
		t.Errorf("Fetch: %v, want the server's error", err)
	}
}

// TestFetchRefusesAddresses checks the addresses Fetch and FetchStatus
// refuse before sending anything.
func TestFetchRefusesAddresses(t *testing.T) {
	for _, addr := range []string{"ftp://host/x", "http://", "https:///debug", "bolt:///x.db", "%zz"} {
		if _, err := snapshot.Fetch(t.Context(), snapPath(t), addr, nil); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("Fetch(%q): %v, want store.ErrInvalid", addr, err)
		}
		if _, err := snapshot.FetchStatus(t.Context(), addr, nil); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("FetchStatus(%q): %v, want store.ErrInvalid", addr, err)
		}
	}
}
