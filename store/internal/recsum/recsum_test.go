package recsum

import (
	"bytes"
	"testing"
)

func TestSealOpen(t *testing.T) {
	key, value := []byte("ns/name"), []byte("an encoded object")
	rec := Seal(key, value)
	if len(rec) != len(value)+Size {
		t.Fatalf("framed record of %d bytes, want %d", len(rec), len(value)+Size)
	}
	got, ok := Open(key, rec)
	if !ok || !bytes.Equal(got, value) {
		t.Fatalf("Open = %q, %v; want %q, true", got, ok, value)
	}
	if got, ok := Open(key, Seal(key, nil)); !ok || len(got) != 0 {
		t.Fatalf("Open of an empty value = %q, %v; want empty, true", got, ok)
	}
	if _, ok := Open([]byte("ns/other"), rec); ok {
		t.Error("Open accepted a record under another key")
	}
	for i := range rec {
		for bit := range 8 {
			bad := bytes.Clone(rec)
			bad[i] ^= 1 << bit
			if _, ok := Open(key, bad); ok {
				t.Fatalf("Open accepted the record with bit %d of byte %d flipped", bit, i)
			}
		}
	}
	for n := range rec {
		if _, ok := Open(key, rec[:n]); ok {
			t.Fatalf("Open accepted the record truncated to %d bytes", n)
		}
	}
	if got := Append([]byte("x"), key, value); !bytes.Equal(got[1:], rec) || got[0] != 'x' {
		t.Errorf("Append = %q, want %q after %q", got, rec, "x")
	}
}

// BenchmarkOpen measures the check of one record of the size of an encoded
// Pod (2.6 KiB): what the frames add to reading it.
func BenchmarkOpen(b *testing.B) {
	key := []byte("\x00\x00\x00\x00\x00\x01\x86\x9f")
	rec := Seal(key, make([]byte, 2600))
	b.SetBytes(int64(len(rec)))
	for b.Loop() {
		if _, ok := Open(key, rec); !ok {
			b.Fatal("checksum mismatch")
		}
	}
}
