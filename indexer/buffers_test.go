package indexer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/informerdb/informerdb/store"
)

// dataPersister records a copy of every put it persists, and where its
// Data was, and fails while fail is set.
type dataPersister struct {
	countingPersister
	copies bool
	fail   bool
	seen   []persistedPut
}

type persistedPut struct {
	key  string
	at   *byte
	data []byte
}

func (p *dataPersister) Commit(_ context.Context, changes []Change, _ bool, _ *IndexSet, _ string, _ bool) error {
	if p.fail {
		return errors.New("disk full")
	}
	for _, c := range changes {
		if c.Type == store.OpPut {
			p.seen = append(p.seen, persistedPut{key: c.Key, at: unsafe.SliceData(c.Data), data: bytes.Clone(c.Data)})
		}
	}
	return nil
}

// newCodecBase returns a Base over p, with BaseConfig.CopiesData as p says.
func newCodecBase(t *testing.T, p *dataPersister) (*Base, store.Codec) {
	t.Helper()
	codec, err := NewCodec(&corev1.ConfigMap{})
	if err != nil {
		t.Fatal(err)
	}
	o, err := (&store.Options{Name: "cms", Codec: codec}).WithDefaults()
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewBase(BaseConfig{Info: store.Info{Name: "cms"}, Persister: p, Options: o, CopiesData: p.copies})
	if err != nil {
		t.Fatal(err)
	}
	return b, codec
}

// configMaps returns n ConfigMaps named prefix-i, each with a payload that
// names it, as puts.
func configMaps(prefix string, n int) []store.Op {
	ops := make([]store.Op, n)
	for i := range ops {
		name := fmt.Sprintf("%s-%d", prefix, i)
		ops[i] = store.Op{Type: store.OpPut, Object: &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
			Data:       map[string]string{"payload": strings.Repeat(name, 1+i%7)},
		}}
	}
	return ops
}

// checkPersisted decodes every put p persisted and compares it with what
// its key was given.
func checkPersisted(t *testing.T, codec store.Codec, p *dataPersister) {
	t.Helper()
	for _, s := range p.seen {
		obj, err := codec.Decode(s.data)
		if err != nil {
			t.Fatalf("%s: persisted bytes do not decode: %v", s.key, err)
		}
		cm := obj.(*corev1.ConfigMap)
		_, name, _ := strings.Cut(s.key, "/")
		if cm.Name != name || !strings.HasPrefix(cm.Data["payload"], name) {
			t.Fatalf("%s: persisted ConfigMap %s with payload %q", s.key, cm.Name, cm.Data["payload"])
		}
	}
}

// TestEncodingBuffersReusedAfterPersist: over a persister that copies what
// it writes, the encodings of a persisted batch are reused by the next one,
// small (encoded on the caller) and large (encoded in parallel), and every
// put is persisted with its own object's bytes; over one that does not
// copy, no buffer is reused. A prepared batch committed again after it was
// persisted is prepared again, not written from reused buffers.
func TestEncodingBuffersReusedAfterPersist(t *testing.T) {
	for _, copies := range []bool{true, false} {
		for _, n := range []int{3, 2 * parallelEncodeMin} {
			t.Run(fmt.Sprintf("copies=%v/ops=%d", copies, n), func(t *testing.T) {
				p := &dataPersister{copies: copies}
				b, codec := newCodecBase(t, p)
				first := store.Batch{Ops: configMaps("a", n), ResourceVersion: "1"}
				pb, err := b.PrepareBatch(first)
				if err != nil {
					t.Fatal(err)
				}
				apply, err := pb.(store.StagedBatch).Persist(t.Context())
				if err != nil {
					t.Fatal(err)
				}
				apply()
				used := map[*byte]bool{}
				for _, s := range p.seen {
					used[s.at] = true
				}
				if err := b.Commit(t.Context(), store.Batch{Ops: configMaps("b", n), ResourceVersion: "2"}); err != nil {
					t.Fatal(err)
				}
				reused := 0
				for _, s := range p.seen[n:] {
					if used[s.at] {
						reused++
					}
				}
				switch {
				case copies && reused == 0:
					t.Errorf("the second batch's %d encodings reused none of the first's buffers", n)
				case !copies && reused > 0:
					t.Errorf("%d encodings reused a buffer of a persister that does not copy what it writes", reused)
				}
				// The first batch again: prepared again, its own bytes.
				if err := pb.Commit(t.Context()); err != nil {
					t.Fatal(err)
				}
				if got := len(p.seen); got != 3*n {
					t.Fatalf("persisted %d puts, want %d", got, 3*n)
				}
				checkPersisted(t, codec, p)
			})
		}
	}
}

// TestFailedPersistKeepsEncodings: a batch whose Persist fails keeps its
// encodings for the retry, which persists its own bytes even though other
// batches were persisted (and their buffers reused) in between.
func TestFailedPersistKeepsEncodings(t *testing.T) {
	p := &dataPersister{copies: true}
	b, codec := newCodecBase(t, p)
	pb, err := b.PrepareBatch(store.Batch{Ops: configMaps("a", 2*parallelEncodeMin), ResourceVersion: "1"})
	if err != nil {
		t.Fatal(err)
	}
	p.fail = true
	if _, err := pb.(store.StagedBatch).Persist(t.Context()); err == nil {
		t.Fatal("Persist succeeded over a failing persister")
	}
	p.fail = false
	for i := range 3 {
		if err := b.Commit(t.Context(), store.Batch{Ops: configMaps(fmt.Sprint("b", i), 2*parallelEncodeMin)}); err != nil {
			t.Fatal(err)
		}
	}
	apply, err := pb.(store.StagedBatch).Persist(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	apply()
	checkPersisted(t, codec, p)
}
