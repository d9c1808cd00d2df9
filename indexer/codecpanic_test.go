package indexer_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/memory"
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
	s, err := memory.NewFile(context.Background(), filepath.Join(t.TempDir(), "a.snap"), &store.Options{
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
