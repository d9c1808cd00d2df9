package main

import (
	"fmt"
	"slices"

	"github.com/spf13/cobra"

	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/snapshot"
)

func newDrop() *cobra.Command {
	var stores []string
	cmd := &cobra.Command{
		Use:   "drop <database> --store NAME [--store NAME]...",
		Short: "Delete stores no informer uses any more from a database",
		Long: `drop deletes each --store from the database: its objects, index data,
metadata and resume point, atomically (after a crash a store is whole or gone);
the other stores are untouched, so their informers do not relist. Every name is
checked first: if one is missing, nothing is dropped. A store this build cannot
read (another format version, damaged metadata) can be dropped too, which is
the way out of it short of deleting the database. A bolt file keeps its size
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
			target, err := databaseURL("drop", a[0])
			if err != nil {
				return err
			}
			names := slices.Compact(slices.Sorted(slices.Values(stores)))
			if slices.Contains(names, "") {
				return usageError{fmt.Errorf("drop: --store with an empty name")}
			}
			// A store this build cannot read (another format version,
			// a damaged metadata record) is listed too: dropping it is
			// the way out of it.
			entries, err := snapshot.ListStores(cmd.Context(), target)
			if err != nil {
				return err
			}
			have := make([]string, len(entries))
			for i, e := range entries {
				have[i] = e.Info.Name
			}
			var missing []string
			for _, name := range names {
				if !slices.Contains(have, name) {
					missing = append(missing, name)
				}
			}
			if len(missing) > 0 {
				return fmt.Errorf("drop: no store %q in %s (it has %q); nothing dropped: %w", missing, target, have, store.ErrNotFound)
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
