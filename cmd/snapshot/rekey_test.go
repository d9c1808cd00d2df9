package main

import (
	"context"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
)

func TestRekey(t *testing.T) {
	dir := t.TempDir()
	url := "bolt://" + filepath.Join(dir, "cache.db")
	fill(t, url, 20, "55")

	keyFile := func(name string, b byte) (string, indexer.EncryptionKey) {
		raw := make([]byte, indexer.KeySize)
		for i := range raw {
			raw[i] = b
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(base64.StdEncoding.EncodeToString(raw)), 0o600); err != nil {
			t.Fatal(err)
		}
		k, err := indexer.LoadKey(path)
		if err != nil {
			t.Fatal(err)
		}
		return path, k
	}
	k1File, k1 := keyFile("k1", 1)
	k2File, k2 := keyFile("k2", 2)

	// open reads every Pod through a codec sealed with ring, or returns the
	// open error.
	open := func(ring *indexer.KeyRing) (int, error) {
		opts := podOptions(t)
		if ring != nil {
			c, err := indexer.NewEncryptedCodec(opts.Codec, ring)
			if err != nil {
				t.Fatal(err)
			}
			opts.Codec = c
		}
		s, err := store.Open(context.Background(), url, opts)
		if err != nil {
			return 0, err
		}
		defer func() {
			if err := s.Close(); err != nil {
				t.Error(err)
			}
		}()
		if rv := s.ResourceVersion(); rv != "55" {
			t.Errorf("resume point %q after rekey, want 55", rv)
		}
		return len(s.List()), nil
	}
	ring := func(keys ...indexer.EncryptionKey) *indexer.KeyRing {
		r, err := indexer.NewKeyRing(keys[0], keys[1:]...)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}

	if code, _, stderr := cli(t, "rekey", url); code != 2 {
		t.Errorf("rekey without --key: exit %d (%s), want 2", code, stderr)
	}
	if code, out, stderr := cli(t, "rekey", url, "--key", k1File); code != 0 {
		t.Fatalf("rekey a plain store: exit %d: %s", code, stderr)
	} else if want := podsName + ": 20 records sealed under key " + k1.ID() + " (encrypted now: true)\n"; out != want {
		t.Errorf("rekey output:\n%s", cmp.Diff(want, out))
	}
	if _, err := open(nil); !errors.Is(err, store.ErrIncompatible) {
		t.Errorf("open plain after rekey: %v, want ErrIncompatible", err)
	}
	if n, err := open(ring(k1)); err != nil || n != 20 {
		t.Errorf("open with k1 after rekey: %d objects, %v; want 20", n, err)
	}

	if code, _, stderr := cli(t, "rekey", url, "--key", k2File); code == 0 {
		t.Errorf("rekey under k2 without k1 as an old key succeeded: %s", stderr)
	}
	if code, _, stderr := cli(t, "rekey", url, "--key", k2File, "--old-key", k1File); code != 0 {
		t.Fatalf("rotate k1 -> k2: exit %d: %s", code, stderr)
	}
	if n, err := open(ring(k2)); err != nil || n != 20 {
		t.Errorf("open with k2 alone after rotation: %d objects, %v; want 20", n, err)
	}
	if _, err := open(ring(k1)); !errors.Is(err, indexer.ErrUnknownKey) {
		t.Errorf("open with k1 alone after rotation: %v, want ErrUnknownKey", err)
	}
}
