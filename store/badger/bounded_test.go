package badger

import (
	"fmt"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/informerdb/informerdb/store"
)

// TestBoundedMatchesDefault runs the same writes on a default and a bounded
// store of one directory and compares every read.
func TestBoundedMatchesDefault(t *testing.T) {
	dir := t.TempDir()
	ctx := t.Context()
	d, err := Open(ctx, dir, podOptions(t, "default", 0))
	mustOK(t, "Open default", err)
	defer d.Close()
	b, err := Open(ctx, dir, podOptions(t, "bounded", 3))
	mustOK(t, "Open bounded", err)
	defer b.Close()
	for r := range 5 {
		var ops []store.Op
		for i := range 40 {
			switch (i + r) % 4 {
			case 0:
				ops = append(ops, store.Op{Type: store.OpDelete, Object: newPod(i, "", "")})
			default:
				ops = append(ops, store.Op{Type: store.OpPut, Object: newPod(i, fmt.Sprint(r), fmt.Sprintf("app-%d", (i*r)%5))})
			}
		}
		for _, s := range []store.Store{d, b} {
			mustOK(t, "Commit", s.Commit(ctx, store.Batch{Ops: ops, ResourceVersion: fmt.Sprint(r)}))
		}
		if diff := cmp.Diff(contents(t, d), contents(t, b)); diff != "" {
			t.Errorf("round %d: contents (-default +bounded):\n%s", r, diff)
		}
		for _, idx := range []string{"app", "namespace"} {
			dv, bv := d.ListIndexFuncValues(idx), b.ListIndexFuncValues(idx)
			sort.Strings(dv)
			sort.Strings(bv)
			if diff := cmp.Diff(dv, bv); diff != "" {
				t.Errorf("round %d: ListIndexFuncValues(%s) (-default +bounded):\n%s", r, idx, diff)
			}
			for _, v := range dv {
				dk, err := d.IndexKeys(idx, v)
				mustOK(t, "IndexKeys", err)
				bk, err := b.IndexKeys(idx, v)
				mustOK(t, "IndexKeys", err)
				if diff := cmp.Diff(dk, bk); diff != "" {
					t.Errorf("round %d: IndexKeys(%s, %s) (-default +bounded):\n%s", r, idx, v, diff)
				}
				do, err := d.Index(idx, newPod(0, "", v))
				mustOK(t, "Index", err)
				bo, err := b.Index(idx, newPod(0, "", v))
				mustOK(t, "Index", err)
				if len(do) != len(bo) {
					t.Errorf("round %d: Index(%s, %s): default %d objects, bounded %d", r, idx, v, len(do), len(bo))
				}
			}
		}
		checkIndexes(t, b)
	}
}
