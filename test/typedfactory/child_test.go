package typedfactory_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/informerdb/informerdb/informer"
	"github.com/informerdb/informerdb/reflector"
	_ "github.com/informerdb/informerdb/store/bolt"
	samplev1alpha1 "github.com/informerdb/informerdb/test/sample/apis/sample/v1alpha1"
	"github.com/informerdb/informerdb/test/sample/controller"
	"github.com/informerdb/informerdb/test/sample/generated/clientset/versioned"
	"github.com/informerdb/informerdb/test/sample/generated/clientset/versioned/scheme"
	"github.com/informerdb/informerdb/test/sample/generated/informers/externalversions/internalinterfaces"
	samplegroup "github.com/informerdb/informerdb/test/sample/generated/informers/externalversions/sample"
)

// Environment of the child process: the Site controller on informerdb's
// factories. The parent owns the API server and passes its address and
// token.
const (
	envMode     = "INFORMERDB_TYPEDFACTORY_CHILD" // "run" or "cache-only" selects child mode in TestMain
	envStoreURL = "INFORMERDB_TYPEDFACTORY_STORE_URL"
	envServer   = "INFORMERDB_TYPEDFACTORY_SERVER"
	envToken    = "INFORMERDB_TYPEDFACTORY_TOKEN"
	envJournal  = "INFORMERDB_TYPEDFACTORY_JOURNAL"
)

// record is one line of a child's journal: a delete a handler received
// (handler "early": the controller's, added before the factories started;
// "late": added after they synced), a Site the controller synced, the mark
// that the factories synced, or an informer's reflector counters (on
// SIGUSR1, then "stats-end").
type record struct {
	Kind     string `json:"kind"` // delete, sync, synced, stats, stats-end
	Handler  string `json:"handler,omitempty"`
	Informer string `json:"informer,omitempty"` // sites, deployments, configmaps; the store's name in stats
	Key      string `json:"key,omitempty"`      // namespace/name
	Exists   bool   `json:"exists,omitempty"`
	Lists    int64  `json:"lists,omitempty"`
	Resumes  int64  `json:"resumes,omitempty"`
	Relists  int64  `json:"relists,omitempty"`
	Batch    int    `json:"batch,omitempty"`
}

// journal appends records to a file, one write and one fdatasync each, so
// that what a handler received before a SIGKILL is on disk.
type journal struct {
	mu sync.Mutex // guards f
	f  *os.File
}

func (j *journal) write(r record) {
	line, err := json.Marshal(r)
	if err != nil {
		panic(err) // strings, booleans and integers only
	}
	// On a failure the child exits holding the lock, so that no record
	// follows one that may be missing; hence no deferred Unlock.
	j.mu.Lock()
	_, err = j.f.Write(append(line, '\n'))
	if err == nil {
		err = j.f.Sync()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "typedfactory child: journal:", err)
		os.Exit(3)
	}
	j.mu.Unlock()
}

// observer journals the controller's deletes and syncs.
type observer struct{ j *journal }

func (o observer) Event(informer, op, key string) {
	if op == "delete" {
		o.j.write(record{Kind: "delete", Handler: "early", Informer: informer, Key: key})
	}
}

func (o observer) Synced(key string, exists bool) {
	o.j.write(record{Kind: "sync", Key: key, Exists: exists})
}

// child runs the Site controller on informerdb's factories until it is
// killed. In "run" mode the controller's handlers are added before the
// factories start, and a second handler per informer after they synced; in
// "cache-only" mode the informers run without any handler and the child
// writes "synced" once they synced: a process killed then has committed
// what changed while it was down and handed it to no handler.
func child(mode string) int {
	ctx := context.Background()
	go func() {
		// The parent holds our stdin open; EOF means it died.
		_, _ = io.Copy(io.Discard, os.Stdin)
		fmt.Fprintln(os.Stderr, "typedfactory child: parent gone (stdin closed)")
		os.Exit(3)
	}()
	fail := func(what string, err error) int {
		fmt.Fprintf(os.Stderr, "typedfactory child: %s: %v\n", what, err)
		return 3
	}
	f, err := os.OpenFile(os.Getenv(envJournal), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fail("journal", err)
	}
	j := &journal{f: f}
	ctx = klog.NewContext(ctx, klog.Background())

	cfg := &rest.Config{
		Host:            os.Getenv(envServer),
		BearerToken:     os.Getenv(envToken),
		TLSClientConfig: rest.TLSClientConfig{Insecure: true},
		QPS:             -1,
		UserAgent:       "informerdb-typedfactory-child",
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fail("clientset", err)
	}
	sites, err := versioned.NewForConfig(cfg)
	if err != nil {
		return fail("site clientset", err)
	}
	// Catch-up watches that end soon after the bookmark kube-apiserver
	// sends about 2 s before a watch's timeout.
	fo := informer.FactoryOptions{}
	fo.Informer.Reflector = reflector.Options{CatchUpWatchTimeout: 3 * time.Second}
	dbURL := os.Getenv(envStoreURL)

	// What a client-go controller changes: these two constructors.
	kubeFactory, err := informer.NewSharedInformerFactory(ctx, dbURL, cfg, 0,
		informer.WithNamespace(namespace), informer.WithFactoryOptions(fo))
	if err != nil {
		return fail("shared informer factory", err)
	}
	siteFactory, err := informer.NewGeneratedFactory[internalinterfaces.NewInformerFunc](ctx, dbURL, cfg, scheme.Scheme, 0,
		informer.WithNamespace(namespace), informer.WithFactoryOptions(fo))
	if err != nil {
		return fail("generated factory", err)
	}
	deployments := kubeFactory.Apps().V1().Deployments()
	configMaps := kubeFactory.Core().V1().ConfigMaps()
	siteInformer := samplegroup.New(siteFactory, siteFactory.Namespace(), siteFactory.TweakListOptions()).V1alpha1().Sites()

	var c *controller.Controller
	if mode == "run" {
		if c, err = controller.New(kube, sites, deployments, configMaps, siteInformer, observer{j}); err != nil {
			return fail("controller", err)
		}
	} else {
		deployments.Informer()
		configMaps.Informer()
		siteInformer.Informer()
	}
	infs := map[string]*informer.Informer{}
	for name, inf := range map[string]cache.SharedIndexInformer{
		"deployments": kubeFactory.InformerFor(&appsv1.Deployment{}, nil),
		"configmaps":  kubeFactory.InformerFor(&corev1.ConfigMap{}, nil),
		"sites":       siteFactory.InformerFor(&samplev1alpha1.Site{}, nil),
	} {
		i, ok := inf.(*informer.Informer)
		if !ok {
			return fail("informer "+name, fmt.Errorf("%T is not an informerdb informer", inf))
		}
		infs[name] = i
	}

	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	go func() {
		batch := 0
		for range usr1 {
			batch++
			for _, inf := range infs {
				st := inf.Stats().Reflector
				rl := st.Relists
				j.write(record{Kind: "stats", Batch: batch, Informer: inf.Name(), Lists: st.Lists, Resumes: st.Resumes,
					Relists: rl.Cold + rl.Expired + rl.TooLarge + rl.TimeTravel + rl.CatchUp + rl.ScopeChange + rl.Corrupt + rl.Gone})
			}
			j.write(record{Kind: "stats-end", Batch: batch})
		}
	}()

	kubeFactory.Start(ctx.Done())
	siteFactory.Start(ctx.Done())
	for name, res := range map[string]cache.SyncResult{
		"shared informer factory": kubeFactory.WaitForCacheSyncWithContext(ctx),
		"generated factory":       siteFactory.WaitForCacheSyncWithContext(ctx),
	} {
		if res.Err != nil {
			return fail(name+": wait for cache sync", res.Err)
		}
	}
	if mode == "run" {
		for name, inf := range infs {
			late := func(obj interface{}) {
				key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
				if err != nil {
					fmt.Fprintln(os.Stderr, "typedfactory child: key:", err)
					os.Exit(3)
				}
				j.write(record{Kind: "delete", Handler: "late", Informer: name, Key: key})
			}
			if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: late}); err != nil {
				return fail("late handler of "+name, err)
			}
		}
		go func() {
			if err := c.Run(ctx, 2); err != nil {
				fmt.Fprintln(os.Stderr, "typedfactory child: controller:", err)
				os.Exit(3)
			}
		}()
	}
	j.write(record{Kind: "synced"})
	<-ctx.Done()
	return 3
}
