package badger

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"

	corev1 "k8s.io/api/core/v1"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
)

// childDirEnv, when set, makes the test binary a child that holds the
// database in that directory open until its stdin closes.
const childDirEnv = "INFORMERDB_BADGER_TEST_CHILD_DIR"

// RunTestChild runs the child role if the environment asks for it, and
// reports whether it did.
func RunTestChild() bool {
	dir := os.Getenv(childDirEnv)
	if dir == "" {
		return false
	}
	codec, err := indexer.NewCodec(&corev1.Pod{})
	if err != nil {
		fmt.Println("error:", err)
		return true
	}
	s, err := Open(context.Background(), dir, &store.Options{Name: "child", Codec: codec})
	if err != nil {
		fmt.Println("error:", err)
		return true
	}
	fmt.Println("ready")
	_, _ = io.Copy(io.Discard, bufio.NewReader(os.Stdin))
	_ = s.Close()
	return true
}
