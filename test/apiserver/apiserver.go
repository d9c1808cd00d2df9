// Package apiserver starts a real kube-apiserver backed by a real etcd on
// loopback, for tests that must see what an informer costs the server and how
// the server answers a resumed watch (410 Expired after an API server restart
// or an etcd compaction). Fake clients cannot show either.
//
// The binaries are built from Go modules by `make k8s-bin` (module test/k8s)
// into test/bin, or taken from the directory named by $INFORMERDB_K8S_BIN.
// Everything listens on 127.0.0.1 only, and every process is killed, with its
// process group, by t.Cleanup. Programs that are not tests (cmd/demo,
// test/bench) use Launch and Scrape, which return errors, and call Stop.
package apiserver

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// EnvBinDir names the environment variable that overrides where the etcd and
// kube-apiserver binaries are looked up.
const EnvBinDir = "INFORMERDB_K8S_BIN"

// rootModule is the module path of the repository root; the binary directory
// is found relative to the go.mod that declares it.
const rootModule = "github.com/informerdb/informerdb"

const (
	etcdBinary      = "etcd"
	apiserverBinary = "kube-apiserver"

	// readyTimeout bounds how long etcd or kube-apiserver may take to become
	// ready. A cold kube-apiserver on two busy shared cores needs tens of
	// seconds; this is a hang detector, not a performance assertion.
	readyTimeout = 3 * time.Minute

	// startAttempts: free ports are picked by binding :0 and closing, so a
	// parallel test can grab the same port before the process binds it. Such
	// a start is retried on fresh ports.
	startAttempts = 3

	// logTail is how much of each process log is shown when a test fails.
	logTail = 8 << 10
)

// Options configures Start and Launch. The zero value is the default server.
type Options struct {
	// DisableWatchCache starts kube-apiserver with --watch-cache=false, so
	// that watches are served by etcd and an etcd compaction alone makes a
	// watch from an older resourceVersion fail with 410 Expired. By default
	// the watch cache is on, as in production.
	DisableWatchCache bool

	// ExtraAPIServerFlags are appended to the kube-apiserver command line
	// after the harness's own flags, so they override them (for example
	// "--etcd-compaction-interval=5m").
	ExtraAPIServerFlags []string

	// Dir holds etcd's data, the keys and the process logs (*.log). Start
	// sets it to t.TempDir(). For Launch, empty means a new temporary
	// directory that Stop removes; a directory given here is left in place,
	// logs included.
	Dir string
}

// Server is a running etcd + kube-apiserver pair. Its methods are safe for
// concurrent use, except that RestartAPIServer must not race with requests
// the test expects to succeed.
type Server struct {
	opts    Options
	binDir  string
	dir     string // Options.Dir or a temporary directory: data, keys, logs
	ownDir  bool   // dir was created by Launch; Stop removes it
	token   string
	etcdURL string // http://127.0.0.1:port, also the etcd v3 JSON gateway
	port    int    // kube-apiserver secure port, kept across restarts
	config  *rest.Config
	client  kubernetes.Interface
	http    *http.Client // authenticated, for /readyz and /metrics

	mu        sync.Mutex
	etcd      *process
	apiserver *process
	restarts  int
	etcdRuns  int // etcd starts (attempts included): each has its own data directory and log
	stopped   bool
}

// BinaryDir returns the directory holding the etcd and kube-apiserver
// binaries, or an error that says how to build them.
func BinaryDir() (string, error) {
	dir := os.Getenv(EnvBinDir)
	if dir == "" {
		root, err := moduleRoot()
		if err != nil {
			return "", fmt.Errorf("apiserver: find binaries: %w (set %s to the directory holding %s and %s)", err, EnvBinDir, etcdBinary, apiserverBinary)
		}
		dir = filepath.Join(root, "test", "bin")
	}
	for _, name := range []string{etcdBinary, apiserverBinary} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			return "", fmt.Errorf("apiserver: find binaries: %w; build them with `%s`", err, BuildCommand())
		}
	}
	return dir, nil
}

// BuildCommand is the command that builds the binaries Start needs.
func BuildCommand() string {
	if root, err := moduleRoot(); err == nil {
		return fmt.Sprintf("make -C %s k8s-bin", root)
	}
	return "make k8s-bin (in the informerdb repository root)"
}

// moduleRoot walks up from the working directory (a test runs in its package
// directory) to the go.mod of the root module. Nested modules such as
// test/k8s are skipped because their module path differs.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && modulePath(data) == rootModule {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod of module %s above the working directory", rootModule)
		}
		dir = parent
	}
}

func modulePath(gomod []byte) string {
	for _, line := range strings.Split(string(gomod), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return ""
}

// Start starts etcd and kube-apiserver on loopback and waits until the API
// server reports /readyz. Missing binaries fail the test with the command
// that builds them. Under `go test -short` it skips: the short loop runs
// without a real API server (see the Makefile's test-short). The data, keys
// and logs live in t.TempDir(), the processes are killed by t.Cleanup, and
// the process logs are shown when the test fails.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	if testing.Short() {
		t.Skip("apiserver: real API server not started under -short")
	}
	// TempDir before Cleanup: cleanups run last-in first-out, so the
	// processes are killed before their data directory is removed.
	opts.Dir = t.TempDir()
	began := time.Now()
	s, err := launch(t.Context(), opts)
	if s != nil {
		t.Cleanup(func() {
			if t.Failed() {
				s.dumpLogs(t)
			}
			s.Stop()
		})
	}
	if err != nil {
		if s != nil {
			s.dumpLogs(t)
		}
		t.Fatalf("%v", err)
	}
	t.Logf("apiserver: kube-apiserver %s (etcd %s) ready in %v", s.URL(), s.etcdURL, time.Since(began).Round(time.Millisecond))
	return s
}

// Launch is Start for programs that are not tests (the demo, the benchmark
// harness): it starts etcd and kube-apiserver on loopback, waits until the
// API server reports /readyz and returns errors instead of failing a test.
// ctx bounds the start only; the processes run until Stop, which the caller
// must call (it also removes the directory Launch created when opts.Dir is
// empty). On error, nothing is left running.
func Launch(ctx context.Context, opts Options) (*Server, error) {
	s, err := launch(ctx, opts)
	if err != nil {
		if s != nil {
			s.Stop()
		}
		return nil, err
	}
	return s, nil
}

// launch starts the pair. It returns the Server even on error (nil only if
// not even the directory exists), so that Start can show the logs of a
// failed start; the caller stops it.
func launch(ctx context.Context, opts Options) (*Server, error) {
	binDir, err := BinaryDir()
	if err != nil {
		return nil, err
	}
	s := &Server{opts: opts, binDir: binDir, dir: opts.Dir}
	if s.dir == "" {
		dir, err := os.MkdirTemp("", "informerdb-apiserver-")
		if err != nil {
			return nil, fmt.Errorf("apiserver: data directory: %w", err)
		}
		s.dir, s.ownDir = dir, true
	}
	if err := s.prepare(); err != nil {
		return s, err
	}
	if err := s.startEtcd(ctx); err != nil {
		return s, err
	}
	if err := s.startAPIServer(ctx, true); err != nil {
		return s, err
	}
	return s, nil
}

// prepare writes the credentials kube-apiserver reads at start: a token file
// with one admin in system:masters, and an RSA key for service account
// tokens (the API server refuses to start without one).
func (s *Server) prepare() error {
	buf := make([]byte, 24)
	if _, err := rand.Read(buf); err != nil {
		return fmt.Errorf("apiserver: generate token: %w", err)
	}
	s.token = hex.EncodeToString(buf)
	tokens := fmt.Sprintf("%s,admin,admin-uid,system:masters\n", s.token)
	if err := os.WriteFile(filepath.Join(s.dir, "tokens.csv"), []byte(tokens), 0o600); err != nil {
		return fmt.Errorf("apiserver: write token file: %w", err)
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return fmt.Errorf("apiserver: generate service account key: %w", err)
	}
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	if err := os.WriteFile(filepath.Join(s.dir, "sa.key"), keyPEM, 0o600); err != nil {
		return fmt.Errorf("apiserver: write service account key: %w", err)
	}
	return nil
}

func (s *Server) startEtcd(ctx context.Context) error {
	var last error
	for range startAttempts {
		ports, err := freePorts(2)
		if err != nil {
			return fmt.Errorf("apiserver: start etcd: %w", err)
		}
		clientURL := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
		peerURL := fmt.Sprintf("http://127.0.0.1:%d", ports[1])
		// A fresh data directory per attempt: a failed attempt may have
		// initialised one with the other peer URL.
		s.mu.Lock()
		n := s.etcdRuns
		s.etcdRuns++
		s.mu.Unlock()
		dataDir := filepath.Join(s.dir, fmt.Sprintf("etcd-data-%d", n))
		args := []string{
			"--name=default",
			"--data-dir=" + dataDir,
			"--listen-client-urls=" + clientURL,
			"--advertise-client-urls=" + clientURL,
			"--listen-peer-urls=" + peerURL,
			"--initial-advertise-peer-urls=" + peerURL,
			"--initial-cluster=default=" + peerURL,
			// etcd lives exactly as long as the test and is never restarted,
			// so its durability buys nothing; fsync on shared disks only
			// makes tests that write many objects slow.
			"--unsafe-no-fsync=true",
			"--log-level=warn",
		}
		p, err := startProcess(filepath.Join(s.binDir, etcdBinary), args, filepath.Join(s.dir, fmt.Sprintf("etcd-%d.log", n)))
		if err != nil {
			return fmt.Errorf("apiserver: start etcd: %w", err)
		}
		s.mu.Lock()
		s.etcd = p
		s.etcdURL = clientURL
		s.mu.Unlock()
		err = waitReady(ctx, p, func(ctx context.Context) error {
			_, err := s.etcdRevision(ctx)
			return err
		})
		if err == nil {
			return nil
		}
		p.kill()
		last = fmt.Errorf("apiserver: start etcd: %w", err)
		if !p.portInUse() {
			return last
		}
	}
	return last
}

// startAPIServer starts kube-apiserver. A first start picks a free port; a
// restart reuses the port so that clients built from Config keep working.
func (s *Server) startAPIServer(ctx context.Context, first bool) error {
	var last error
	for range startAttempts {
		if first {
			ports, err := freePorts(1)
			if err != nil {
				return fmt.Errorf("apiserver: start kube-apiserver: %w", err)
			}
			s.setPort(ports[0])
		}
		s.mu.Lock()
		n := s.restarts
		s.restarts++
		s.mu.Unlock()
		args := []string{
			"--etcd-servers=" + s.etcdURL,
			"--bind-address=127.0.0.1",
			"--secure-port=" + strconv.Itoa(s.port),
			// Self-signed serving certificate, generated on first start and
			// reused on restarts; clients skip verification on loopback.
			"--cert-dir=" + filepath.Join(s.dir, "certs"),
			"--token-auth-file=" + filepath.Join(s.dir, "tokens.csv"),
			"--authorization-mode=AlwaysAllow",
			"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
			"--service-account-key-file=" + filepath.Join(s.dir, "sa.key"),
			"--service-account-signing-key-file=" + filepath.Join(s.dir, "sa.key"),
			"--service-cluster-ip-range=10.0.0.0/24",
			// Tests decide when etcd compacts (CompactEtcd); periodic
			// compaction would make 410s appear at random.
			"--etcd-compaction-interval=0",
			"--watch-cache=" + strconv.FormatBool(!s.opts.DisableWatchCache),
		}
		args = append(args, s.opts.ExtraAPIServerFlags...)
		p, err := startProcess(filepath.Join(s.binDir, apiserverBinary), args, filepath.Join(s.dir, fmt.Sprintf("kube-apiserver-%d.log", n)))
		if err != nil {
			return fmt.Errorf("apiserver: start kube-apiserver: %w", err)
		}
		s.mu.Lock()
		s.apiserver = p
		s.mu.Unlock()
		err = waitReady(ctx, p, s.ready)
		if err == nil {
			return nil
		}
		p.kill()
		last = fmt.Errorf("apiserver: start kube-apiserver: %w", err)
		// A restart must keep its port, so only a first start can move.
		if !first || !p.portInUse() {
			return last
		}
	}
	return last
}

func (s *Server) setPort(port int) {
	s.port = port
	s.config = &rest.Config{
		Host:        fmt.Sprintf("https://127.0.0.1:%d", port),
		BearerToken: s.token,
		// The serving certificate is self-signed by the API server itself;
		// the connection never leaves loopback.
		TLSClientConfig: rest.TLSClientConfig{Insecure: true},
		// No client-side throttling: tests create thousands of objects, and
		// the admin in system:masters is exempt from server-side priority
		// and fairness anyway.
		QPS:       -1,
		UserAgent: "informerdb-test",
	}
	client, err := kubernetes.NewForConfig(s.config)
	if err != nil {
		// NewForConfig fails only on invalid configs; this one is constant.
		panic(fmt.Sprintf("apiserver: new client: %v", err))
	}
	s.client = client
	transport, err := rest.TransportFor(s.config)
	if err != nil {
		panic(fmt.Sprintf("apiserver: new transport: %v", err))
	}
	s.http = &http.Client{Transport: transport, Timeout: 30 * time.Second}
}

// ready reports whether kube-apiserver answers /readyz with 200: storage is
// reachable and the post-start hooks (bootstrap RBAC, system namespaces,
// priority and fairness configuration) have finished.
func (s *Server) ready(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL()+"/readyz", nil)
	if err != nil {
		return err
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("readyz: %s: %s", resp.Status, bytes.TrimSpace(body))
	}
	return nil
}

// waitReady polls check until it succeeds, the process exits, ctx ends or
// readyTimeout passes.
func waitReady(ctx context.Context, p *process, check func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
		last = check(cctx)
		ccancel()
		if last == nil {
			return nil
		}
		select {
		case <-p.done:
			err := p.err
			if err == nil {
				err = errors.New("exit status 0") // what %w would print as %!w(<nil>)
			}
			return fmt.Errorf("%s exited before ready: %w (log %s)", filepath.Base(p.cmd.Path), err, p.logPath)
		case <-ctx.Done():
			return fmt.Errorf("%s not ready: %w (last check: %w; log %s)", filepath.Base(p.cmd.Path), ctx.Err(), last, p.logPath)
		case <-tick.C:
		}
	}
}

// Config returns a copy of the admin client configuration: bearer token,
// TLS verification off (self-signed on loopback), no client-side rate limit.
// It stays valid across RestartAPIServer.
func (s *Server) Config() *rest.Config { return rest.CopyConfig(s.config) }

// Client returns a clientset for Config, shared by all callers.
func (s *Server) Client() kubernetes.Interface { return s.client }

// URL returns the API server's base URL, https://127.0.0.1:port.
func (s *Server) URL() string { return s.config.Host }

// EtcdURL returns etcd's client URL (http, loopback).
func (s *Server) EtcdURL() string { return s.etcdURL }

// RestartAPIServer kills kube-apiserver and starts it again on the same port
// against the same etcd, and waits until it is ready. Its watch cache then
// starts at the current etcd revision, so a watch from a resourceVersion
// taken before the restart gets 410 Expired.
func (s *Server) RestartAPIServer(t testing.TB) {
	t.Helper()
	s.StopAPIServer(t)
	s.StartAPIServer(t)
}

// StopAPIServer kills kube-apiserver (SIGKILL, like a crash) and waits for it
// to exit; etcd keeps running. Clients then get connection errors until
// StartAPIServer, which lets a test observe a client riding out an outage.
func (s *Server) StopAPIServer(t testing.TB) {
	t.Helper()
	s.mu.Lock()
	p := s.apiserver
	s.mu.Unlock()
	// SIGKILL rather than a graceful stop: a graceful shutdown waits for
	// in-flight requests and watches, and a crash is what resuming clients
	// must survive anyway. kill waits for the exit, so the port is free.
	if p != nil {
		p.kill()
	}
}

// StartAPIServer starts kube-apiserver again after StopAPIServer, on the same
// port and against the same etcd, and waits until it is ready.
func (s *Server) StartAPIServer(t testing.TB) {
	t.Helper()
	s.mu.Lock()
	p, stopped := s.apiserver, s.stopped
	s.mu.Unlock()
	if stopped {
		t.Fatalf("apiserver: start kube-apiserver: server stopped")
	}
	if p != nil && !p.exited() {
		t.Fatalf("apiserver: start kube-apiserver: already running (call StopAPIServer first)")
	}
	began := time.Now()
	if err := s.startAPIServer(t.Context(), false); err != nil {
		s.dumpLogs(t)
		t.Fatalf("%v", err)
	}
	t.Logf("apiserver: kube-apiserver started again in %v", time.Since(began).Round(time.Millisecond))
}

// RecreateCluster replaces the cluster behind the API server's URL with a
// new, empty one, as when a cluster is torn down and created again under
// the same address: it kills kube-apiserver and etcd, starts etcd on a new
// data directory, and kube-apiserver on the same port against it, and
// waits until it is ready. Objects, UIDs (the kube-system namespace's
// included) and resourceVersions start anew; clients built from Config
// keep working. The old data directory is left in Dir.
func (s *Server) RecreateCluster(t testing.TB) {
	t.Helper()
	s.StopAPIServer(t)
	s.mu.Lock()
	etcd, stopped := s.etcd, s.stopped
	s.mu.Unlock()
	if stopped {
		t.Fatalf("apiserver: recreate cluster: server stopped")
	}
	if etcd != nil {
		etcd.kill()
	}
	began := time.Now()
	if err := s.startEtcd(t.Context()); err != nil {
		s.dumpLogs(t)
		t.Fatalf("apiserver: recreate cluster: %v", err)
	}
	if err := s.startAPIServer(t.Context(), false); err != nil {
		s.dumpLogs(t)
		t.Fatalf("apiserver: recreate cluster: %v", err)
	}
	t.Logf("apiserver: cluster recreated (etcd %s) in %v", s.EtcdURL(), time.Since(began).Round(time.Millisecond))
}

// Stop kills kube-apiserver and etcd and waits for them to exit, then
// removes the directory Launch created (Options.Dir empty). It is
// idempotent and also runs from t.Cleanup.
func (s *Server) Stop() {
	s.mu.Lock()
	s.stopped = true
	etcd, apiserver := s.etcd, s.apiserver
	s.mu.Unlock()
	if apiserver != nil {
		apiserver.kill()
	}
	if etcd != nil {
		etcd.kill()
	}
	if s.ownDir {
		_ = os.RemoveAll(s.dir)
	}
}

// Dir returns the directory holding etcd's data, the keys and the process
// logs (etcd-N.log, kube-apiserver-N.log).
func (s *Server) Dir() string { return s.dir }

// EtcdRevision returns etcd's current revision, which is the newest
// resourceVersion the API server can hand out.
func (s *Server) EtcdRevision(t testing.TB) int64 {
	t.Helper()
	rev, err := s.etcdRevision(t.Context())
	if err != nil {
		t.Fatalf("%v", err)
	}
	return rev
}

// CompactEtcd compacts etcd's history up to rev (physically: it returns once
// the old revisions are gone), so a watch that must start before rev fails
// with 410 Expired, at once when the watch cache is disabled, and after
// RestartAPIServer when it is enabled.
func (s *Server) CompactEtcd(t testing.TB, rev int64) {
	t.Helper()
	// The v3 JSON gateway encodes int64 as strings, as proto3 JSON does.
	body := fmt.Sprintf(`{"revision":"%d","physical":true}`, rev)
	if _, err := s.etcdCall(t.Context(), "/v3/kv/compaction", body); err != nil {
		t.Fatalf("apiserver: compact etcd to %d: %v", rev, err)
	}
}

// CompactToCurrent compacts etcd up to its current revision and returns that
// revision.
func (s *Server) CompactToCurrent(t testing.TB) int64 {
	t.Helper()
	rev := s.EtcdRevision(t)
	s.CompactEtcd(t, rev)
	return rev
}

func (s *Server) etcdRevision(ctx context.Context) (int64, error) {
	// Any range answers with the store's current revision in its header;
	// count_only keeps the answer small.
	data, err := s.etcdCall(ctx, "/v3/kv/range", `{"key":"AA==","count_only":true}`)
	if err != nil {
		return 0, fmt.Errorf("apiserver: etcd revision: %w", err)
	}
	var resp struct {
		Header struct {
			Revision json.Number `json:"revision"`
		} `json:"header"`
	}
	if err := json.Unmarshal(data, &resp); err != nil {
		return 0, fmt.Errorf("apiserver: etcd revision: decode %q: %w", data, err)
	}
	rev, err := strconv.ParseInt(strings.Trim(resp.Header.Revision.String(), `"`), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("apiserver: etcd revision: parse %q: %w", data, err)
	}
	return rev, nil
}

// etcdCall POSTs a JSON request to etcd's v3 HTTP gateway, so the main module
// needs no etcd client.
func (s *Server) etcdCall(ctx context.Context, path, body string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.etcdURL+path, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s: %s", path, resp.Status, bytes.TrimSpace(data))
	}
	return data, nil
}

// dumpLogs logs the tail of every process log, newest restart last.
func (s *Server) dumpLogs(t testing.TB) {
	t.Helper()
	logs, _ := filepath.Glob(filepath.Join(s.dir, "*.log"))
	for _, path := range logs {
		data, err := readTail(path, logTail)
		if err != nil {
			t.Logf("apiserver: %s: %v", filepath.Base(path), err)
			continue
		}
		t.Logf("apiserver: tail of %s:\n%s", filepath.Base(path), data)
	}
}

func readTail(path string, n int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() > n {
		if _, err := f.Seek(st.Size()-n, io.SeekStart); err != nil {
			return nil, err
		}
	}
	return io.ReadAll(f)
}

// freePorts returns n distinct free loopback ports. The listeners are held
// until all n are chosen so the same port is not returned twice.
func freePorts(n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// process is one child process with its output in a log file.
type process struct {
	cmd     *exec.Cmd
	logPath string
	log     *os.File
	done    chan struct{} // closed when the process has exited
	err     error         // exit status, valid after done
	once    sync.Once
}

func startProcess(path string, args []string, logPath string) (*process, error) {
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, args...)
	cmd.Stdout = log
	cmd.Stderr = log
	cmd.SysProcAttr = sysProcAttr()
	fmt.Fprintf(log, "+ %s %s\n", path, strings.Join(args, " "))
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, err
	}
	p := &process{cmd: cmd, logPath: logPath, log: log, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		log.Close()
		close(p.done)
	}()
	return p, nil
}

// kill kills the process group and waits for the process to exit.
func (p *process) kill() {
	p.once.Do(func() {
		killGroup(p.cmd.Process)
	})
	<-p.done
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// portInUse reports whether the process failed because a port was taken,
// which is the one start failure worth retrying on other ports.
func (p *process) portInUse() bool {
	f, err := os.Open(p.logPath)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if strings.Contains(sc.Text(), "address already in use") {
			return true
		}
	}
	return false
}
