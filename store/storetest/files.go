package storetest

import (
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/informerdb/informerdb/store"
)

// Records returns an Import source (see store.RawDriver.Import) that
// yields recs, then io.EOF.
func Records(recs ...store.Record) func() (store.Record, error) {
	return func() (store.Record, error) {
		if len(recs) == 0 {
			return store.Record{}, io.EOF
		}
		r := recs[0]
		recs = recs[1:]
		return r, nil
	}
}

// DirListing describes every entry under dir: its mode, and the contents
// of regular files, so that comparing two listings shows any change an
// operation made to a directory it must leave alone.
func DirListing(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		desc := fi.Mode().String()
		if fi.Mode().IsRegular() {
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			desc += " " + string(data)
		}
		out[path] = desc
		return nil
	})
	if err != nil {
		t.Fatalf("listing %s: %v", dir, err)
	}
	return out
}

// DecodeCounter is a codec that counts its decodes, to check what a store
// decodes (a bounded mode's reads, a backfill).
type DecodeCounter struct {
	store.Codec
	Decodes atomic.Int64
}

// Decode counts the call and decodes with the wrapped codec.
func (c *DecodeCounter) Decode(data []byte) (interface{}, error) {
	c.Decodes.Add(1)
	return c.Codec.Decode(data)
}
