package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/informerdb/informerdb/test/apiserver"
)

// Cluster is the API server a scenario runs against: a kube-apiserver and
// etcd started on loopback by Launch, or an existing cluster from a
// kubeconfig (read-only). Cluster is safe for concurrent use.
type Cluster struct {
	// Server is the loopback API server, nil for a kubeconfig cluster.
	Server *apiserver.Server
	// ReadOnly is true for a kubeconfig cluster: scenarios only list and
	// watch ConfigMaps there.
	ReadOnly bool

	config  *rest.Config
	client  kubernetes.Interface
	counter *counter
}

// LaunchCluster starts a kube-apiserver and etcd on loopback
// (apiserver.Launch). Close stops them and removes their directory.
func LaunchCluster(ctx context.Context) (*Cluster, error) {
	srv, err := apiserver.Launch(ctx, apiserver.Options{})
	if err != nil {
		return nil, err
	}
	c, err := NewCluster(srv)
	if err != nil {
		srv.Stop()
		return nil, err
	}
	return c, nil
}

// NewCluster is the Cluster of a running loopback API server (in tests,
// from apiserver.Start). Close stops srv.
func NewCluster(srv *apiserver.Server) (*Cluster, error) {
	c, err := newCluster(srv.Config())
	if err != nil {
		return nil, err
	}
	c.Server = srv
	return c, nil
}

// KubeconfigCluster connects to the cluster of a kubeconfig file, read-only.
func KubeconfigCluster(path string) (*Cluster, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("bench: kubeconfig %s: %w", path, err)
	}
	c, err := newCluster(cfg)
	if err != nil {
		return nil, err
	}
	c.ReadOnly = true
	return c, nil
}

func newCluster(cfg *rest.Config) (*Cluster, error) {
	cfg = rest.CopyConfig(cfg)
	// Scenarios create tens of thousands of objects: no client-side rate
	// limit (the loopback admin is exempt from server-side fairness).
	cfg.QPS, cfg.Burst = -1, 0
	cfg.UserAgent = "informerdb-bench"
	cnt := &counter{}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return countingTransport{rt: rt, c: cnt} })
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("bench: client: %w", err)
	}
	return &Cluster{config: cfg, client: client, counter: cnt}, nil
}

// Client returns the clientset of the cluster.
func (c *Cluster) Client() kubernetes.Interface { return c.client }

// Host is the API server URL, part of every store's scope.
func (c *Cluster) Host() string { return c.config.Host }

// Close stops the loopback API server, if any.
func (c *Cluster) Close() {
	if c.Server != nil {
		c.Server.Stop()
	}
}

// Cost is what the API server sent for ConfigMaps during one phase.
type Cost struct {
	// Lists counts LIST requests (the freshness probe of a resume is one).
	Lists int64
	// WatchEvents counts watch events sent, including the initial events
	// of a streaming list (client-go's WatchListClient).
	WatchEvents int64
	// Bytes is LIST response bytes plus watch event bytes.
	Bytes int64
	// Source says where the numbers come from: "server" (the API server's
	// /metrics) or "client" (bytes read by this process, when /metrics is
	// not readable).
	Source string
}

// snapshot is a reading of both counters.
type snapshot struct {
	server *apiserver.Metrics
	client counts
}

func (c *Cluster) snapshot(ctx context.Context) (snapshot, error) {
	s := snapshot{client: c.counter.load()}
	if c.Server != nil {
		m, err := c.Server.Scrape(ctx)
		if err != nil {
			return s, err
		}
		s.server = &m
	}
	return s, nil
}

// cost is the cost between two snapshots: server metrics when both have
// them, else the client-side counts.
func (c *Cluster) cost(before, after snapshot) Cost {
	if before.server != nil && after.server != nil {
		d := after.server.Sub(*before.server)
		return Cost{
			Lists:       d.Lists["configmaps"],
			WatchEvents: d.WatchEvents["configmaps"],
			Bytes:       d.ListBytes["configmaps"] + d.WatchEventBytes["configmaps"],
			Source:      "server",
		}
	}
	return Cost{
		Lists:  after.client.lists - before.client.lists,
		Bytes:  after.client.bytes - before.client.bytes,
		Source: "client",
		// Watch events are not counted client-side.
		WatchEvents: -1,
	}
}

// counter counts ConfigMap requests and response bytes on the client side.
type counter struct {
	lists atomic.Int64
	bytes atomic.Int64
}

type counts struct{ lists, bytes int64 }

func (c *counter) load() counts { return counts{lists: c.lists.Load(), bytes: c.bytes.Load()} }

type countingTransport struct {
	rt http.RoundTripper
	c  *counter
}

func (t countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !strings.HasSuffix(req.URL.Path, "/configmaps") {
		return t.rt.RoundTrip(req)
	}
	if req.Method == http.MethodGet && req.URL.Query().Get("watch") != "true" && req.URL.Query().Get("watch") != "1" {
		t.c.lists.Add(1)
	}
	resp, err := t.rt.RoundTrip(req)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	resp.Body = countingBody{ReadCloser: resp.Body, c: t.c}
	return resp, nil
}

type countingBody struct {
	io.ReadCloser
	c *counter
}

func (b countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.c.bytes.Add(int64(n))
	return n, err
}

func isAlreadyExists(err error) bool { return apierrors.IsAlreadyExists(err) }
