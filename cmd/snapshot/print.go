package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/yaml"

	"github.com/informerdb/informerdb/store"
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

// objectPrinter writes the objects of ls, get and by-index in one of
// outputs' formats.
type objectPrinter struct {
	w      io.Writer
	format string
	now    time.Time // for AGE
	count  int       // objects printed
	tw     *tabwriter.Writer
}

func newObjectPrinter(w io.Writer, format string, now time.Time) *objectPrinter {
	p := &objectPrinter{w: w, format: format, now: now}
	if format == "wide" {
		p.tw = tabwriter.NewWriter(w, 0, 4, 3, ' ', 0)
	}
	return p
}

// needsMeta tells whether print needs the object's metadata.
func (p *objectPrinter) needsMeta() bool { return p.format == "name" || p.format == "wide" }

// print writes one object: js is its JSON, meta its metadata (set when
// needsMeta).
func (p *objectPrinter) print(info store.Info, key string, js []byte, meta *metav1.PartialObjectMetadata) error {
	first := p.count == 0
	p.count++
	switch p.format {
	case "name":
		_, err := fmt.Fprintf(p.w, "%s/%s\n", kindName(info, meta), key)
		return err
	case "wide":
		if first {
			fmt.Fprintln(p.tw, "NAMESPACE\tNAME\tRESOURCE VERSION\tAGE\tSTORE")
		}
		age := "<unknown>"
		if !meta.CreationTimestamp.IsZero() {
			age = duration.HumanDuration(p.now.Sub(meta.CreationTimestamp.Time))
		}
		_, err := fmt.Fprintf(p.tw, "%s\t%s/%s\t%s\t%s\t%s\n", orNone(meta.Namespace), kindName(info, meta), meta.Name,
			orNone(meta.ResourceVersion), age, info.Name)
		return err
	case "json":
		// JSON values one after another, as jq reads them.
		if !first {
			fmt.Fprintln(p.w)
		}
		var buf bytes.Buffer
		if err := json.Indent(&buf, js, "", "  "); err != nil {
			return err
		}
		_, err := p.w.Write(buf.Bytes())
		return err
	}
	// YAML documents separated by "---".
	y, err := yaml.JSONToYAML(js)
	if err != nil {
		return err
	}
	if !first {
		fmt.Fprintln(p.w, "---")
	}
	_, err = p.w.Write(y)
	return err
}

// flush ends the output.
func (p *objectPrinter) flush() error {
	switch {
	case p.tw != nil:
		return p.tw.Flush()
	case p.format == "json" && p.count > 0:
		_, err := fmt.Fprintln(p.w)
		return err
	}
	return nil
}

// kindName is what kubectl's -o name puts before the slash: the kind in
// lower case, with its API group unless it is the core group
// ("configmap", "deployment.apps"). An object without a kind (a store of
// plain JSON) is named by its store.
func kindName(info store.Info, meta *metav1.PartialObjectMetadata) string {
	if meta.Kind == "" {
		return info.Name
	}
	gv, err := schema.ParseGroupVersion(meta.APIVersion)
	if err != nil || gv.Group == "" {
		return strings.ToLower(meta.Kind)
	}
	return strings.ToLower(meta.Kind) + "." + gv.Group
}
