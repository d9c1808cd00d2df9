package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	bbolt "go.etcd.io/bbolt"

	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/snapshot"
)

// oldName is the store the drop tests drop: what a controller-runtime
// cache leaves behind when it stops watching a namespace.
const oldName = "core/v1/ConfigMap@ns=old"

// twoStores fills the database at url with the stores podsName (n Pods at
// rv) and oldName (3 Pods at 9), and returns their status.
func twoStores(t *testing.T, url string, n int, rv string) (kept, old *snapshot.StoreHeader) {
	t.Helper()
	fill(t, url, n, rv)
	o := podOptions(t)
	o.Name = oldName
	s, err := store.Open(t.Context(), url, o)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Replace([]interface{}{pod(1), pod(2), pod(3)}, "9"); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	m := statusJSON(t, url)
	kept, old = m.Store(podsName), m.Store(oldName)
	if kept == nil || old == nil || len(m.Stores) != 2 {
		t.Fatalf("status of the fixture: %+v; want %s and %s", m.Stores, podsName, oldName)
	}
	return kept, old
}

func TestDrop(t *testing.T) {
	for _, url := range []string{
		"bolt://" + filepath.Join(t.TempDir(), "cache.db"),
		"badger://" + filepath.Join(t.TempDir(), "db"),
		"memory://" + filepath.Join(t.TempDir(), "m.snap"),
		"memdb://" + filepath.Join(t.TempDir(), "m.snap"),
	} {
		t.Run(strings.SplitN(url, ":", 2)[0], func(t *testing.T) {
			kept, _ := twoStores(t, url, 20, "77")
			code, out, stderr := cli(t, "drop", url, "--store", oldName)
			if code != exitOK {
				t.Fatalf("drop: exit %d: %s", code, stderr)
			}
			if want := "Dropped " + oldName + " from " + url + ".\n"; out != want {
				t.Errorf("drop printed %q; want %q", out, want)
			}
			m := statusJSON(t, url)
			if len(m.Stores) != 1 || m.Store(oldName) != nil {
				t.Errorf("stores after drop: %+v; want %s alone", m.Stores, podsName)
			}
			if diff := cmp.Diff(kept, m.Store(podsName)); diff != "" {
				t.Errorf("drop changed the other store (-before +after):\n%s", diff)
			}
			if code, out, stderr := cli(t, "verify", url); code != exitOK || !strings.HasPrefix(out, "OK") {
				t.Errorf("verify after drop: exit %d: %s%s", code, out, stderr)
			}
			// Dropped, the store is missing like any other name.
			code, _, stderr = cli(t, "drop", url, "--store", oldName)
			if code != exitError || !strings.Contains(stderr, oldName) || !strings.Contains(stderr, "not found") {
				t.Errorf("second drop: exit %d (%s); want %d naming the store as not found", code, stderr, exitError)
			}
		})
	}
}

// TestDropChecksEveryNameFirst checks that a drop naming a store the
// database lacks fails, names it, and drops none of the others.
func TestDropChecksEveryNameFirst(t *testing.T) {
	url := "bolt://" + filepath.Join(t.TempDir(), "cache.db")
	twoStores(t, url, 5, "7")
	before := statusJSON(t, url)
	code, out, stderr := cli(t, "drop", url, "--store", oldName, "--store", "v1/typo", "--store", podsName)
	if code != exitError {
		t.Errorf("drop with a missing name: exit %d (%s); want %d", code, stderr, exitError)
	}
	for _, want := range []string{"v1/typo", "nothing dropped", podsName} {
		if !strings.Contains(stderr, want) {
			t.Errorf("error %q does not mention %q", stderr, want)
		}
	}
	if out != "" {
		t.Errorf("a refused drop printed %q", out)
	}
	if diff := cmp.Diff(before, statusJSON(t, url)); diff != "" {
		t.Errorf("a refused drop changed the database (-before +after):\n%s", diff)
	}

	// All the names, one given twice: both go, each said once.
	code, out, stderr = cli(t, "drop", url, "--store", oldName, "--store", podsName, "--store", oldName)
	if code != exitOK {
		t.Fatalf("drop of both stores: exit %d: %s", code, stderr)
	}
	if strings.Count(out, "Dropped ") != 2 || !strings.Contains(out, oldName) || !strings.Contains(out, podsName) {
		t.Errorf("drop printed %q; want one line per store", out)
	}
	if m := statusJSON(t, url); len(m.Stores) != 0 {
		t.Errorf("stores left: %+v", m.Stores)
	}
}

// TestDropRefusals checks the exit codes of the drops refused: usage
// errors, a database that does not exist, a store open in this process.
func TestDropRefusals(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cache.db")
	url := "bolt://" + path
	twoStores(t, url, 5, "7")
	_, file := savedFile(t, 2)
	for _, tc := range []struct {
		name string
		args []string
		code int
		says string
	}{
		{"no --store", []string{"drop", url}, exitUsage, "--store"},
		{"empty --store", []string{"drop", url, "--store", ""}, exitUsage, "empty"},
		{"no URL", []string{"drop", "--store", oldName}, exitUsage, "arg"},
		{"two URLs", []string{"drop", url, url, "--store", oldName}, exitUsage, "arg"},
		{"snapshot file", []string{"drop", file, "--store", podsName}, exitUsage, "is a snapshot file, not a database"},
		{"unknown scheme", []string{"drop", "nosuch:///x", "--store", podsName}, exitUsage, `unknown scheme "nosuch"`},
		{"file URL", []string{"drop", "file://" + path, "--store", podsName}, exitUsage, `unknown scheme "file"`},
		{"missing database", []string{"drop", "bolt://" + filepath.Join(dir, "none.db"), "--store", podsName}, exitError, "not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := cli(t, tc.args...)
			if code != tc.code || !strings.Contains(stderr, tc.says) {
				t.Errorf("%v: exit %d (%s); want %d mentioning %q", tc.args, code, stderr, tc.code, tc.says)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "none.db")); !os.IsNotExist(err) {
		t.Errorf("drop from a missing database created it: %v", err)
	}

	// A store open in this process: refused, the store kept.
	o := podOptions(t)
	o.Name = oldName
	s, err := store.Open(t.Context(), url, o)
	if err != nil {
		t.Fatal(err)
	}
	code, _, stderr := cli(t, "drop", url, "--store", oldName)
	if code != exitLocked {
		t.Errorf("drop of a store in use: exit %d (%s); want %d", code, stderr, exitLocked)
	}
	if n := len(s.ListKeys()); n != 3 {
		t.Errorf("the store refused to drop holds %d objects; want 3", n)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// A relative path is the file in the working directory.
	t.Chdir(dir)
	if code, out, stderr := cli(t, "drop", "bolt://cache.db", "--store", oldName); code != exitOK || !strings.Contains(out, path) {
		t.Errorf("drop bolt://cache.db in its directory: exit %d: %s%s", code, out, stderr)
	}
}

// TestDropUnreadableStore checks the way out of a store this build cannot
// read: status names it (exit 3) and still describes the other store, and
// drop removes it and leaves the other store as it was. Its name is checked with the others:
// with a missing name beside it, nothing is dropped.
func TestDropUnreadableStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	url := "bolt://" + path
	kept, _ := twoStores(t, url, 5, "7")
	markNewerFormat(t, path, oldName)
	code, out, stderr := cli(t, "status", url)
	if code != exitCorrupt || !strings.Contains(stderr, "format version 99") || !strings.Contains(stderr, oldName) {
		t.Fatalf("status with an unreadable store: exit %d (%s); want %d naming the store and its format version", code, stderr, exitCorrupt)
	}
	if !strings.Contains(out, podsName) || strings.Contains(out, oldName) {
		t.Errorf("status with an unreadable store printed %q; want the readable store %s described, and only it", out, podsName)
	}

	// Every name is checked first, the unreadable store's too: with a
	// missing one, nothing is dropped.
	code, _, stderr = cli(t, "drop", url, "--store", oldName, "--store", "v1/typo")
	if code != exitError || !strings.Contains(stderr, "v1/typo") || !strings.Contains(stderr, "nothing dropped") {
		t.Errorf("drop of the unreadable store and a missing name: exit %d (%s); want %d naming the missing one", code, stderr, exitError)
	}
	if code, _, stderr := cli(t, "status", url); code != exitCorrupt || !strings.Contains(stderr, "format version 99") {
		t.Fatalf("status after the refused drop: exit %d (%s); want the unreadable store still there (exit %d)", code, stderr, exitCorrupt)
	}
	code, out, stderr = cli(t, "drop", url, "--store", oldName)
	if code != exitOK {
		t.Fatalf("drop of the unreadable store: exit %d: %s", code, stderr)
	}
	if want := "Dropped " + oldName + " from " + url + ".\n"; out != want {
		t.Errorf("drop printed %q; want %q", out, want)
	}
	m := statusJSON(t, url)
	if len(m.Stores) != 1 {
		t.Fatalf("stores after drop: %+v; want %s alone", m.Stores, podsName)
	}
	if diff := cmp.Diff(kept, m.Store(podsName)); diff != "" {
		t.Errorf("drop changed the other store (-before +after):\n%s", diff)
	}
}

// markNewerFormat writes a later build's format version (99) into the
// metadata record of the store name of the bolt file at path. The record is
// framed as bolt format version 4 frames every record: the value, then the
// CRC32C (Castagnoli) of the bbolt key and the value, 4 bytes big-endian. The
// frame is checked and written anew, so the store is refused for its format
// version, not for a checksum.
func markNewerFormat(t *testing.T, path, name string) {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	key := []byte("meta")
	crc := func(v []byte) uint32 {
		tab := crc32.MakeTable(crc32.Castagnoli)
		return crc32.Update(crc32.Checksum(key, tab), tab, v)
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		meta := tx.Bucket([]byte("stores")).Bucket([]byte(name)).Bucket([]byte("meta"))
		rec := meta.Get(key)
		if len(rec) < 4 {
			return fmt.Errorf("metadata record of %d bytes, not framed", len(rec))
		}
		val := rec[:len(rec)-4]
		if got, want := binary.BigEndian.Uint32(rec[len(val):]), crc(val); got != want {
			return fmt.Errorf("metadata record's checksum %08x, want %08x", got, want)
		}
		var m map[string]interface{}
		if err := json.Unmarshal(val, &m); err != nil {
			return err
		}
		m["formatVersion"] = 99
		data, err := json.Marshal(m)
		if err != nil {
			return err
		}
		return meta.Put(key, binary.BigEndian.AppendUint32(data, crc(data)))
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestUnreadableStoreDoesNotBlockOthers checks that a store this build
// cannot read (after a downgrade) keeps neither save nor restore nor verify
// from acting on the other stores: status describes them, drop can act on
// it, and the stores this build reads can be backed up and restored.
func TestUnreadableStoreDoesNotBlockOthers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	url := "bolt://" + path
	kept, _ := twoStores(t, url, 5, "7")
	markNewerFormat(t, path, oldName)
	file := filepath.Join(t.TempDir(), "s.idb")
	if code, _, stderr := cli(t, "save", url, file, "--store", podsName); code != 0 {
		t.Errorf("save --store %s (a readable store) beside an unreadable one: exit %d: %s", podsName, code, stderr)
	}
	// Saving every store includes the unreadable one: refused, naming it.
	code, _, stderr := cli(t, "save", url, filepath.Join(t.TempDir(), "all.idb"))
	if code != exitCorrupt || !strings.Contains(stderr, oldName) || !strings.Contains(stderr, "save") {
		t.Errorf("save of every store, one unreadable: exit %d (%s); want %d naming the save and the store", code, stderr, exitCorrupt)
	}

	// Verify checks the readable store, and names the other in its error.
	m, err := snapshot.Verify(t.Context(), url, nil)
	if !errors.Is(err, store.ErrIncompatible) || !strings.Contains(err.Error(), oldName) {
		t.Errorf("Verify beside an unreadable store = %v; want an error wrapping store.ErrIncompatible naming %s", err, oldName)
	}
	if m == nil || m.Store(podsName) == nil || m.Store(podsName).ContentHash != kept.ContentHash {
		t.Errorf("Verify beside an unreadable store verified %+v; want %s", m, podsName)
	}

	// A restore of the readable store, emptied, without --force.
	if code, _, stderr := cli(t, "drop", url, "--store", podsName); code != 0 {
		t.Fatalf("drop: exit %d: %s", code, stderr)
	}
	if code, _, stderr := cli(t, "restore", file, url); code != 0 {
		t.Errorf("restore of %s beside an unreadable store: exit %d: %s", podsName, code, stderr)
	}
	// Without --force, a restore cannot tell whether the unreadable store
	// it would replace is empty: refused, naming it.
	other := filepath.Join(t.TempDir(), "other.idb")
	if _, err := snapshot.Save(t.Context(), other, []snapshot.Source{{Name: oldName, Export: func(context.Context, func(store.Record) error) (store.Info, error) {
		return store.Info{Name: oldName, Codec: "json", Type: "v1/Pod"}, nil
	}}}, nil); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := cli(t, "restore", other, url); code != exitCorrupt || !strings.Contains(stderr, oldName) {
		t.Errorf("restore over the unreadable store without --force: exit %d (%s); want %d naming it", code, stderr, exitCorrupt)
	}
}
