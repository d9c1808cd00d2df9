package bolt_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
	_ "github.com/informerdb/informerdb/store/bolt"
)

// A store survives a restart: objects, indexes and the resume point.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "informerdb-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	url := "bolt://" + filepath.Join(dir, "cache.db")

	codec, err := indexer.NewCodec(&corev1.Pod{})
	if err != nil {
		panic(err)
	}
	opts := &store.Options{
		Name:     "v1/pods",
		Codec:    codec,
		Indexers: cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
	}
	s, err := store.Open(ctx, url, opts)
	if err != nil {
		panic(err)
	}
	// One Commit: both Pods, their index entries and the resume point, in one
	// bbolt transaction.
	err = s.Commit(ctx, store.Batch{ResourceVersion: "120", Ops: []store.Op{
		{Type: store.OpPut, Object: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: "a"}}},
		{Type: store.OpPut, Object: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: "b"}}},
	}})
	if err != nil {
		panic(err)
	}
	s.Close()

	// After a restart: a bounded store keeping at most 100 decoded objects.
	s, err = store.Open(ctx, url+"?cache=100", opts)
	if err != nil {
		panic(err)
	}
	defer s.Close()
	keys, err := s.IndexKeys(cache.NamespaceIndex, "web")
	if err != nil {
		panic(err)
	}
	fmt.Println("resume from", s.ResourceVersion())
	fmt.Println(keys)
	// Output:
	// resume from 120
	// [web/a web/b]
}
