package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/snapshot"
)

// objectFlags are the flags of ls, get and by-index.
type objectFlags struct {
	store  string
	output string
	// selector and namespace filter ls: labels.Parse's syntax, and a
	// namespace ("" for all).
	selector  string
	namespace string
	// sel is selector parsed by check; nil without one.
	sel labels.Selector
}

// outputs are the formats of -o, as kubectl's: names, a table, or whole
// objects.
var outputs = []string{"name", "wide", "yaml", "json"}

// add adds --store and -o, with def as the output format.
func (f *objectFlags) add(cmd *cobra.Command, def string) {
	cmd.Flags().StringVar(&f.store, "store", "", "the store to read (needed when there are several)")
	cmd.Flags().StringVarP(&f.output, "output", "o", def, "output format: "+strings.Join(outputs, ", "))
}

// addFilters adds -l and -n.
func (f *objectFlags) addFilters(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&f.selector, "selector", "l", "", "label selector, as kubectl's (-l app=web,tier!=cache)")
	cmd.Flags().StringVarP(&f.namespace, "namespace", "n", "", "only objects of this namespace")
}

func (f *objectFlags) check() error {
	if !slices.Contains(outputs, f.output) {
		return usageError{fmt.Errorf("-o %q: want one of %s", f.output, strings.Join(outputs, ", "))}
	}
	if f.selector != "" {
		sel, err := labels.Parse(f.selector)
		if err != nil {
			return usageError{fmt.Errorf("-l %q: %w", f.selector, err)}
		}
		f.sel = sel
	}
	if f.namespace != "" {
		if errs := validation.IsDNS1123Label(f.namespace); len(errs) > 0 {
			return usageError{fmt.Errorf("-n %q: not a namespace name: %s", f.namespace, strings.Join(errs, "; "))}
		}
	}
	return nil
}

// filters tells whether objects are filtered by their metadata.
func (f *objectFlags) filters() bool { return f.sel != nil || f.namespace != "" }

// matches tells whether an object passes -l and -n.
func (f *objectFlags) matches(m *metav1.PartialObjectMetadata) bool {
	if f.namespace != "" && m.Namespace != f.namespace {
		return false
	}
	return f.sel == nil || f.sel.Matches(labels.Set(m.Labels))
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
		Use:   "ls <file|database>",
		Short: "List the objects of a store (all stores without --store), by name",
		Long: `ls lists the objects of the stores, one name per line by default, as kubectl's
-o name: kind[.group]/KEY, where KEY is the object's key in its store (what get
takes: namespace/name, or name for a cluster-scoped object), so that the names
stay unique across namespaces; for example configmap/kube-system/coredns,
deployment.apps/default/web, node/worker-1. -o wide is a table (NAMESPACE, NAME
as kind/name, RESOURCE VERSION, AGE, STORE); -o yaml and -o json print whole
objects (YAML documents separated by ---, or JSON values one after another).
-l selects by labels as kubectl does, -n by namespace.`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			return readObjects(cmd, &f, "ls", a[0], true, func(store.Info, store.Record) bool { return true })
		},
	}
	f.add(cmd, "name")
	f.addFilters(cmd)
	return cmd
}

func newGet() *cobra.Command {
	var f objectFlags
	cmd := &cobra.Command{
		Use:   "get <file|database> <key>",
		Short: "Print the object stored under a key",
		Long: `get prints the object stored under <key> (namespace/name, or name for a
cluster-scoped object, or the kind[.group]/key that ls prints), as YAML by
default; -o json, -o name (kind[.group]/key, as ls prints it) and -o wide (one
row of ls's table) as for ls. A database of several stores needs --store,
except for a name ls printed of a namespaced object or of a kind with a group
(pod/default/web-1, deployment.apps/shop/web), which says its store.`,
		Args: args(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, a []string) error {
			// A name ls printed for a namespaced object (two slashes) or
			// of a kind with a group (a dot before the first slash, which
			// no namespace has) names its kind, so it is looked for in
			// every store; a bare key only in the one store.
			first, _, _ := strings.Cut(a[1], "/")
			byName := f.store == "" && (strings.Count(a[1], "/") >= 2 || strings.Contains(first, "."))
			found := false
			err := readObjects(cmd, &f, "get", a[0], byName, func(info store.Info, rec store.Record) bool {
				if (!byName && rec.Key == a[1]) || isListedName(info, rec, a[1]) {
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
	f.add(cmd, "yaml")
	return cmd
}

// isListedName reports whether name is rec as ls -o name prints it,
// kind[.group]/key. Only a record whose key ends name is decoded to tell.
func isListedName(info store.Info, rec store.Record, name string) bool {
	kind, ok := strings.CutSuffix(name, "/"+rec.Key)
	if !ok || kind == "" {
		return false
	}
	dec, err := decoderFor(info)
	if err != nil {
		return false
	}
	out, err := dec(rec.Data)
	if err != nil {
		return false
	}
	var meta metav1.PartialObjectMetadata
	if json.Unmarshal(out, &meta) != nil {
		return false
	}
	return kindName(info, &meta) == kind
}

func newByIndex() *cobra.Command {
	var f objectFlags
	cmd := &cobra.Command{
		Use:   "by-index <file|database> <index> <value>",
		Short: "List the objects whose index values include a value",
		Long: `by-index lists the objects of a store whose values of <index> include <value>,
with ls's output formats (-o name by default).`,
		Args: args(cobra.ExactArgs(3)),
		RunE: func(cmd *cobra.Command, a []string) error {
			index, value := a[1], a[2]
			return readObjects(cmd, &f, "by-index", a[0], false, func(info store.Info, rec store.Record) bool {
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
	f.add(cmd, "name")
	return cmd
}

// readObjects prints the records of the chosen stores that match keep and
// the filters, decoded. check, when given, vets each store's Info first.
func readObjects(cmd *cobra.Command, f *objectFlags, op, arg string, all bool, keep func(store.Info, store.Record) bool, check ...func(store.Info) error) error {
	if err := f.check(); err != nil {
		return err
	}
	src, err := openSource(op, arg)
	if err != nil {
		return err
	}
	target, done, err := localCopy(cmd, src.ref, f.store)
	if err != nil {
		return err
	}
	defer done()
	infos, err := f.pick(cmd, target, all)
	if err != nil {
		return err
	}
	p := newObjectPrinter(cmd.OutOrStdout(), f.output, time.Now())
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
			var meta *metav1.PartialObjectMetadata
			if f.filters() || p.needsMeta() {
				meta = &metav1.PartialObjectMetadata{}
				if err := json.Unmarshal(out, meta); err != nil {
					return fmt.Errorf("store %s: object %q: its metadata: %w: %w", info.Name, rec.Key, store.ErrCorrupt, err)
				}
				if !f.matches(meta) {
					return nil
				}
			}
			return p.print(info, rec.Key, out, meta)
		})
		if err != nil {
			return err
		}
	}
	if err := p.flush(); err != nil {
		return err
	}
	if op == "ls" && p.count == 0 {
		fmt.Fprintln(cmd.ErrOrStderr(), "No objects found.")
	}
	return nil
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
