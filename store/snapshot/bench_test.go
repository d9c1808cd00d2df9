package snapshot_test

import (
	"bufio"
	"encoding/binary"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/snapshot"
)

// benchCount is the number of Pods (about 2 KiB each) of the benchmarks;
// SNAPSHOT_BENCH_N changes it.
func benchCount(b *testing.B) int {
	if s := os.Getenv("SNAPSHOT_BENCH_N"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			b.Fatalf("SNAPSHOT_BENCH_N=%q: %v", s, err)
		}
		return n
	}
	return 10000
}

func newClientGoIndexer() cache.Indexer {
	return cache.NewIndexer(cache.DeletionHandlingMetaNamespaceKeyFunc, cache.Indexers{
		cache.NamespaceIndex: cache.MetaNamespaceIndexFunc,
		"node":               byNode,
	})
}

// BenchmarkSave saves a bolt store of n Pods to a file, against what a
// program with client-go's indexer would do to keep the same Pods: encode
// each with the same protobuf codec and write it to a file.
func BenchmarkSave(b *testing.B) {
	n := benchCount(b)
	src := boltURL(b)
	fill(b, src, n, 2048, "1")
	codec := podCodec(b)
	idx := newClientGoIndexer()
	for i := range n {
		if err := idx.Add(pod(i, 2048)); err != nil {
			b.Fatal(err)
		}
	}
	dir := b.TempDir()
	var ours, theirs float64
	b.Run("impl=informerdb", func(b *testing.B) {
		for b.Loop() {
			if _, err := snapshot.SaveURL(b.Context(), filepath.Join(dir, "s.idb"), src, nil); err != nil {
				b.Fatal(err)
			}
		}
		ours = b.Elapsed().Seconds() / float64(b.N)
		b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "objects/s")
	})
	b.Run("impl=client-go", func(b *testing.B) {
		for b.Loop() {
			f, err := os.Create(filepath.Join(dir, "cg.bin"))
			if err != nil {
				b.Fatal(err)
			}
			w := bufio.NewWriterSize(f, 1<<20)
			var buf []byte
			for _, obj := range idx.List() {
				data, err := codec.Encode(obj)
				if err != nil {
					b.Fatal(err)
				}
				buf = binary.AppendUvarint(buf[:0], uint64(len(data)))
				// A bufio.Writer's errors are sticky: the Flush below reports them.
				_, _ = w.Write(buf)
				_, _ = w.Write(data)
			}
			if err := w.Flush(); err != nil {
				b.Fatal(err)
			}
			if err := f.Sync(); err != nil {
				b.Fatal(err)
			}
			f.Close()
		}
		theirs = b.Elapsed().Seconds() / float64(b.N)
		b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "objects/s")
	})
	if theirs > 0 {
		b.Logf("save time informerdb/client-go ratio: %.2f", ours/theirs)
	}
}

// BenchmarkRestore restores a file of n Pods into a new bolt database,
// against rebuilding client-go's indexer from the same bytes (decode each
// object, Add it): what a cold start does after its LIST, without the
// network.
func BenchmarkRestore(b *testing.B) {
	n := benchCount(b)
	src := boltURL(b)
	fill(b, src, n, 2048, "1")
	file := snapPath(b)
	if _, err := snapshot.SaveURL(b.Context(), file, src, nil); err != nil {
		b.Fatal(err)
	}
	codec := podCodec(b)
	var ours, theirs float64
	b.Run("impl=informerdb", func(b *testing.B) {
		dir := b.TempDir()
		i := 0
		for b.Loop() {
			i++
			dst := "bolt://" + filepath.Join(dir, strconv.Itoa(i)+".db")
			if _, err := snapshot.Restore(b.Context(), file, dst, nil); err != nil {
				b.Fatal(err)
			}
		}
		ours = b.Elapsed().Seconds() / float64(b.N)
		b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "objects/s")
	})
	b.Run("impl=client-go", func(b *testing.B) {
		for b.Loop() {
			idx := newClientGoIndexer()
			_, err := snapshot.Read(b.Context(), file, func(_ string, rec store.Record) error {
				obj, err := codec.Decode(rec.Data)
				if err != nil {
					return err
				}
				return idx.Add(obj)
			})
			if err != nil {
				b.Fatal(err)
			}
		}
		theirs = b.Elapsed().Seconds() / float64(b.N)
		b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "objects/s")
	})
	if theirs > 0 {
		b.Logf("restore time informerdb/client-go ratio: %.2f", ours/theirs)
	}
}
