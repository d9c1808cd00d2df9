package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/informerdb/informerdb/store/snapshot"
)

// printManifest writes m in format simple, json or table.
func printManifest(w io.Writer, format string, m *snapshot.Manifest) error {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(m)
	case "table":
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "STORE\tOBJECTS\tBYTES\tRESUME POINT\tTYPE\tCODEC\tSCOPE\tINDEXES\tCONTENT HASH")
		for _, s := range m.Stores {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", s.Info.Name, s.Objects, s.Bytes, orNone(s.Info.ResourceVersion),
				s.Info.Type, s.Info.Codec, orNone(s.Info.Scope), orNone(strings.Join(s.Info.Indexes, ",")), s.ContentHash)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		_, err := fmt.Fprintf(w, "%s: %d bytes on disk\n", m.Source, m.Size)
		return err
	}
	// simple: one line per store, comma separated, as etcdctl's simple
	// format.
	fmt.Fprintf(w, "%s, %d bytes", m.Source, m.Size)
	if !m.Created.IsZero() {
		fmt.Fprintf(w, ", created %s, format %d", m.Created.Format("2006-01-02T15:04:05Z07:00"), m.FormatVersion)
	}
	fmt.Fprintln(w)
	for _, s := range m.Stores {
		_, err := fmt.Fprintf(w, "%s, %d objects, %d bytes, resume point %s, type %s, codec %s, scope %s, indexes [%s], key %s, hash %s\n",
			s.Info.Name, s.Objects, s.Bytes, orNone(s.Info.ResourceVersion), s.Info.Type, s.Info.Codec, orNone(s.Info.Scope),
			strings.Join(s.Info.Indexes, " "), s.Info.KeyFunc, s.ContentHash)
		if err != nil {
			return err
		}
	}
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
