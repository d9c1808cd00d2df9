package snapshot_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/snapshot"
)

// A bolt database is saved to a file and restored into a badger database:
// same objects (content hash), same resume point.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "snapshot-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	src := "bolt://" + filepath.Join(dir, "cache.db")
	dst := "badger://" + filepath.Join(dir, "badger")
	file := filepath.Join(dir, "pods.idb")

	codec, err := indexer.NewCodec(&corev1.Pod{})
	if err != nil {
		panic(err)
	}
	s, err := store.Open(ctx, src, &store.Options{Name: "v1/pods", Codec: codec})
	if err != nil {
		panic(err)
	}
	err = s.Replace([]interface{}{
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: "a"}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: "b"}},
	}, "120")
	if err != nil {
		panic(err)
	}
	s.Close()

	// The raw drivers are registered by the program (TestMain here).
	saved, err := snapshot.SaveURL(ctx, file, src, nil)
	if err != nil {
		panic(err)
	}
	if _, err := snapshot.Restore(ctx, file, dst, nil); err != nil {
		panic(err)
	}
	restored, err := snapshot.Status(ctx, dst, nil)
	if err != nil {
		panic(err)
	}
	a, b := saved.Store("v1/pods"), restored.Store("v1/pods")
	fmt.Println(b.Objects, b.Info.ResourceVersion, a.ContentHash == b.ContentHash)
	// Output: 2 120 true
}
