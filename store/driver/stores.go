package driver

import (
	"slices"
	"strings"

	"github.com/informerdb/informerdb/store"
)

// StoreInfos returns the Info of every entry, or err, or the error of the
// first entry that has one, leaving out the stores that are gone
// (store.StoreEntry.Gone): a raw driver's Stores made from its ListStores,
// as StoreInfos(d.ListStores(ctx, u)).
func StoreInfos(entries []store.StoreEntry, err error) ([]store.Info, error) {
	if err != nil {
		return nil, err
	}
	infos := make([]store.Info, 0, len(entries))
	for _, e := range entries {
		if e.Gone() {
			continue
		}
		if e.Err != nil {
			return nil, e.Err
		}
		infos = append(infos, e.Info)
	}
	return infos, nil
}

// EntriesOf returns the stores infos, all readable, in name order, as
// store.ListStores returns them: a raw driver's ListStores made from its
// Stores, for a backend that cannot list an unreadable store beside the
// others.
func EntriesOf(infos []store.Info) []store.StoreEntry {
	entries := make([]store.StoreEntry, len(infos))
	for i, info := range infos {
		entries[i] = store.StoreEntry{Info: info}
	}
	slices.SortFunc(entries, func(a, b store.StoreEntry) int { return strings.Compare(a.Info.Name, b.Info.Name) })
	return entries
}
