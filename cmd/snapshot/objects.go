package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/snapshot"
)

// objectFlags are the flags of ls, get and by-index.
type objectFlags struct {
	store  string
	output string
}

func (f *objectFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.store, "store", "", "the store to read (needed when there are several)")
	cmd.Flags().StringVarP(&f.output, "output", "o", "yaml", "output format: yaml or json")
}

func (f *objectFlags) check() error {
	if f.output != "yaml" && f.output != "json" {
		return usageError{fmt.Errorf("-o %q: want yaml or json", f.output)}
	}
	return nil
}

// pick returns the stores to read: --store, or every store when all,
// else the only one.
func (f *objectFlags) pick(cmd *cobra.Command, target string, all bool) ([]store.Info, error) {
	infos, err := snapshot.Stores(cmd.Context(), target)
	if err != nil {
		return nil, err
	}
	if f.store != "" {
		i := slices.IndexFunc(infos, func(info store.Info) bool { return info.Name == f.store })
		if i < 0 {
			return nil, fmt.Errorf("no store %q in %s (it has %q): %w", f.store, target, storeNames(infos), store.ErrNotFound)
		}
		return infos[i : i+1], nil
	}
	if len(infos) > 1 && !all {
		return nil, usageError{fmt.Errorf("%s has %d stores %q: choose one with --store", target, len(infos), storeNames(infos))}
	}
	return infos, nil
}

func storeNames(infos []store.Info) []string {
	var out []string
	for _, info := range infos {
		out = append(out, info.Name)
	}
	return out
}

func newLs() *cobra.Command {
	var f objectFlags
	cmd := &cobra.Command{
		Use:   "ls <file|store-url>",
		Short: "Print the objects of a store (all stores without --store)",
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			return readObjects(cmd, &f, a[0], true, func(store.Info, store.Record) bool { return true })
		},
	}
	f.add(cmd)
	return cmd
}

func newGet() *cobra.Command {
	var f objectFlags
	cmd := &cobra.Command{
		Use:   "get <file|store-url> <key>",
		Short: "Print the object stored under a key",
		Args:  args(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, a []string) error {
			found := false
			err := readObjects(cmd, &f, a[0], false, func(_ store.Info, rec store.Record) bool {
				if rec.Key == a[1] {
					found = true
					return true
				}
				return false
			})
			if err == nil && !found {
				err = fmt.Errorf("get %q: %w", a[1], store.ErrNotFound)
			}
			return err
		},
	}
	f.add(cmd)
	return cmd
}

func newByIndex() *cobra.Command {
	var f objectFlags
	cmd := &cobra.Command{
		Use:   "by-index <file|store-url> <index> <value>",
		Short: "Print the objects whose index values include a value",
		Args:  args(cobra.ExactArgs(3)),
		RunE: func(cmd *cobra.Command, a []string) error {
			index, value := a[1], a[2]
			return readObjects(cmd, &f, a[0], false, func(info store.Info, rec store.Record) bool {
				i := slices.Index(info.Indexes, index)
				return i >= 0 && i < len(rec.Values) && slices.Contains(rec.Values[i], value)
			}, func(info store.Info) error {
				if !slices.Contains(info.Indexes, index) {
					return fmt.Errorf("store %s has no index %q (it has %q; memory and memdb files keep none): %w", info.Name, index, info.Indexes, store.ErrNotFound)
				}
				return nil
			})
		},
	}
	f.add(cmd)
	return cmd
}

// readObjects prints the records of the chosen stores that match keep,
// decoded. check, when given, vets each store's Info first.
func readObjects(cmd *cobra.Command, f *objectFlags, target string, all bool, keep func(store.Info, store.Record) bool, check ...func(store.Info) error) error {
	if err := f.check(); err != nil {
		return err
	}
	target, err := absURL(target)
	if err != nil {
		return err
	}
	target, done, err := localCopy(cmd, target, f.store)
	if err != nil {
		return err
	}
	defer done()
	infos, err := f.pick(cmd, target, all)
	if err != nil {
		return err
	}
	w := cmd.OutOrStdout()
	first := true
	for _, info := range infos {
		for _, c := range check {
			if err := c(info); err != nil {
				return err
			}
		}
		dec, err := decoderFor(info)
		if err != nil {
			return err
		}
		_, err = snapshot.Records(cmd.Context(), target, info.Name, func(rec store.Record) error {
			if !keep(info, rec) {
				return nil
			}
			out, err := dec(rec.Data)
			if err != nil {
				return fmt.Errorf("store %s: object %q: %w", info.Name, rec.Key, err)
			}
			return printObject(w, f.output, out, &first)
		})
		if err != nil {
			return err
		}
	}
	if f.output == "json" && !first {
		fmt.Fprintln(w)
	}
	return nil
}

// printObject writes one object's JSON as YAML documents separated by
// "---", or as JSON values, one per line.
func printObject(w io.Writer, format string, js []byte, first *bool) error {
	if format == "json" {
		if !*first {
			fmt.Fprintln(w)
		}
		*first = false
		var buf bytes.Buffer
		if err := json.Indent(&buf, js, "", "  "); err != nil {
			return err
		}
		_, err := w.Write(buf.Bytes())
		return err
	}
	y, err := yaml.JSONToYAML(js)
	if err != nil {
		return err
	}
	if !*first {
		fmt.Fprintln(w, "---")
	}
	*first = false
	_, err = w.Write(y)
	return err
}

// decoder turns a record's data into the object's JSON.
type decoder func(data []byte) ([]byte, error)

var (
	typesOnce sync.Once
	typesByGo map[string]schema.GroupVersionKind // "importpath.Name" -> a GVK of that Go type
)

// goTypes maps the Go types client-go's scheme knows to a GroupVersionKind,
// preferring a non-internal version.
func goTypes() map[string]schema.GroupVersionKind {
	typesOnce.Do(func() {
		typesByGo = map[string]schema.GroupVersionKind{}
		for gvk, t := range scheme.Scheme.AllKnownTypes() {
			if gvk.Version == runtime.APIVersionInternal {
				continue
			}
			// The name ProtobufCodec.Type records.
			name := t.PkgPath() + "." + t.Name()
			old, ok := typesByGo[name]
			// Options types are registered in every group version:
			// prefer a kind named as the type, then the smallest.
			if !ok || (gvk.Kind == t.Name()) != (old.Kind == t.Name()) && gvk.Kind == t.Name() ||
				(gvk.Kind == t.Name()) == (old.Kind == t.Name()) && gvk.String() < old.String() {
				typesByGo[name] = gvk
			}
		}
	})
	return typesByGo
}

// decoderFor builds the decoder of a store from its recorded codec and
// type: protobuf types through client-go's scheme, unstructured objects and
// other JSON as their JSON.
func decoderFor(info store.Info) (decoder, error) {
	switch info.Codec {
	case "protobuf":
		gvk, ok := goTypes()[info.Type]
		if !ok {
			return nil, fmt.Errorf("store %s: type %q is not one client-go's scheme knows; cannot decode its protobuf: %w", info.Name, info.Type, store.ErrIncompatible)
		}
		obj, err := scheme.Scheme.New(gvk)
		if err != nil {
			return nil, fmt.Errorf("store %s: %w", info.Name, err)
		}
		codec, err := indexer.NewProtobufCodec(obj)
		if err != nil {
			return nil, fmt.Errorf("store %s: %w", info.Name, err)
		}
		return func(data []byte) ([]byte, error) {
			o, err := indexer.Decode(codec, data)
			if err != nil {
				return nil, err
			}
			if ro, ok := o.(runtime.Object); ok {
				// Typed objects decode without apiVersion and kind.
				ro.GetObjectKind().SetGroupVersionKind(gvk)
			}
			return json.Marshal(o)
		}, nil
	case "json":
		return func(data []byte) ([]byte, error) {
			if !json.Valid(data) {
				return nil, fmt.Errorf("not valid JSON: %w", store.ErrCorrupt)
			}
			return data, nil
		}, nil
	}
	return nil, fmt.Errorf("store %s: unknown codec %q (type %q): %w", info.Name, info.Codec, info.Type, errors.ErrUnsupported)
}
