package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/badger"
	"github.com/informerdb/informerdb/store/bolt"
	"github.com/informerdb/informerdb/store/snapshot"

	// The command reads and writes every backend's databases.
	_ "github.com/informerdb/informerdb/store/memdb"
	_ "github.com/informerdb/informerdb/store/memory"
)

// indexEntries are the readers of persisted index entries, for verify.
var indexEntries = map[string]snapshot.IndexEntries{
	bolt.Scheme:   bolt.IndexEntries,
	badger.Scheme: badger.IndexEntries,
}

// globals are the flags every command has.
type globals struct {
	quiet bool
}

func newRoot() *cobra.Command {
	g := &globals{}
	root := &cobra.Command{
		Use:   "snapshot",
		Short: "Save, restore, inspect and verify informerdb databases",
		Long: `snapshot copies the stores of an informerdb database (objects, index values,
identity and resume point) to a portable, checksummed file, and restores such a
file into a database of any backend. A database is a store URL, as store.Open
takes (bolt:///abs/file.db, badger:///abs/dir, memory:///abs/file.snap,
memdb:///abs/file.snap, with parameters such as ?lock_timeout=30s), or the path
of an existing one, recognised by its content (a bolt file, a badger directory,
a memory or memdb snapshot file). A file is a snapshot file save wrote. Bolt
and badger databases must not be open in another process.
A running process's database is read through the handler it mounts
(snapshot.NewHandler): give save, status, ls and get its http:// or https://
address, e.g. http://localhost:8081/debug/informerdb/ through kubectl
port-forward.

Exit codes: 0 success, 1 other errors, 2 usage, 3 corrupt or incompatible data,
4 restore target not empty, 5 database locked or in use, 130 and 143 stopped by
SIGINT and SIGTERM (the first one stops the command, removing its temporary files).`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	// An unknown command is a usage error (cobra's own check of the root's
	// arguments returns a plain error, which would exit 1). So is no
	// command: the usage goes to stderr, and the exit code says nothing
	// ran; the help asked for (--help, help) goes to stdout and exits 0.
	root.Args = args(cobra.NoArgs)
	root.RunE = func(cmd *cobra.Command, _ []string) error {
		fmt.Fprint(cmd.ErrOrStderr(), cmd.UsageString())
		return usageError{errors.New("no command given; see the commands above, or snapshot help <command>")}
	}
	root.PersistentFlags().BoolVarP(&g.quiet, "quiet", "q", false, "no progress on stderr")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	addRemoteFlags(root)
	root.AddCommand(
		newSave(g), newRestore(g), newStatus(g), newVerify(g),
		newLs(), newGet(), newByIndex(), newCompact(), newRekey(), newDrop(),
	)
	return root
}

// args wraps a cobra argument check so that its errors are usage errors.
func args(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, a []string) error {
		if err := check(cmd, a); err != nil {
			return usageError{err}
		}
		return nil
	}
}

func newSave(g *globals) *cobra.Command {
	var stores []string
	cmd := &cobra.Command{
		Use:   "save <database> <file>",
		Short: "Write a snapshot of a database's stores to a file",
		Long: `save reads each store of the database in one consistent view and writes them
to <file> (as a new temporary file <file>.part-*, fsynced, then renamed; mode
0600).`,
		Args: args(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, a []string) error {
			src, err := openSource("save", a[0])
			if err != nil {
				return err
			}
			if snapshot.IsHTTP(src.ref) {
				return saveRemote(cmd, src.ref, a[1], stores)
			}
			if src.file {
				return usageError{fmt.Errorf("save: %s is a snapshot file already; save reads a database (a bolt file, a badger directory or a store URL)", a[0])}
			}
			p := newProgress(cmd, g, "save")
			track, forget := temps.track()
			m, err := snapshot.SaveURL(cmd.Context(), a[1], src.ref, &snapshot.SaveOptions{Stores: stores, Progress: p.report, TempFile: track})
			forget()
			p.done()
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Saved %d stores, %d objects, to %s (%d bytes).\n", len(m.Stores), objectCount(m), a[1], m.Size)
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&stores, "store", nil, "save only this store (repeatable)")
	return cmd
}

func newRestore(g *globals) *cobra.Command {
	var o snapshot.RestoreOptions
	cmd := &cobra.Command{
		Use:   "restore <file> <database>",
		Short: "Restore a snapshot file into a database of any backend",
		Long: `restore verifies the whole file (checksum, counts, content hashes) before it
writes anything, refuses stores that hold objects or a resume point unless
--force, and replaces each store atomically. --drop-resume-point makes the
informer relist on its next start. A new database is named by its store URL
(bolt:///abs/file.db), which says its backend.`,
		Args: args(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, a []string) error {
			src, err := openSource("restore", a[0])
			if err != nil {
				return err
			}
			if !src.file {
				return usageError{fmt.Errorf("restore: %s is a database, not a snapshot file; save it to a file first (snapshot save %s FILE)", a[0], a[0])}
			}
			dst, err := databaseURL("restore", a[1])
			if err != nil {
				return err
			}
			p := newProgress(cmd, g, "restore")
			o.Progress = p.report
			m, err := snapshot.Restore(cmd.Context(), src.ref, dst, &o)
			p.done()
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Restored %d stores, %d objects, into %s.\n", len(m.Stores), objectCount(m), m.Source)
			return nil
		},
	}
	cmd.Flags().BoolVar(&o.Force, "force", false, "replace stores that hold objects or a resume point")
	cmd.Flags().BoolVar(&o.DropResumePoint, "drop-resume-point", false, "restore without resume points, so that informers relist")
	cmd.Flags().StringArrayVar(&o.Stores, "store", nil, "restore only this store (repeatable)")
	return cmd
}

func newStatus(g *globals) *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "status <file|database>",
		Short: "Describe the stores of a snapshot file or a database",
		Long: `status prints per store the object count, resume point, index names, type,
codec, scope, bytes and a content hash that is the same for the same objects in
any backend or file. A file is verified on the way. A store of a database that
this build cannot read (another format version, damaged metadata) is named in
the error, and the others are still described (exit 3).`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			src, err := openSource("status", a[0])
			if err != nil {
				return err
			}
			p := newProgress(cmd, g, "status")
			var m *snapshot.Manifest
			if snapshot.IsHTTP(src.ref) {
				m, err = remoteStatus(cmd, src.ref)
			} else {
				m, err = snapshot.Status(cmd.Context(), src.ref, p.report)
			}
			p.done()
			if m == nil {
				return err
			}
			// With stores that cannot be read, the others are still
			// described, and the error (exit 3) names the rest.
			if perr := printManifest(cmd.OutOrStdout(), format, m); perr != nil {
				return errors.Join(err, perr)
			}
			return err
		},
	}
	addFormat(cmd, &format)
	return cmd
}

func newVerify(g *globals) *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "verify <file|database>",
		Short: "Check a snapshot file's checksum, or a database's records, objects and indexes",
		Long: `verify checks a snapshot file (structure, checksum, counts, content hashes), or
a database: every record's checksum, that every object decodes (for types
client-go's scheme knows), and that the indexes agree with the objects. It never
changes what it checks: a badger directory is read from a private copy in the
temporary directory ($TMPDIR). Any damage is exit code 3.`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			src, err := openSource("verify", a[0])
			if err != nil {
				return err
			}
			p := newProgress(cmd, g, "verify")
			m, err := snapshot.Verify(cmd.Context(), src.ref, &snapshot.VerifyOptions{
				Entries: indexEntries, Progress: p.report,
				Decoder: func(info store.Info) (func([]byte) error, error) {
					dec, err := decoderFor(info)
					if err != nil {
						// A type client-go's scheme does not know, or
						// an encrypted codec: checksums only.
						if !g.quiet {
							fmt.Fprintf(cmd.ErrOrStderr(), "Note: objects not decoded (their checksums are checked): %v\n", err)
						}
						return nil, nil
					}
					return func(data []byte) error {
						_, err := dec(data)
						return err
					}, nil
				},
			})
			p.done()
			if err != nil {
				return err
			}
			if format == "simple" {
				fmt.Fprintf(cmd.OutOrStdout(), "OK: %s: %d stores verified.\n", m.Source, len(m.Stores))
				return nil
			}
			return printManifest(cmd.OutOrStdout(), format, m)
		},
	}
	addFormat(cmd, &format)
	return cmd
}

func newCompact() *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "compact <bolt-file>",
		Short: "Rewrite a bolt file without its free pages, replacing it atomically",
		Long: `compact copies a bolt database into a new file without free pages, as
"bbolt compact" does, and renames it over the original, keeping its owner and
mode. It refuses a file that another process holds, and, like every command, a
path other users could tamper with (a symbolic link, a file or directory others
may write).`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			path := a[0]
			if p, ok := strings.CutPrefix(path, "bolt://"); ok && p != "" {
				path = p
				if strings.Contains(path, "?") {
					return usageError{fmt.Errorf("compact: %s: a bolt URL with parameters; give the file, and the lock timeout with --lock-timeout", a[0])}
				}
			} else if snapshot.IsURL(path) {
				return usageError{fmt.Errorf("compact: %s is not a bolt file; compact works on bolt files only (a path, or bolt:///path)", a[0])}
			}
			if fi, err := os.Stat(path); err == nil && fi.IsDir() {
				return usageError{fmt.Errorf("compact: %s is a directory; compact works on bolt files", path)}
			}
			before, after, err := bolt.Compact(cmd.Context(), path, timeout)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Compacted %s: %d -> %d bytes.\n", path, before, after)
			return nil
		},
	}
	cmd.Flags().DurationVar(&timeout, "lock-timeout", time.Second, "how long to wait for another process's lock")
	return cmd
}

// objectCount is the number of objects of m's stores.
func objectCount(m *snapshot.Manifest) int64 {
	var n int64
	for _, s := range m.Stores {
		n += s.Objects
	}
	return n
}

// addFormat adds -w, the format of status and verify, checked before the
// command runs.
func addFormat(cmd *cobra.Command, format *string) {
	cmd.Flags().StringVarP(format, "write-out", "w", "simple", "output format: simple, json or table")
	cmd.PreRunE = func(*cobra.Command, []string) error {
		switch *format {
		case "simple", "json", "table":
			return nil
		}
		return usageError{fmt.Errorf("-w %q: want simple, json or table", *format)}
	}
}
