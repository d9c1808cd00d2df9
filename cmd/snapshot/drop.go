package main

import (
	"errors"
	"fmt"
	"slices"

	"github.com/spf13/cobra"

	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/snapshot"
)

func newDrop() *cobra.Command {
	var stores []string
	cmd := &cobra.Command{
		Use:   "drop <store-url> --store NAME [--store NAME]...",
		Short: "Delete stores no informer uses any more from a database",
		Long: `drop deletes each --store from the database: its objects, index data,
metadata and resume point, atomically (after a crash a store is whole or gone);
the other stores are untouched, so their informers do not relist. Every name is
checked first: if one is missing, nothing is dropped. A store this build cannot
read (another format version, damaged metadata) can be dropped too, which is
the way out of it short of deleting the database; the names cannot be checked
first then, and they are dropped one by one in sorted order up to the first
missing one. A bolt file keeps its size
(later writes reuse the freed pages; compact gives them back), a badger
directory gives the space back as badger compacts it. The database must not be
open in another process.`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			if len(stores) == 0 {
				// Never every store by default: that is deleting the
				// database, which wants no tool.
				return usageError{fmt.Errorf("drop: name the stores to drop with --store (status lists them)")}
			}
			target, err := absURL(a[0])
			if err != nil {
				return err
			}
			if !snapshot.IsURL(target) {
				return usageError{fmt.Errorf("drop: %q is not a store URL (scheme://...)", a[0])}
			}
			names := slices.Compact(slices.Sorted(slices.Values(stores)))
			if slices.Contains(names, "") {
				return usageError{fmt.Errorf("drop: --store with an empty name")}
			}
			infos, err := snapshot.Stores(cmd.Context(), target)
			switch {
			case errors.Is(err, store.ErrIncompatible) || errors.Is(err, store.ErrCorrupt):
				// One store this build cannot read (another format
				// version, a damaged metadata record) fails the listing
				// of all of them, and dropping that store is the way out
				// of it. The names cannot be checked first, so each is
				// dropped in turn, and a missing one stops the drop there.
				fmt.Fprintf(cmd.ErrOrStderr(), "Cannot check the names first, dropping them one by one: %v\n", err)
			case err != nil:
				return err
			default:
				var missing []string
				for _, name := range names {
					if !slices.ContainsFunc(infos, func(info store.Info) bool { return info.Name == name }) {
						missing = append(missing, name)
					}
				}
				if len(missing) > 0 {
					return fmt.Errorf("drop: no store %q in %s (it has %q); nothing dropped: %w", missing, target, storeNames(infos), store.ErrNotFound)
				}
			}
			for _, name := range names {
				if err := store.Drop(cmd.Context(), target, name); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Dropped %s from %s.\n", name, target)
			}
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&stores, "store", nil, "store to drop (repeatable; required)")
	return cmd
}
