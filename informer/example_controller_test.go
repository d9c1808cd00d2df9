package informer_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	listersv1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	fcache "k8s.io/client-go/tools/cache/testing"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/informer"
	"github.com/informerdb/informerdb/store"
	_ "github.com/informerdb/informerdb/store/bolt"
)

// runController runs a minimal controller (an informer on the bolt store
// at dbURL, a lister, a workqueue, one worker) until it has reconciled
// every object and every change the API server holds, then stops it.
func runController(src *fcache.FakeControllerSource, dbURL string) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	codec, err := indexer.NewCodec(&corev1.ConfigMap{}) // protobuf on disk
	if err != nil {
		panic(err)
	}
	s, err := store.Open(ctx, dbURL, &store.Options{Name: "core/v1/configmaps", Codec: codec})
	if err != nil {
		panic(err)
	}
	defer s.Close()
	var opts informer.Options
	opts.Reflector.WatchList = ptr.To(false) // the fake serves no streaming lists
	inf, err := informer.New(cache.ToListerWatcherWithContext(src), &corev1.ConfigMap{}, s, &opts)
	if err != nil {
		panic(err)
	}
	queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
	enqueue := func(obj interface{}) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			queue.Add(key)
		}
	}
	reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj interface{}) { enqueue(obj) },
		DeleteFunc: enqueue,
	})
	if err != nil {
		panic(err)
	}
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		inf.RunWithContext(ctx)
	}()
	// Every notification up to a consistent read of the server has been
	// handed to the handler once the registration has synced.
	cache.WaitFor(ctx, "", inf.HasSyncedChecker(), reg.HasSyncedChecker())

	lister := listersv1.NewConfigMapLister(inf.GetIndexer())
	reconcile := func(key string) {
		ns, name, _ := cache.SplitMetaNamespaceKey(key)
		cm, err := lister.ConfigMaps(ns).Get(name)
		switch {
		case apierrors.IsNotFound(err):
			fmt.Println("deleted", key)
		case err != nil:
			panic(err)
		default:
			fmt.Println("reconciled", key, cm.Data["mode"])
		}
	}
	for queue.Len() > 0 {
		key, _ := queue.Get()
		reconcile(key)
		queue.Forget(key)
		queue.Done(key)
	}
	fmt.Println("resumed without a list:", inf.Stats().Reflector.Resumes > 0)
	queue.ShutDown()
	cancel()
	<-stopped
}

// A controller that restarts: the second run resumes the watch from the
// resourceVersion its bolt store kept instead of listing again, and
// reconciles the objects it had (handed to the handler first, as they
// were) and what changed while it was stopped, the delete included.
func Example_controller() {
	dir, err := os.MkdirTemp("", "informerdb-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	dbURL := "bolt://" + filepath.Join(dir, "cache.db")

	src := fcache.NewFakeControllerSource()
	defer src.Shutdown()
	cm := func(name, mode string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}, Data: map[string]string{"mode": mode}}
	}
	src.Add(cm("settings", "fast"))
	src.Add(cm("limits", "low"))

	fmt.Println("first run:")
	runController(src, dbURL)

	// While the controller is stopped.
	src.Modify(cm("settings", "safe"))
	src.Delete(cm("limits", ""))
	src.Add(cm("features", "beta"))

	fmt.Println("after a restart:")
	runController(src, dbURL)

	// Unordered output:
	// first run:
	// reconciled default/settings fast
	// reconciled default/limits low
	// resumed without a list: false
	// after a restart:
	// reconciled default/settings safe
	// deleted default/limits
	// reconciled default/features beta
	// resumed without a list: true
}
