package snapshot_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/snapshot"
)

// taggedSource is a snapshot source of n records of the store name, whose
// data is tagged with tag, at resume point rv.
func taggedSource(name string, n int, tag, rv string) snapshot.Source {
	return snapshot.Source{Name: name, Export: func(ctx context.Context, fn func(store.Record) error) (store.Info, error) {
		for i := 0; i < n; i++ {
			if err := fn(store.Record{Key: fmt.Sprintf("ns/obj-%05d", i), Data: []byte(`{"v":"` + tag + `"}`)}); err != nil {
				return store.Info{}, err
			}
		}
		return store.Info{Name: name, Codec: "json", Type: "test", KeyFunc: "meta", ResourceVersion: rv}, nil
	}}
}

// firstData returns the data of the first record of the store name at url.
func firstData(t *testing.T, url, name string) string {
	t.Helper()
	var s string
	errStop := errors.New("stop")
	_, err := snapshot.Records(t.Context(), url, name, func(r store.Record) error {
		s = string(r.Data)
		return errStop
	})
	if err != nil && !errors.Is(err, errStop) {
		t.Fatal(err)
	}
	return s
}

// changedFileRecords is enough records for one "verify" Progress call
// during the first read of a restore, where the tests change the file.
const changedFileRecords = 4096

// TestRestoreFileReplacedBetweenReads checks that a file renamed over the
// snapshot's path while Restore verifies it (a periodic `snapshot save` to
// the same path) is not what Restore then imports: the second read must be
// of the file verified, not of unverified records under the first file's
// resume point.
func TestRestoreFileReplacedBetweenReads(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "latest.idb")
	newer := filepath.Join(dir, "newer.idb")
	if _, err := snapshot.Save(t.Context(), path, []snapshot.Source{taggedSource("s", changedFileRecords, "old", "100")}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := snapshot.Save(t.Context(), newer, []snapshot.Source{taggedSource("s", changedFileRecords, "new", "200")}, nil); err != nil {
		t.Fatal(err)
	}
	verified, err := snapshot.Read(t.Context(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	dst := "bolt://" + filepath.Join(dir, "dst.db")
	swapped := false
	m, err := snapshot.Restore(t.Context(), path, dst, &snapshot.RestoreOptions{Progress: func(p snapshot.Progress) {
		if p.Op == "verify" && !swapped {
			swapped = true
			// What `snapshot save bolt:///... latest.idb` does at the end.
			if err := os.Rename(newer, path); err != nil {
				t.Error(err)
			}
		}
	}})
	if !swapped {
		t.Fatal("no verify progress: the test did not swap the file")
	}
	if err != nil {
		t.Logf("restore failed (acceptable): %v", err)
		return
	}
	got, err := snapshot.Status(t.Context(), dst, nil)
	if err != nil {
		t.Fatal(err)
	}
	gs, vs := got.Store("s"), verified.Store("s")
	if gs.ContentHash != vs.ContentHash {
		t.Errorf("restore reported success (manifest hash %s, rv %s) but the store holds other objects: hash %s, rv %s; first record: %s",
			m.Stores[0].ContentHash, m.Stores[0].Info.ResourceVersion, gs.ContentHash, gs.Info.ResourceVersion, firstData(t, dst, "s"))
	}
}

// TestRestoreDoesNotImportUnverifiedFile is the same swap, with a file
// whose checksum is wrong (a flipped byte in a record's data): its records
// must not replace the store, as they would if the second read imported
// and committed them before reaching the checksum.
func TestRestoreDoesNotImportUnverifiedFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "latest.idb")
	bad := filepath.Join(dir, "bad.idb")
	if _, err := snapshot.Save(t.Context(), path, []snapshot.Source{taggedSource("s", changedFileRecords, "old", "100")}, nil); err != nil {
		t.Fatal(err)
	}
	data := readFile(t, path)
	i := strings.Index(string(data), `"old"`)
	data[i+1] = 'X' // same length: only the checksum and content hash catch it
	if err := os.WriteFile(bad, data, 0o600); err != nil {
		t.Fatal(err)
	}
	dst := "bolt://" + filepath.Join(dir, "dst.db")
	swapped := false
	_, err := snapshot.Restore(t.Context(), path, dst, &snapshot.RestoreOptions{Progress: func(p snapshot.Progress) {
		if p.Op == "verify" && !swapped {
			swapped = true
			if err := os.Rename(bad, path); err != nil {
				t.Error(err)
			}
		}
	}})
	t.Logf("restore error: %v", err)
	if !swapped {
		t.Fatal("the test did not swap the file")
	}
	infos, serr := snapshot.Stores(t.Context(), dst)
	if serr != nil || len(infos) == 0 {
		return // nothing written: fine
	}
	if d := firstData(t, dst, "s"); strings.Contains(d, "Xld") {
		t.Errorf("restore (error %v) left the store replaced by records that failed the checksum: first record %s", err, d)
	}
}

// TestRestoreFileChangedInPlace changes a record of the file in place (the
// same inode, which the open file still reads) after Restore verified it:
// the import must find that the records differ from those verified before
// the backend commits, fail with store.ErrCorrupt, and leave the store as
// it was.
func TestRestoreFileChangedInPlace(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "latest.idb")
	prev := filepath.Join(dir, "prev.idb")
	if _, err := snapshot.Save(t.Context(), prev, []snapshot.Source{taggedSource("s", 10, "prev", "50")}, nil); err != nil {
		t.Fatal(err)
	}
	dst := "bolt://" + filepath.Join(dir, "dst.db")
	if _, err := snapshot.Restore(t.Context(), prev, dst, nil); err != nil {
		t.Fatal(err)
	}
	before, err := snapshot.Status(t.Context(), dst, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := snapshot.Save(t.Context(), path, []snapshot.Source{taggedSource("s", changedFileRecords, "old", "100")}, nil); err != nil {
		t.Fatal(err)
	}
	off := int64(strings.Index(string(readFile(t, path)), `"old"`) + 1)
	changed := false
	_, err = snapshot.Restore(t.Context(), path, dst, &snapshot.RestoreOptions{Force: true, Progress: func(p snapshot.Progress) {
		if p.Op == "verify" && !changed {
			changed = true
			f, err := os.OpenFile(path, os.O_WRONLY, 0)
			if err != nil {
				t.Error(err)
				return
			}
			defer f.Close()
			if _, err := f.WriteAt([]byte("X"), off); err != nil {
				t.Error(err)
			}
		}
	}})
	if !changed {
		t.Fatal("the test did not change the file")
	}
	if !errors.Is(err, store.ErrCorrupt) || !strings.Contains(err.Error(), "restore") {
		t.Errorf("Restore of a file changed after verification = %v; want an error naming the restore, wrapping store.ErrCorrupt", err)
	}
	after, err := snapshot.Status(t.Context(), dst, nil)
	if err != nil {
		t.Fatal(err)
	}
	if b, a := before.Store("s"), after.Store("s"); a == nil || a.ContentHash != b.ContentHash || a.Info.ResourceVersion != b.Info.ResourceVersion {
		t.Errorf("the store changed: before %+v, after %+v; first record %s", b, a, firstData(t, dst, "s"))
	}
}

// TestConcurrentSavesSamePath overlaps two saves to one path: each must
// write a file of its own, so that the file left at the path is whole
// (whichever finished last), never one torn by the other save writing into
// the same temporary file.
func TestConcurrentSavesSamePath(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "latest.idb")
	if _, err := snapshot.Save(t.Context(), path, []snapshot.Source{taggedSource("s", 10, "good", "1")}, nil); err != nil {
		t.Fatal(err)
	}
	big := make([]byte, 3<<20) // past the writer's 1 MiB buffer: reaches the file
	for i := range big {
		big[i] = 'a'
	}
	block, resume := make(chan struct{}), make(chan struct{})
	slow := snapshot.Source{Name: "slow", Export: func(ctx context.Context, fn func(store.Record) error) (store.Info, error) {
		if err := fn(store.Record{Key: "k1", Data: big}); err != nil {
			return store.Info{}, err
		}
		close(block)
		<-resume
		if err := fn(store.Record{Key: "k2", Data: []byte("x")}); err != nil {
			return store.Info{}, err
		}
		return store.Info{Name: "slow", Codec: "json", Type: "test"}, nil
	}}
	errA := make(chan error, 1)
	go func() {
		_, err := snapshot.Save(context.Background(), path, []snapshot.Source{slow}, nil)
		errA <- err
	}()
	<-block
	_, errB := snapshot.Save(t.Context(), path, []snapshot.Source{taggedSource("s", 10, "second", "2")}, nil)
	close(resume)
	ea := <-errA
	t.Logf("first save: %v; second save: %v", ea, errB)
	if _, err := snapshot.Read(t.Context(), path, nil); err != nil {
		t.Errorf("after two overlapping saves (first: %v, second: %v), the file at %s is unreadable: %v", ea, errB, path, err)
	}
	if ea != nil || errB != nil {
		t.Errorf("overlapping saves failed: %v, %v", ea, errB)
	}
	if left, _ := filepath.Glob(path + ".part*"); len(left) > 0 {
		t.Errorf("temporary files left behind: %q", left)
	}
}

// TestSaveURLLeavesOptionsAlone checks that SaveURL only reads its options,
// as documented: it saves the stores in name order without sorting the
// caller's SaveOptions.Stores.
func TestSaveURLLeavesOptionsAlone(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src.idb")
	if _, err := snapshot.Save(t.Context(), src, []snapshot.Source{taggedSource("a", 3, "a", "1"), taggedSource("b", 3, "b", "2")}, nil); err != nil {
		t.Fatal(err)
	}
	db := "bolt://" + filepath.Join(dir, "db.db")
	if _, err := snapshot.Restore(t.Context(), src, db, nil); err != nil {
		t.Fatal(err)
	}
	o := &snapshot.SaveOptions{Stores: []string{"b", "a"}}
	m, err := snapshot.SaveURL(t.Context(), filepath.Join(dir, "out.idb"), db, o)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(o.Stores, []string{"b", "a"}) {
		t.Errorf("SaveURL changed SaveOptions.Stores to %q", o.Stores)
	}
	if len(m.Stores) != 2 || m.Stores[0].Info.Name != "a" || m.Stores[1].Info.Name != "b" {
		t.Errorf("saved stores %+v; want a and b in name order", m.Stores)
	}
}
