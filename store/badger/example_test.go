package badger_test

import (
	"context"
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
	_ "github.com/informerdb/informerdb/store/badger"
)

// A store survives the process: a restarted informer finds its objects and
// the resume point to watch from.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "informerdb-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	codec, err := indexer.NewCodec(&corev1.Pod{})
	if err != nil {
		panic(err)
	}
	opts := &store.Options{Name: "v1/pods", Codec: codec}

	s, err := store.Open(ctx, "badger://"+dir, opts)
	if err != nil {
		panic(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", ResourceVersion: "41"}}
	if err := s.Commit(ctx, store.Batch{Ops: []store.Op{{Type: store.OpPut, Object: pod}}, ResourceVersion: "42"}); err != nil {
		panic(err)
	}
	s.Close()

	s, err = store.Open(ctx, "badger://"+dir, opts)
	if err != nil {
		panic(err)
	}
	defer s.Close()
	_, found, _ := s.GetByKey("default/web")
	fmt.Println("found:", found, "resume from:", s.ResourceVersion())
	// Output: found: true resume from: 42
}
