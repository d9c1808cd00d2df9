package badger

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strconv"

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
	if dir := os.Getenv(crashDirEnv); dir != "" {
		runCrashChild(dir)
		return true
	}
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

// crashDirEnv, when set, makes the test binary a child that replaces the
// contents of a store in that directory over and over until it is killed.
const crashDirEnv = "INFORMERDB_BADGER_TEST_CRASH_DIR"

// crashObjects is how many objects each round of the crash child writes:
// about five badger entries each, more than one transaction holds with
// smallConfig, so every round goes through a new generation.
const crashObjects = 1500

// runCrashChild alternates Replace and a large Commit updating every
// object; round r labels every object app=r and sets the resume point to r.
// It prints r once the round has returned. It starts with the round after
// the stored resume point.
func runCrashChild(dir string) {
	codec, err := indexer.NewCodec(&corev1.Pod{})
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	s, err := open(context.Background(), dir, &store.Options{Name: "pods", Codec: codec, Indexers: podIndexers()}, smallConfig())
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	// Go on from the round the last child got to, so that rounds are
	// told apart across kills (every child writing round 1 again would
	// leave nothing to check but the first round).
	first := 1
	if rv := s.ResourceVersion(); rv != "" {
		n, err := strconv.Atoi(rv)
		if err != nil {
			fmt.Println("error: resume point:", err)
			return
		}
		first = n + 1
	}
	for r := first; ; r++ {
		rv := fmt.Sprint(r)
		if r%2 == 1 {
			list := make([]interface{}, crashObjects)
			for i := range list {
				list[i] = newPod(i, rv, rv)
			}
			err = s.Replace(list, rv)
		} else {
			ops := make([]store.Op, crashObjects)
			for i := range ops {
				ops[i] = store.Op{Type: store.OpPut, Object: newPod(i, rv, rv)}
			}
			err = s.Commit(context.Background(), store.Batch{Ops: ops, ResourceVersion: rv})
		}
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		fmt.Println(r)
	}
}
