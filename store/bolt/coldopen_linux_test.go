//go:build linux

package bolt

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
)

// evict drops path's pages from the page cache, as after a reboot, without
// touching other files (and without root).
func evict(b *testing.B, path string) {
	b.Helper()
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkColdOpen opens a default-mode store whose file is not in the page
// cache, with and without MAP_POPULATE (INFORMERDB_BENCH_PODS Pods of about
// 3 KiB, default 10,000).
func BenchmarkColdOpen(b *testing.B) {
	n := 10000
	if v := os.Getenv("INFORMERDB_BENCH_PODS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			b.Fatal(err)
		}
	}
	codec, err := indexer.NewCodec(&corev1.Pod{})
	if err != nil {
		b.Fatal(err)
	}
	o, err := (&store.Options{Name: "pods", Codec: codec, Indexers: cache.Indexers{
		"namespace": indexer.NamespaceIndexFunc,
	}}).WithDefaults()
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(b.TempDir(), "pods.db")
	s, err := open(b.Context(), path, o)
	if err != nil {
		b.Fatal(err)
	}
	payload := make([]byte, 3000)
	for i := range payload {
		payload[i] = byte('a' + i%26)
	}
	for lo := 0; lo < n; lo += 5000 {
		var ops []store.Op
		for i := lo; i < min(lo+5000, n); i++ {
			ops = append(ops, store.Op{Type: store.OpPut, Object: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
				Namespace: fmt.Sprintf("ns-%02d", i%50), Name: fmt.Sprintf("pod-%06d", i),
				Annotations: map[string]string{"payload": string(payload)},
			}}})
		}
		if err := s.Commit(b.Context(), store.Batch{Ops: ops, ResourceVersion: strconv.Itoa(lo)}); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	for _, pop := range []bool{true, false} {
		b.Run(fmt.Sprintf("populate=%v/pods=%d", pop, n), func(b *testing.B) {
			populate = pop
			defer func() { populate = true }()
			for b.Loop() {
				b.StopTimer()
				evict(b, path)
				b.StartTimer()
				s, err := open(b.Context(), path, o)
				if err != nil {
					b.Fatal(err)
				}
				if got := len(s.ListKeys()); got != n {
					b.Fatalf("%d keys after open; want %d", got, n)
				}
				s.Close()
			}
		})
	}
}
