package crash_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/informer"
	"github.com/informerdb/informerdb/reflector"
	"github.com/informerdb/informerdb/store"
)

// Environment of the child process. The parent owns the API server and
// passes its address and token; the child owns nothing but its informer.
const (
	envChild     = "INFORMERDB_CRASH_CHILD" // "1" selects child mode in TestMain
	envStoreURL  = "INFORMERDB_CRASH_STORE_URL"
	envServer    = "INFORMERDB_CRASH_SERVER"
	envToken     = "INFORMERDB_CRASH_TOKEN"
	envNamespace = "INFORMERDB_CRASH_NAMESPACE"
	envJournal   = "INFORMERDB_CRASH_JOURNAL"
)

// Exit codes of a child that could not open its store.
const (
	exitFailed  = 3
	exitLocked  = 4
	exitCorrupt = 5
)

// record is one line of the journal: a notification the handler received,
// or the "synced" marker written once the informer and the handler synced.
type record struct {
	Op      string `json:"op"` // add, update, delete, synced
	Name    string `json:"name,omitempty"`
	UID     string `json:"uid,omitempty"`
	RV      string `json:"rv,omitempty"`
	Initial bool   `json:"initial,omitempty"`
	Tomb    bool   `json:"tomb,omitempty"`
	NilObj  bool   `json:"nilObj,omitempty"`
	OldUID  string `json:"oldUID,omitempty"`
	OldRV   string `json:"oldRV,omitempty"`
}

// journal appends records to a file, one write and one fdatasync per
// record, so that what reached the handler before a SIGKILL is on disk
// (a single write(2) would already survive a process kill; the sync keeps
// the journal honest if the test is ever run under power-loss injection).
// It is safe for concurrent use.
type journal struct {
	mu sync.Mutex // guards f
	f  *os.File
}

func (j *journal) write(r record) {
	line, err := json.Marshal(r)
	if err != nil {
		panic(err) // record has only strings and booleans
	}
	// On a failed write the child exits holding the lock, so that no record
	// follows one that may be missing or torn; hence no deferred Unlock.
	j.mu.Lock()
	if _, err := j.f.Write(append(line, '\n')); err != nil {
		fmt.Fprintln(os.Stderr, "crash child: journal:", err)
		os.Exit(exitFailed)
	}
	if err := j.f.Sync(); err != nil {
		fmt.Fprintln(os.Stderr, "crash child: journal sync:", err)
		os.Exit(exitFailed)
	}
	j.mu.Unlock()
}

func configMapOf(obj interface{}) *corev1.ConfigMap {
	if cm, ok := obj.(*corev1.ConfigMap); ok {
		return cm
	}
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("<%T>", obj)}}
}

func (j *journal) OnAdd(obj interface{}, initial bool) {
	cm := configMapOf(obj)
	j.write(record{Op: "add", Name: cm.Name, UID: string(cm.UID), RV: cm.ResourceVersion, Initial: initial})
}

func (j *journal) OnUpdate(oldObj, newObj interface{}) {
	o, n := configMapOf(oldObj), configMapOf(newObj)
	j.write(record{Op: "update", Name: n.Name, UID: string(n.UID), RV: n.ResourceVersion, OldUID: string(o.UID), OldRV: o.ResourceVersion})
}

func (j *journal) OnDelete(obj interface{}) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		if tomb.Obj == nil {
			_, name, _ := strings.Cut(tomb.Key, "/")
			j.write(record{Op: "delete", Name: name, Tomb: true, NilObj: true})
			return
		}
		cm := configMapOf(tomb.Obj)
		j.write(record{Op: "delete", Name: cm.Name, UID: string(cm.UID), RV: cm.ResourceVersion, Tomb: true})
		return
	}
	cm := configMapOf(obj)
	j.write(record{Op: "delete", Name: cm.Name, UID: string(cm.UID), RV: cm.ResourceVersion})
}

// storeOptions are the options of the child's store; the parent opens the
// store with the same ones, so its checks see exactly what the child wrote
// (different options would reset the store or rebuild its indexes).
func storeOptions(server, ns string) *store.Options {
	c, err := indexer.NewCodec(&corev1.ConfigMap{})
	if err != nil {
		panic(err)
	}
	return &store.Options{
		Name:  "v1/configmaps",
		Codec: c,
		Scope: fmt.Sprintf("cluster=%s;resource=v1/configmaps;namespace=%s", server, ns),
		Indexers: cache.Indexers{
			cache.NamespaceIndex: cache.MetaNamespaceIndexFunc,
			"app":                indexer.LabelIndexFunc("app"),
		},
	}
}

// child runs an informer until it is killed. It prints "open R" once the
// store is open, and "synced" followed by "state name uid rv" lines and
// "end" once the informer and its handler synced.
func child() int {
	url, server, token, ns, jpath := os.Getenv(envStoreURL), os.Getenv(envServer), os.Getenv(envToken), os.Getenv(envNamespace), os.Getenv(envJournal)
	ctx := context.Background()
	go func() {
		// The parent holds our stdin open until it is done with us; EOF
		// means it died, and a child must not outlive it.
		_, _ = io.Copy(io.Discard, os.Stdin)
		fmt.Fprintln(os.Stderr, "crash child: parent gone (stdin closed)")
		os.Exit(exitFailed)
	}()
	s, err := store.Open(ctx, url, storeOptions(server, ns))
	if err != nil {
		fmt.Fprintln(os.Stderr, "crash child: open:", err)
		switch {
		case errors.Is(err, store.ErrLocked):
			return exitLocked
		case errors.Is(err, store.ErrCorrupt):
			return exitCorrupt
		}
		return exitFailed
	}
	out := bufio.NewWriter(os.Stdout)
	fmt.Fprintf(out, "open %q\n", s.ResourceVersion())
	out.Flush()

	f, err := os.OpenFile(jpath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, "crash child: journal:", err)
		return exitFailed
	}
	j := &journal{f: f}
	c, err := kubernetes.NewForConfig(&rest.Config{
		Host:            server,
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{Insecure: true},
		QPS:             -1,
		UserAgent:       "informerdb-crash-child",
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "crash child: client:", err)
		return exitFailed
	}
	lw := cache.ToListerWatcherWithContext(cache.NewFilteredListWatchFromClient(c.CoreV1().RESTClient(), "configmaps", ns, func(*metav1.ListOptions) {}))
	inf, err := informer.New(lw, &corev1.ConfigMap{}, s, &informer.Options{
		Reflector: reflector.Options{
			Name: "crash-configmaps",

			WatchList: ptr.To(false),

			PageSize:            16,
			CatchUpWatchTimeout: 3 * time.Second,
			Backoff:             reflector.Backoff{Initial: 100 * time.Millisecond, Max: time.Second},
		},
	})

	if err != nil {
		fmt.Fprintln(os.Stderr, "crash child: informer:", err)
		return exitFailed
	}
	reg, err := inf.AddEventHandler(j)
	if err != nil {
		fmt.Fprintln(os.Stderr, "crash child: handler:", err)
		return exitFailed
	}
	go inf.RunWithContext(ctx)
	<-inf.HasSyncedChecker().Done()
	<-reg.HasSyncedChecker().Done()
	j.write(record{Op: "synced"})
	var lines []string
	for _, obj := range s.List() {
		cm := configMapOf(obj)
		lines = append(lines, fmt.Sprintf("state %s %s %s", cm.Name, cm.UID, cm.ResourceVersion))
	}
	sort.Strings(lines)
	fmt.Fprintln(out, "synced")
	for _, l := range lines {
		fmt.Fprintln(out, l)
	}
	fmt.Fprintln(out, "end")
	out.Flush()
	select {} // until killed
}
