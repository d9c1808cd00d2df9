package memory_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
	_ "github.com/informerdb/informerdb/store/memory"
)

// A memory store with a snapshot file keeps its objects and resume point
// across a restart.
func Example_file() {
	dir, err := os.MkdirTemp("", "informerdb-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	url := "memory://" + filepath.Join(dir, "cache.snap")
	codec, err := indexer.NewCodec(&corev1.Pod{})
	if err != nil {
		panic(err)
	}
	opts := &store.Options{Name: "v1/pods", Codec: codec}
	ctx := context.Background()

	s, err := store.Open(ctx, url, opts)
	if err != nil {
		panic(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-1", ResourceVersion: "41"}}
	if err := s.Commit(ctx, store.Batch{Ops: []store.Op{{Type: store.OpPut, Object: pod}}, ResourceVersion: "42"}); err != nil {
		panic(err)
	}
	if err := s.Close(); err != nil { // writes the snapshot
		panic(err)
	}

	s, err = store.Open(ctx, url, opts)
	if err != nil {
		panic(err)
	}
	defer s.Close()
	fmt.Println("keys:", s.ListKeys())
	fmt.Println("resume from:", s.ResourceVersion())
	// Output:
	// keys: [default/web-1]
	// resume from: 42
}
