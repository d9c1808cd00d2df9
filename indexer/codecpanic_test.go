package indexer_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
	_ "github.com/informerdb/informerdb/store/memory" // memory:// for the files of these tests
)

// bomb's MarshalJSON panics: user code reached from the codec, as a CRD Go
// type's custom marshaller is.
type bomb struct{}

func (*bomb) MarshalJSON() ([]byte, error) { panic("MarshalJSON boom") }

type bombObj struct {
	Name string `json:"name"`
	Bomb *bomb  `json:"bomb,omitempty"`
}

func bombStore(t *testing.T) store.Store {
	t.Helper()
	c, err := indexer.NewJSONCodec(&bombObj{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := store.Open(context.Background(), "memory://"+filepath.Join(t.TempDir(), "a.snap"), &store.Options{
		Name:        "bombs",
		Codec:       c,
		KeyFunc:     func(o interface{}) (string, error) { return o.(*bombObj).Name, nil },
		KeyFuncName: "bomb-name",
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TestCodecPanicIsAnError: an object whose encoding panics is bad input
// (DESIGN invariant 8): the write fails with ErrInvalid naming the cause
// and leaves the store unchanged, whether it is encoded by the caller's
// goroutine (a small write) or by Prepare's workers (a batch of 128 ops or
// more, where a panic would end the process).
func TestCodecPanicIsAnError(t *testing.T) {
	check := func(t *testing.T, what string, err error, s store.Store) {
		t.Helper()
		if !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), "codec panicked") {
			t.Errorf("%s: err = %v, want ErrInvalid saying the codec panicked", what, err)
		}
		if keys := s.ListKeys(); len(keys) != 0 {
			t.Errorf("%s: store changed: %v", what, keys)
		}
	}
	t.Run("one object", func(t *testing.T) {
		s := bombStore(t)
		check(t, "Add", s.Add(&bombObj{Name: "x", Bomb: &bomb{}}), s)
	})
	t.Run("batch encoded in parallel", func(t *testing.T) {
		s := bombStore(t)
		list := make([]interface{}, 200)
		for i := range list {
			list[i] = &bombObj{Name: fmt.Sprintf("o%03d", i)}
		}
		list[150].(*bombObj).Bomb = &bomb{}
		check(t, "Replace", s.Replace(list, "5"), s)
	})
}

// fuse's UnmarshalJSON panics on "boom": a codec running users' code on
// bytes read back from disk.
type fuse string

func (f *fuse) UnmarshalJSON(b []byte) error {
	if string(b) == `"boom"` {
		panic("UnmarshalJSON boom")
	}
	return json.Unmarshal(b, (*string)(f))
}

type fuseObj struct {
	Name string `json:"name"`
	Fuse fuse   `json:"fuse"`
}

// TestCodecPanicOnDecodeIsAnError: a stored record whose decoding panics
// fails the open (or is reported like any undecodable record), it does not
// crash the process that opens the file.
func TestCodecPanicOnDecodeIsAnError(t *testing.T) {
	c, err := indexer.NewJSONCodec(&fuseObj{})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "a.snap")
	opts := &store.Options{
		Name:        "fuses",
		Codec:       c,
		KeyFunc:     func(o interface{}) (string, error) { return o.(*fuseObj).Name, nil },
		KeyFuncName: "fuse-name",
	}
	s, err := store.Open(context.Background(), "memory://"+path, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Add(&fuseObj{Name: "x", Fuse: "boom"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	var reopened store.Store
	if panics(func() { reopened, err = store.Open(context.Background(), "memory://"+path, opts) }) {
		t.Fatal("opening a file with a record whose decoding panics panicked")
	}
	if err == nil {
		defer reopened.Close()
		t.Fatalf("open succeeded over a record that cannot be decoded; keys %v", reopened.ListKeys())
	}
	if !strings.Contains(err.Error(), "codec panicked") {
		t.Errorf("open error %q does not say the codec panicked", err)
	}
}
