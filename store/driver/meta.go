package driver

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/informerdb/informerdb/store"
)

// Meta is the identity record a persistent backend keeps per store, and
// compares with the options a store is reopened with.
type Meta struct {
	FormatVersion int      `json:"formatVersion"`
	Codec         string   `json:"codec"`
	Type          string   `json:"type"`
	KeyFunc       string   `json:"keyFunc"`
	Scope         string   `json:"scope"`
	Indexes       []string `json:"indexes"`
}

// MetaFor returns the Meta a store opened with o (defaults filled in) at
// formatVersion records.
func MetaFor(o store.Options, formatVersion int) Meta {
	m := Meta{FormatVersion: formatVersion, KeyFunc: o.KeyFuncName, Scope: o.Scope}
	if o.Codec != nil {
		m.Codec, m.Type = o.Codec.Name(), o.Codec.Type()
	}
	for name := range o.Indexers {
		m.Indexes = append(m.Indexes, name)
	}
	sort.Strings(m.Indexes)
	return m
}

// Reopen is what a backend does with a store whose recorded Meta differs from
// the one it is opened with.
type Reopen struct {
	// Reset, when not empty, says why the stored objects and resume point
	// must be dropped (the scope changed): the informer relists.
	Reset string
	// RebuildIndexes says the index set changed: index entries must be
	// rebuilt from the stored objects.
	RebuildIndexes bool
}

// CompareMeta decides how to reopen a store recorded as stored when opened as
// want. A different format version, codec, object type or key function is
// store.ErrIncompatible, naming every difference: the stored bytes or keys
// would be misread. A different scope resets the store; a different index
// set rebuilds indexes. name and where (a file or URL) go into the error.
func CompareMeta(name, where string, stored, want Meta) (Reopen, error) {
	var diffs []string
	if stored.FormatVersion != want.FormatVersion {
		diffs = append(diffs, fmt.Sprintf("format version %d, this build reads %d", stored.FormatVersion, want.FormatVersion))
	}
	if stored.Codec != want.Codec {
		diffs = append(diffs, fmt.Sprintf("codec %q, opened with %q", stored.Codec, want.Codec))
	}
	if stored.Type != want.Type {
		diffs = append(diffs, fmt.Sprintf("object type %q, opened with %q", stored.Type, want.Type))
	}
	if stored.KeyFunc != want.KeyFunc {
		diffs = append(diffs, fmt.Sprintf("key function %q, opened with %q", stored.KeyFunc, want.KeyFunc))
	}
	if len(diffs) > 0 {
		return Reopen{}, fmt.Errorf("store: open %s in %s: stored with %s (delete the store to start over; the informer relists): %w",
			name, where, strings.Join(diffs, "; "), store.ErrIncompatible)
	}
	var r Reopen
	if stored.Scope != want.Scope {
		r.Reset = fmt.Sprintf("scope changed from %q to %q", stored.Scope, want.Scope)
	}
	if !slices.Equal(stored.Indexes, want.Indexes) {
		r.RebuildIndexes = true
	}
	return r, nil
}

// Info returns the store.Info of the store name of backend (its URL
// scheme), recorded with m and the resume point rv.
func (m Meta) Info(backend, name, rv string) store.Info {
	return store.Info{
		Backend:         backend,
		Name:            name,
		FormatVersion:   m.FormatVersion,
		Codec:           m.Codec,
		Type:            m.Type,
		KeyFunc:         m.KeyFunc,
		Scope:           m.Scope,
		Indexes:         slices.Clone(m.Indexes),
		ResourceVersion: rv,
	}
}
