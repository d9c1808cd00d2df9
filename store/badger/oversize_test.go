package badger

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/storetest"
)

// wantOversize checks err is the refusal of an object too large for
// badger: ErrInvalid, naming the key, without quoting the object (badger's
// own error for it dumps its first KiB in hex).
func wantOversize(t *testing.T, what string, err error, key string) {
	t.Helper()
	switch {
	case !errors.Is(err, store.ErrInvalid):
		t.Errorf("%s: err = %.300v; want ErrInvalid", what, err)
	case errors.Is(err, store.ErrWritesStopped):
		t.Errorf("%s: err = %v; an invalid object must not stop the database's writes", what, err)
	case !strings.Contains(err.Error(), key) || strings.Contains(err.Error(), "SECRET"):
		t.Errorf("%s: err = %.300v; want it to name %q and not quote the object", what, err, key)
	}
}

// TestOversizeObjectIsInvalid: an object larger than a badger value-log file
// is refused as invalid input, by a Commit that fits one transaction, by
// one that does not and by a Replace (both written through a write batch)
// and by an Import, and the store is left as it was: an informer then skips
// the object and commits the rest. Before, badger's error was a plain
// error, which an informer retries for ever, and through a write batch it
// was taken for a failed write, which stops every write of the database
// until the process restarts.
func TestOversizeObjectIsInvalid(t *testing.T) {
	for _, cacheSize := range []int{0, 10} {
		t.Run(fmt.Sprintf("cache=%d", cacheSize), func(t *testing.T) { testOversizeObject(t, cacheSize) })
	}
}

func testOversizeObject(t *testing.T, cacheSize int) {
	cfg := smallConfig() // value-log files of 1 MiB
	s, err := open(t.Context(), t.TempDir(), podOptions(t, "pods", cacheSize), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Commit(t.Context(), store.Batch{Ops: []store.Op{{Type: store.OpPut, Object: newPod(1, "1", "web")}}, ResourceVersion: "1"}); err != nil {
		t.Fatal(err)
	}
	big := newPod(0, "2", "web")
	big.Annotations["payload"] = "SECRET" + strings.Repeat("x", int(cfg.valueLogFileSize))
	const bigKey = "ns-0/pod-000000"
	if bp, ok := s.(store.BatchPreparer); ok {
		// What tells an informer which operation of a batch the store
		// rejects (informer.leaveOutRejected).
		_, err := bp.PrepareBatch(store.Batch{Ops: []store.Op{{Type: store.OpPut, Object: big}}})
		wantOversize(t, "PrepareBatch", err, bigKey)
	} else if cacheSize == 0 {
		t.Errorf("%T does not implement store.BatchPreparer", s)
	}
	lim, ok := s.(store.BatchLimiter)
	if !ok {
		t.Fatalf("%T does not implement store.BatchLimiter", s)
	}
	for _, n := range []int{1, 3 * lim.MaxBatchOps()} {
		ops := []store.Op{{Type: store.OpPut, Object: big}}
		for i := 2; i < n+1; i++ {
			ops = append(ops, store.Op{Type: store.OpPut, Object: newPod(i, "2", "web")})
		}
		wantOversize(t, "Commit", s.Commit(t.Context(), store.Batch{Ops: ops, ResourceVersion: "2"}), bigKey)
	}
	wantOversize(t, "Replace", s.Replace([]interface{}{big, newPod(2, "2", "web")}, "2"), bigKey)
	if rv := s.ResourceVersion(); rv != "1" {
		t.Errorf("ResourceVersion = %q after the refused writes; want 1", rv)
	}
	if keys := s.ListKeys(); len(keys) != 1 || keys[0] != "ns-1/pod-000001" {
		t.Errorf("keys after the refused writes: %v; want only ns-1/pod-000001", keys)
	}
	if err := s.Commit(t.Context(), store.Batch{Ops: []store.Op{{Type: store.OpPut, Object: newPod(2, "3", "web")}}, ResourceVersion: "3"}); err != nil {
		t.Errorf("Commit after the refused writes: %v", err)
	}
}

// importOne opens the store pods in a new database and closes it, then
// imports into it the one record rec makes for its Info; it returns the
// database's URL and Import's error.
func importOne(t *testing.T, rec func(store.Info) store.Record) (string, error) {
	t.Helper()
	u := "badger://" + (&url.URL{Path: t.TempDir()}).EscapedPath()
	s, err := store.Open(t.Context(), u, podOptions(t, "pods", 0))
	if err != nil {
		t.Fatal(err)
	}
	info := s.Info()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return u, store.Import(t.Context(), u, info, storetest.Records(rec(info)))
}

func TestOversizeRecordImportIsInvalid(t *testing.T) {
	data := []byte("SECRET" + strings.Repeat("x", int(defaultDBConfig().valueLogFileSize)))
	_, err := importOne(t, func(info store.Info) store.Record {
		return store.Record{Key: "ns/huge", Data: data, Values: make([][]string, len(info.Indexes))}
	})
	wantOversize(t, "Import", err, "ns/huge")
}

// TestEmptyRecordImportIsInvalid: a record without data is refused, as
// every backend refuses it, rather than stored as a record that reads as
// damage.
func TestEmptyRecordImportIsInvalid(t *testing.T) {
	u, err := importOne(t, func(info store.Info) store.Record {
		return store.Record{Key: "ns/empty", Values: make([][]string, len(info.Indexes))}
	})
	if !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), `"ns/empty" has no data`) {
		t.Fatalf("Import of a record without data: %v; want ErrInvalid naming the record", err)
	}
	s, err := store.Open(t.Context(), u, podOptions(t, "pods", 0))
	if err != nil {
		t.Fatalf("Open after the refused import: %v", err)
	}
	defer s.Close()
	if keys := s.ListKeys(); len(keys) != 0 {
		t.Errorf("keys after the refused import: %v; want none", keys)
	}
}

// TestBatchRefusesOversizeValue: a write batch refuses a value badger would
// refuse, whatever record it is, as invalid input and without taking it for
// a failed write, which would stop every write of the database.
func TestBatchRefusesOversizeValue(t *testing.T) {
	cfg := smallConfig()
	s, err := open(t.Context(), t.TempDir(), podOptions(t, "pods", 0), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sh := spaceOf(t, s).sh
	wb := sh.newBatch()
	err = wb.Set([]byte("s\x04testx"), make([]byte, cfg.valueLogFileSize+1))
	wb.Cancel()
	if !errors.Is(err, store.ErrInvalid) {
		t.Errorf("batch.Set of a value of %d bytes: %v; want ErrInvalid", cfg.valueLogFileSize+1, err)
	}
	if ferr := sh.syncFault.failed(); ferr != nil {
		t.Errorf("the refused value was recorded as a failed write: %v", ferr)
	}
	if err := s.Commit(t.Context(), store.Batch{Ops: []store.Op{{Type: store.OpPut, Object: newPod(1, "1", "web")}}, ResourceVersion: "1"}); err != nil {
		t.Errorf("Commit after the refused value: %v", err)
	}
}
