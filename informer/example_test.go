package informer_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	listersv1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	fcache "k8s.io/client-go/tools/cache/testing"
	"k8s.io/utils/ptr"

	"github.com/informerdb/informerdb/informer"
	"github.com/informerdb/informerdb/store"
	_ "github.com/informerdb/informerdb/store/memory"
)

func Example() {
	// A fake API server holding one ConfigMap.
	src := fcache.NewFakeControllerSource()
	defer src.Shutdown()
	src.Add(&corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "settings"},
		Data:       map[string]string{"mode": "fast"},
	})

	ctx, cancel := context.WithCancel(context.Background())
	s, err := store.Open(ctx, "memory://", &store.Options{Name: "core/v1/configmaps"})
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
	added := make(chan string, 1)
	reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) { added <- obj.(*corev1.ConfigMap).Name },
	})
	if err != nil {
		panic(err)
	}
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		inf.RunWithContext(ctx)
	}()
	cache.WaitFor(ctx, "", inf.HasSyncedChecker(), reg.HasSyncedChecker())

	fmt.Println("added:", <-added)
	cm, err := listersv1.NewConfigMapLister(inf.GetIndexer()).ConfigMaps("default").Get("settings")
	if err != nil {
		panic(err)
	}
	fmt.Println("lister:", cm.Data["mode"])
	fmt.Println("resume point:", s.ResourceVersion())

	cancel()
	<-stopped
	// Output:
	// added: settings
	// lister: fast
	// resume point: 1
}
