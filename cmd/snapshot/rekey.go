package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/snapshot"
)

// encryptedSuffix ends the codec name of a store written with
// indexer.NewEncryptedCodec.
const encryptedSuffix = "+aes256gcm"

// storedCodec stands for the codec a store was written with: Rekey only
// needs its name and type, since it re-seals bytes and never decodes
// objects.
type storedCodec struct{ name, typ string }

func (c storedCodec) Name() string { return c.name }
func (c storedCodec) Type() string { return c.typ }
func (c storedCodec) Encode(interface{}) ([]byte, error) {
	return nil, fmt.Errorf("snapshot: rekey: objects are not encoded: %w", store.ErrInvalid)
}
func (c storedCodec) Decode([]byte) (interface{}, error) {
	return nil, fmt.Errorf("snapshot: rekey: objects are not decoded: %w", store.ErrInvalid)
}

func newRekey() *cobra.Command {
	var primary string
	var old, stores []string
	cmd := &cobra.Command{
		Use:   "rekey <database> --key FILE [--old-key FILE]...",
		Short: "Re-encrypt every object of a database's stores under a new key",
		Long: `rekey rewrites every record of the selected stores (all by default) sealed
under the primary key (--key), reading records sealed under any --old-key. A
store written without encryption is encrypted. Each store is rewritten
atomically. Key files hold 32 raw bytes or their base64. Old bytes may remain
in free pages (bbolt) or until compaction (badger): after a key leak, wipe the
database instead.`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			if primary == "" {
				return usageError{fmt.Errorf("rekey: --key is required")}
			}
			target, err := databaseURL("rekey", a[0])
			if err != nil {
				return err
			}
			key, err := indexer.LoadKey(primary)
			if err != nil {
				return err
			}
			var others []indexer.EncryptionKey
			for _, path := range old {
				k, err := indexer.LoadKey(path)
				if err != nil {
					return err
				}
				others = append(others, k)
			}
			ring, err := indexer.NewKeyRing(key, others...)
			if err != nil {
				return err
			}
			infos, err := snapshot.Stores(cmd.Context(), target)
			if err != nil {
				return err
			}
			for _, name := range stores {
				if !slices.ContainsFunc(infos, func(info store.Info) bool { return info.Name == name }) {
					return fmt.Errorf("rekey: no store %q in %s (it has %q): %w", name, target, storeNames(infos), store.ErrNotFound)
				}
			}
			for _, info := range infos {
				if len(stores) > 0 && !slices.Contains(stores, info.Name) {
					continue
				}
				inner := storedCodec{name: strings.TrimSuffix(info.Codec, encryptedSuffix), typ: info.Type}
				c, err := indexer.NewEncryptedCodec(inner, ring)
				if err != nil {
					return err
				}
				res, err := indexer.Rekey(cmd.Context(), target, info.Name, c)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s: %d records sealed under key %s (encrypted now: %v)\n", info.Name, res.Records, ring.Primary(), res.Encrypted)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&primary, "key", "", "file with the new primary key")
	cmd.Flags().StringArrayVar(&old, "old-key", nil, "file with a key records may still be sealed under (repeatable)")
	cmd.Flags().StringArrayVar(&stores, "store", nil, "store to rekey (repeatable; default all)")
	return cmd
}
