package main

import (
	"crypto/sha256"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestVerifyDamagedBadgerLeavesItAlone: a badger directory whose MANIFEST
// was cut short (badger would open it as a new, empty database and delete
// every table) fails verify with exit 3 naming the lost store, and verify
// leaves every file as it was: the tables are still there to look at.
func TestVerifyDamagedBadgerLeavesItAlone(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	url := "badger://" + dir
	fill(t, url, 50, "7")
	if err := os.Truncate(filepath.Join(dir, "MANIFEST"), 12); err != nil {
		t.Fatal(err)
	}
	before := fileSums(t, dir)
	code, out, stderr := cli(t, "verify", url)
	if code != exitCorrupt || !strings.Contains(stderr, podsName) || !strings.Contains(stderr, "no longer holds") {
		t.Errorf("verify of a badger database that lost its tables: exit %d (%s%s); want %d naming the lost store", code, out, stderr, exitCorrupt)
	}
	if diff := cmp.Diff(before, fileSums(t, dir)); diff != "" {
		t.Errorf("verify changed the database's files (-before +after):\n%s", diff)
	}
}

// fileSums returns the SHA-256 of every file of dir but badger's LOCK, by
// name.
func fileSums(t *testing.T, dir string) map[string][32]byte {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	sums := map[string][32]byte{}
	for _, e := range ents {
		if e.Name() == "LOCK" {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		sums[e.Name()] = sha256.Sum256(data)
	}
	return sums
}
