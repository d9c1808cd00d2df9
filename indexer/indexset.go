package indexer

import (
	"fmt"
	"sort"

	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/internal/typednil"
	"github.com/informerdb/informerdb/store"
)

// IndexSet is an immutable, ordered set of named index functions. Index
// values computed against it are aligned with Names.
type IndexSet struct {
	names []string
	funcs []cache.IndexFunc
	pos   map[string]int
}

// NewIndexSet returns the index set of indexers, ordered by name.
func NewIndexSet(indexers cache.Indexers) (*IndexSet, error) {
	s := &IndexSet{pos: make(map[string]int, len(indexers))}
	for name, f := range indexers {
		if name == "" || f == nil {
			return nil, fmt.Errorf("indexer: index %q: name must be non-empty and function non-nil: %w", name, store.ErrInvalid)
		}
		s.names = append(s.names, name)
	}
	sort.Strings(s.names)
	for i, name := range s.names {
		s.funcs = append(s.funcs, indexers[name])
		s.pos[name] = i
	}
	return s, nil
}

// Names returns the index names in order. The caller must not modify it.
func (s *IndexSet) Names() []string { return s.names }

// Len returns the number of indexes.
func (s *IndexSet) Len() int { return len(s.names) }

// Position returns the position of the named index, or false.
func (s *IndexSet) Position(name string) (int, bool) {
	i, ok := s.pos[name]
	return i, ok
}

// Indexers returns the set as a new cache.Indexers map.
func (s *IndexSet) Indexers() cache.Indexers {
	out := make(cache.Indexers, len(s.names))
	for i, name := range s.names {
		out[name] = s.funcs[i]
	}
	return out
}

// With returns a new set with more indexes added, or ErrIndexExists naming the
// conflicting ones. The error says "indexer conflict", as client-go's does:
// callers match that text (Kubernetes' scheduler tests do).
func (s *IndexSet) With(more cache.Indexers) (*IndexSet, error) {
	var dup []string
	for name := range more {
		if _, ok := s.pos[name]; ok {
			dup = append(dup, name)
		}
	}
	if len(dup) > 0 {
		sort.Strings(dup)
		return nil, fmt.Errorf("indexer: add indexers: indexer conflict: %q: %w", dup, store.ErrIndexExists)
	}
	all := s.Indexers()
	for name, f := range more {
		all[name] = f
	}
	return NewIndexSet(all)
}

// Values computes the index values of obj for every index in the set. A
// function that fails or panics makes Values fail, naming the index: index
// functions are user code, and a panic in one must not take the informer
// down nor leave a half-applied write.
func (s *IndexSet) Values(key string, obj interface{}) ([][]string, error) {
	if len(s.funcs) == 0 {
		return nil, nil
	}
	vals := make([][]string, len(s.funcs))
	for i := range s.funcs {
		v, err := s.ValuesOf(i, key, obj)
		if err != nil {
			return nil, err
		}
		vals[i] = v
	}
	return vals, nil
}

// LookupValues computes what cache.Indexer's Index looks up: the values of
// obj for the index at position i, or an error wrapping store.ErrInvalid
// for a nil object or an index function that fails.
func (s *IndexSet) LookupValues(i int, obj interface{}) ([]string, error) {
	if typednil.Is(obj) {
		return nil, fmt.Errorf("store: index %q: nil object: %w", s.names[i], store.ErrInvalid)
	}
	vals, err := s.ValuesOf(i, "", obj)
	if err != nil {
		return nil, fmt.Errorf("store: index %q: %w", s.names[i], err)
	}
	return vals, nil
}

// ValuesOf computes the values of obj for the index at position i.
func (s *IndexSet) ValuesOf(i int, key string, obj interface{}) ([]string, error) {
	v, err := guard("index function", func() ([]string, error) { return s.funcs[i](obj) })
	if err != nil {
		return nil, fmt.Errorf("indexer: index %q of %q: %w: %w", s.names[i], key, store.ErrInvalid, err)
	}
	return v, nil
}

// guard runs call, turning a panic into an error saying what panicked.
// Key, index and codec functions are user code (a custom MarshalJSON),
// codecs read bytes from disk that may be damaged, and both often run on
// worker goroutines, where a panic no caller can recover ends the process.
func guard[T any](what string, call func() (T, error)) (v T, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s panicked: %v", what, r)
		}
	}()
	return call()
}

// Encode encodes obj with codec, turning a panic into an error (guard).
func Encode(codec store.Codec, obj interface{}) ([]byte, error) {
	return guard("codec", func() ([]byte, error) { return codec.Encode(obj) })
}

// Decode decodes data with codec, turning a panic into an error (guard).
func Decode(codec store.Codec, data []byte) (interface{}, error) {
	return guard("codec", func() (interface{}, error) { return codec.Decode(data) })
}

// GetByObject is cache.Store's Get for a store keyed by kf: getByKey of
// obj's key, or an error wrapping store.ErrInvalid for a nil object or a
// key function that fails.
func GetByObject(kf cache.KeyFunc, obj interface{}, getByKey func(key string) (interface{}, bool, error)) (interface{}, bool, error) {
	if typednil.Is(obj) {
		return nil, false, fmt.Errorf("store: get: nil object: %w", store.ErrInvalid)
	}
	key, err := CallKeyFunc(kf, obj)
	if err != nil {
		return nil, false, fmt.Errorf("store: get %T: key function: %w: %w", obj, store.ErrInvalid, err)
	}
	return getByKey(key)
}

// CallKeyFunc runs a key function, turning a panic into an error (guard).
// Every backend calls key functions through it.
func CallKeyFunc(f cache.KeyFunc, obj interface{}) (string, error) {
	return guard("key function", func() (string, error) { return f(obj) })
}
