package rawdb

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/storetest"
)

func readAll(t *testing.T, r *Records) ([]store.Record, error) {
	t.Helper()
	var out []store.Record
	for {
		rec, err := r.Next(t.Context())
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, rec)
	}
}

func TestRecords(t *testing.T) {
	info := store.Info{Name: "pods", Codec: "json", Indexes: []string{"a", "b"}, ResourceVersion: "7"}
	t.Run("values", func(t *testing.T) {
		data := []byte("{}")
		r, err := NewRecords(info, 3, storetest.Records(store.Record{Key: "ns/a", Data: data, Values: [][]string{{"x"}, nil}}))
		if err != nil {
			t.Fatal(err)
		}
		if r.Meta.FormatVersion != 3 || r.Meta.Codec != "json" || !slices.Equal(r.Meta.Indexes, info.Indexes) || r.ResourceVersion != "7" {
			t.Errorf("Meta %+v, resume point %q; want info's at format version 3", r.Meta, r.ResourceVersion)
		}
		recs, err := readAll(t, r)
		if err != nil || len(recs) != 1 || recs[0].Key != "ns/a" {
			t.Fatalf("records %v, %v; want ns/a", recs, err)
		}
		data[0] = 'X'
		if string(recs[0].Data) != "{}" {
			t.Errorf("Data %q changed with the source's buffer; want a copy", recs[0].Data)
		}
		if _, err := r.Next(t.Context()); !errors.Is(err, io.EOF) {
			t.Errorf("Next after the end: %v; want io.EOF", err)
		}
	})
	t.Run("no values", func(t *testing.T) {
		r, err := NewRecords(info, 3, storetest.Records(store.Record{Key: "ns/a", Data: []byte("{}")}))
		if err != nil {
			t.Fatal(err)
		}
		if r.Meta.Indexes != nil {
			t.Errorf("Meta.Indexes %q; want none for records without values", r.Meta.Indexes)
		}
		if recs, err := readAll(t, r); err != nil || len(recs) != 1 {
			t.Errorf("records %v, %v; want one", recs, err)
		}
	})
	t.Run("empty", func(t *testing.T) {
		r, err := NewRecords(info, 3, storetest.Records())
		if err != nil {
			t.Fatal(err)
		}
		if recs, err := readAll(t, r); err != nil || len(recs) != 0 {
			t.Errorf("records %v, %v; want none", recs, err)
		}
	})
	for _, tc := range []struct {
		name string
		recs []store.Record
		want string
	}{
		{"empty key", []store.Record{{Key: "ns/a", Data: []byte("{}"), Values: [][]string{nil, nil}}, {Key: "", Data: []byte("{}"), Values: [][]string{nil, nil}}}, "record 2: empty key"},
		{"no data", []store.Record{{Key: "ns/a", Values: [][]string{nil, nil}}}, `record "ns/a" has no data`},
		{"values", []store.Record{{Key: "ns/a", Data: []byte("{}"), Values: [][]string{nil}}}, `record "ns/a" has values for 1 indexes, the store has 2`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := NewRecords(info, 3, storetest.Records(tc.recs...))
			if err != nil {
				t.Fatal(err)
			}
			_, err = readAll(t, r)
			if !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v; want ErrInvalid saying %q", err, tc.want)
			}
		})
	}
	t.Run("source error", func(t *testing.T) {
		boom := errors.New("boom")
		if _, err := NewRecords(info, 3, func() (store.Record, error) { return store.Record{}, boom }); !errors.Is(err, boom) || err.Error() != boom.Error() {
			t.Errorf("NewRecords: %v; want the source's error as it is", err)
		}
	})
	t.Run("context", func(t *testing.T) {
		r, err := NewRecords(info, 3, storetest.Records(store.Record{Key: "ns/a", Data: []byte("{}"), Values: [][]string{nil, nil}}))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if _, err := r.Next(ctx); !errors.Is(err, context.Canceled) {
			t.Errorf("Next: %v; want context.Canceled", err)
		}
	})
}

func TestCheckImport(t *testing.T) {
	for _, tc := range []struct {
		info store.Info
		ok   bool
	}{
		{store.Info{Name: "pods", Indexes: []string{"a", "b"}}, true},
		{store.Info{Name: "pods"}, true},
		{store.Info{Name: ""}, false},
		{store.Info{Name: "toolong"}, false},
		{store.Info{Name: "pods", Indexes: []string{"b", "a"}}, false},
		{store.Info{Name: "pods", Indexes: []string{"a", "a"}}, false},
	} {
		err := CheckImport(tc.info, 6)
		if tc.ok != (err == nil) || err != nil && !errors.Is(err, store.ErrInvalid) {
			t.Errorf("CheckImport(%+v) = %v; want ok %v, else ErrInvalid", tc.info, err, tc.ok)
		}
	}
}

// fakeTx holds stores by name, with the error reading each one's metadata,
// listed in order.
type fakeTx struct {
	stores map[string]error
	order  []string
}

func (f *fakeTx) EachStore(ctx context.Context, fn func(name string, info store.Info, err error) error) error {
	for _, name := range f.order {
		err := f.stores[name]
		info := store.Info{}
		if err == nil {
			info = store.Info{Backend: "fake", Name: name}
		}
		if err := fn(name, info, err); err != nil {
			return err
		}
	}
	return nil
}

func (f *fakeTx) Export(ctx context.Context, name string, fn func(store.Record) error) (store.Info, error) {
	if _, ok := f.stores[name]; !ok {
		return store.Info{}, fmt.Errorf("store %q: %w", name, store.ErrNotFound)
	}
	if err := fn(store.Record{Key: "ns/a", Data: []byte("{}")}); err != nil {
		return store.Info{}, err
	}
	return store.Info{Backend: "fake", Name: name}, nil
}

func (f *fakeTx) IndexEntries(ctx context.Context, name string, fn func(index, value, key string) error) error {
	if _, ok := f.stores[name]; !ok {
		return fmt.Errorf("store %q: %w", name, store.ErrNotFound)
	}
	return ImpliedEntries([]string{"app", "node"}, "ns/a", [][]string{{"web", "db"}, {"n1"}}, fn)
}

func TestViewListStores(t *testing.T) {
	tx := &fakeTx{
		stores: map[string]error{
			"ok":    nil,
			"old":   fmt.Errorf("format version 1: %w", store.ErrIncompatible),
			"bad":   fmt.Errorf("meta record: %w", store.ErrCorrupt),
			"gone":  fmt.Errorf("its drop did not finish: %w", store.ErrNotFound),
			"later": nil,
		},
		order: []string{"ok", "old", "bad", "gone", "later"},
	}
	v := &View{Tx: tx, Backend: "fake", Where: "fake:///db", Wrap: func(err error) error { return fmt.Errorf("%w (advice)", err) }}
	entries, err := v.ListStores(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		s := e.Info.Backend + "/" + e.Info.Name
		switch {
		case e.Gone():
			s += " gone"
			if !strings.Contains(e.Err.Error(), "drop it again") {
				t.Errorf("entry %s: %v; want advice to drop it again", s, e.Err)
			}
		case e.Err != nil:
			s += " unreadable"
		}
		if e.Err != nil && (!strings.HasPrefix(e.Err.Error(), "store: list stores fake:///db: ") || !strings.HasSuffix(e.Err.Error(), "(advice)")) {
			t.Errorf("entry %s: error %q does not name the operation and the database, with the advice", s, e.Err)
		}
		got = append(got, s)
	}
	want := []string{"fake/bad unreadable", "fake/gone gone", "fake/later", "fake/ok", "fake/old unreadable"}
	if !slices.Equal(got, want) {
		t.Errorf("entries %q; want %q", got, want)
	}

	tx.stores["broken"] = errors.New("i/o error")
	tx.order = append(tx.order, "broken")
	if _, err := v.ListStores(t.Context()); err == nil || !strings.Contains(err.Error(), "i/o error") {
		t.Errorf("ListStores with a store that fails otherwise: %v; want the call to fail", err)
	}
}

func TestViewExport(t *testing.T) {
	v := &View{Tx: &fakeTx{stores: map[string]error{"ok": nil}}, Backend: "fake", Where: "fake:///db"}
	stop := errors.New("stop")
	if _, err := v.Export(t.Context(), "ok", func(store.Record) error { return stop }); !errors.Is(err, stop) || err.Error() != stop.Error() {
		t.Errorf("Export: %v; want fn's error as it is", err)
	}
	_, err := v.Export(t.Context(), "missing", func(store.Record) error { return nil })
	if !errors.Is(err, store.ErrNotFound) || !strings.HasPrefix(err.Error(), "store: export missing from fake:///db: ") {
		t.Errorf("Export of a missing store: %v; want ErrNotFound naming the operation and the database", err)
	}
	v.Guard = func(fn func() error) (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("panicked: %w", store.ErrCorrupt)
			}
		}()
		return fn()
	}
	_, err = v.Export(t.Context(), "ok", func(store.Record) error { panic("damage") })
	if !errors.Is(err, store.ErrCorrupt) {
		t.Errorf("Export whose read panics: %v; want ErrCorrupt from Guard", err)
	}
}

func TestViewIndexEntries(t *testing.T) {
	v := &View{Tx: &fakeTx{stores: map[string]error{"ok": nil}}, Backend: "fake", Where: "fake:///db"}
	var got []string
	err := v.IndexEntries(t.Context(), "ok", func(index, value, key string) error {
		got = append(got, index+"="+value+" "+key)
		return nil
	})
	want := []string{"app=web ns/a", "app=db ns/a", "node=n1 ns/a"}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("IndexEntries: %q, %v; want %q", got, err, want)
	}
	stop := errors.New("stop")
	n := 0
	err = v.IndexEntries(t.Context(), "ok", func(string, string, string) error {
		n++
		return stop
	})
	if !errors.Is(err, stop) || err.Error() != stop.Error() || n != 1 {
		t.Errorf("IndexEntries whose fn fails: %v after %d calls; want fn's error as it is, after one", err, n)
	}
	err = v.IndexEntries(t.Context(), "missing", func(string, string, string) error { return nil })
	if !errors.Is(err, store.ErrNotFound) || !strings.HasPrefix(err.Error(), "store: index entries of missing from fake:///db: ") {
		t.Errorf("IndexEntries of a missing store: %v; want ErrNotFound naming the operation and the database", err)
	}
}

func TestPrefixEnd(t *testing.T) {
	for _, tc := range []struct{ in, want string }{{"ab", "ac"}, {"a\xff", "b"}, {"\xff\xff", ""}} {
		if got := string(PrefixEnd([]byte(tc.in))); got != tc.want {
			t.Errorf("PrefixEnd(%q) = %q; want %q", tc.in, got, tc.want)
		}
	}
}
