package memdb_test

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/store"
	_ "github.com/informerdb/informerdb/store/memdb"
)

// A memdb store is a client-go Indexer whose reads see one committed state;
// Commit applies a batch and its resume point atomically.
func Example() {
	ctx := context.Background()
	s, err := store.Open(ctx, "memdb://", &store.Options{
		Indexers: cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()

	pod := func(ns, name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	}
	err = s.Commit(ctx, store.Batch{ResourceVersion: "42", Ops: []store.Op{
		{Type: store.OpPut, Object: pod("web", "a")},
		{Type: store.OpPut, Object: pod("web", "b")},
		{Type: store.OpPut, Object: pod("db", "c")},
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	keys, _ := s.IndexKeys(cache.NamespaceIndex, "web")
	all := s.ListKeys()
	sort.Strings(all)
	fmt.Println(keys, all, s.ResourceVersion())
	// Output: [web/a web/b] [db/c web/a web/b] 42
}
