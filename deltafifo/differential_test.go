package deltafifo_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/deltafifo"
)

// The differential tests compare this package's queues with client-go's on
// the same operations. client-go's Pop takes no context and waits on a
// sync.Cond that only a write or Close wakes, and neither client-go queue
// can say how much it holds, so a Pop on a client-go queue that holds less
// than ours would wait forever: the test would hang instead of failing.
//
// So the client-go queue is closed before the first operation. In client-go
// (v0.37.2, both DeltaFIFO and RealFIFO) Close only makes Pop return
// ErrFIFOClosed instead of waiting when the queue is empty; writes still
// queue ("not used to gate any of CRUD operations"). A Pop on a closed
// client-go queue thus never blocks: "empty" is ErrFIFOClosed at once.
// TestClosedClientGoQueuesStillQueue checks that assumption, so that a
// client-go that starts refusing writes after Close fails there first.
//
// Our queues are only popped after Len (or ListKeys) says they hold
// something, so no Pop in these tests can wait.

// deltaPair is this DeltaFIFO and client-go's side by side, each with its own
// known objects, updated by its own pops as an informer's store would be.
type deltaPair struct {
	ours           *deltafifo.DeltaFIFO
	theirs         *cache.DeltaFIFO
	kOurs, kTheirs *known
}

func newDeltaPair(emitReplaced bool) *deltaPair {
	p := &deltaPair{kOurs: newKnown(), kTheirs: newKnown()}
	p.ours = deltafifo.NewDeltaFIFO(&deltafifo.Options{KnownObjects: p.kOurs, EmitDeltaTypeReplaced: emitReplaced})
	p.theirs = cache.NewDeltaFIFOWithOptions(cache.DeltaFIFOOptions{KnownObjects: p.kTheirs, EmitDeltaTypeReplaced: emitReplaced})
	p.theirs.Close() // Pop never waits; see the top of this file.
	return p
}

// deltaPopped is what one DeltaFIFO pop hands out, as compared.
type deltaPopped struct {
	Deltas        cache.Deltas
	InInitialList bool
}

// popOurs pops the next key's deltas, skipping bookmark entries (client-go's
// DeltaFIFO has none); false when no key is queued. It pops only while a key
// is queued, so it never waits.
func (p *deltaPair) popOurs(t *testing.T) (deltaPopped, bool) {
	t.Helper()
	for len(p.ours.ListKeys()) > 0 {
		var got deltaPopped
		must(t, p.ours.Pop(t.Context(), func(_ context.Context, b deltafifo.Batch) error {
			got = deltaPopped{b.Deltas, b.InInitialList}
			p.kOurs.apply(t, cache.DeletionHandlingMetaNamespaceKeyFunc, b)
			return nil
		}))
		if got.Deltas[0].Type != cache.Bookmark {
			return got, true
		}
	}
	return deltaPopped{}, false
}

// popTheirs pops client-go's next key; false when it is empty (closed, so
// Pop returns ErrFIFOClosed at once instead of waiting).
func (p *deltaPair) popTheirs(t *testing.T) (deltaPopped, bool) {
	t.Helper()
	var got deltaPopped
	_, err := p.theirs.Pop(func(obj interface{}, initial bool) error {
		got = deltaPopped{obj.(cache.Deltas), initial}
		p.kTheirs.apply(t, cache.DeletionHandlingMetaNamespaceKeyFunc, deltafifo.Batch{Deltas: got.Deltas})
		return nil
	})
	if errors.Is(err, cache.ErrFIFOClosed) {
		return deltaPopped{}, false
	}
	must(t, err)
	return got, true
}

// pop pops one key from both and returns an error when they differ,
// including when only one of them holds a key. It reports whether a key was
// popped.
func (p *deltaPair) pop(t *testing.T) (bool, error) {
	t.Helper()
	got, ok := p.popOurs(t)
	want, theirsOK := p.popTheirs(t)
	switch {
	case ok && !theirsOK:
		return false, fmt.Errorf("ours popped %v, client-go's DeltaFIFO is empty", got.Deltas)
	case !ok && theirsOK:
		return false, fmt.Errorf("client-go popped %v, ours holds no key", want.Deltas)
	}
	if d := cmp.Diff(want, got); d != "" {
		return false, fmt.Errorf("pop differs from client-go (-client-go +ours):\n%s", d)
	}
	return ok, nil
}

// TestDeltaFIFOMatchesClientGo feeds the same random operations to this
// DeltaFIFO and to client-go's, each with its own known objects updated by
// its own pops, and requires the same pops: same deltas, same order, same
// isInInitialList, same HasSynced, and both empty at the same time.
// Bookmarks are left out (client-go's DeltaFIFO has none), and so are the
// bookmark entries an empty relist queues here.
func TestDeltaFIFOMatchesClientGo(t *testing.T) {
	for seed := uint64(1); seed <= 40; seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			p := newDeltaPair(seed%2 == 0)

			rv := 0
			var trace []string
			for i, o := range randomOps(rng, 300) {
				if o.kind == opBookmark {
					continue
				}
				trace = append(trace, o.String())
				rv++
				errOurs, errTheirs := applyBoth(p.ours, p.theirs, o, i, rv)
				if o.kind == opPop {
					if _, err := p.pop(t); err != nil {
						t.Fatalf("%v\ntrace: %v", err, trace)
					}
				}
				if errOurs != nil || errTheirs != nil {
					t.Fatalf("%v: ours %v, client-go %v", o, errOurs, errTheirs)
				}
				if ours, theirs := p.ours.HasSynced(), p.theirs.HasSynced(); ours != theirs {
					t.Fatalf("after %v: HasSynced ours %v, client-go %v\ntrace: %v", o, ours, theirs, trace)
				}
			}

			p.ours.Close()
			for {
				ok, err := p.pop(t)
				if err != nil {
					t.Fatalf("drain: %v\ntrace: %v", err, trace)
				}
				if !ok {
					break
				}
			}
		})
	}
}

// queueWriter is what both FIFOs of this package and client-go's share
// for writing.
type queueWriter interface {
	Add(obj interface{}) error
	Update(obj interface{}) error
	Delete(obj interface{}) error
	Replace(list []interface{}, resourceVersion string) error
	Resync() error
}

// applyBoth applies op o (the i-th, at resourceVersion rv) to ours and
// theirs and returns their errors; pops are the caller's.
func applyBoth(ours, theirs queueWriter, o op, i, rv int) (errOurs, errTheirs error) {
	obj := cm(o.key, fmt.Sprint(rv), fmt.Sprintf("ev%d", i))
	switch o.kind {
	case opAdd:
		return ours.Add(obj), theirs.Add(obj)
	case opUpdate:
		return ours.Update(obj), theirs.Update(obj)
	case opDelete:
		return ours.Delete(obj), theirs.Delete(obj)
	case opReplace:
		var list []interface{}
		for _, name := range o.list {
			list = append(list, cm(name, fmt.Sprint(rv), fmt.Sprintf("ev%d", i)))
		}
		return ours.Replace(list, fmt.Sprint(rv)), theirs.Replace(list, fmt.Sprint(rv))
	case opResync:
		return ours.Resync(), theirs.Resync()
	}
	return nil, nil
}

// realPair is this FIFO and client-go's RealFIFO side by side, each with its
// own known objects, updated by its own pops.
type realPair struct {
	ours           *deltafifo.FIFO
	theirs         *cache.RealFIFO
	kOurs, kTheirs *known
}

func newRealPair(maxBatch int) *realPair {
	p := &realPair{kOurs: newKnown(), kTheirs: newKnown()}
	// RealFIFO always emits Replaced.
	p.ours = deltafifo.New(&deltafifo.Options{KnownObjects: p.kOurs, EmitDeltaTypeReplaced: true, MaxBatch: maxBatch})
	p.theirs = cache.NewRealFIFOWithOptions(cache.RealFIFOOptions{KnownObjects: p.kTheirs})
	p.theirs.Close() // Pop never waits; see the top of this file.
	return p
}

// drain pops both queues empty and returns an error when the delta streams
// differ, including when one holds deltas the other does not.
func (p *realPair) drain(t *testing.T) error {
	t.Helper()
	var got, want cache.Deltas
	for p.ours.Len() > 0 {
		must(t, p.ours.Pop(t.Context(), func(_ context.Context, b deltafifo.Batch) error {
			p.kOurs.apply(t, cache.DeletionHandlingMetaNamespaceKeyFunc, b)
			got = append(got, b.Deltas...)
			return nil
		}))
	}
	for {
		_, err := p.theirs.Pop(func(obj interface{}, _ bool) error {
			ds := obj.(cache.Deltas)
			p.kTheirs.apply(t, cache.DeletionHandlingMetaNamespaceKeyFunc, deltafifo.Batch{Deltas: ds})
			want = append(want, ds...)
			return nil
		})
		if errors.Is(err, cache.ErrFIFOClosed) {
			break
		}
		must(t, err)
	}
	if d := cmp.Diff(want, got); d != "" {
		return fmt.Errorf("delta stream differs from client-go (-client-go +ours):\n%s", d)
	}
	return nil
}

// TestFIFOMatchesClientGoRealFIFO feeds the same random operations to this
// FIFO and to client-go's RealFIFO in its non-atomic mode (KnownObjects set,
// a relist queued as per-object deltas; the atomic mode that client-go
// v0.37.2's informers use by default, AtomicFIFO, queues a relist as one
// ReplacedAll delta and has no per-object stream to compare), and requires
// the same stream of deltas. Each pop drains both queues, so that their known
// objects stay equal; the batching itself differs by design (RealFIFO closes
// a batch on a repeated key, this FIFO does not).
func TestFIFOMatchesClientGoRealFIFO(t *testing.T) {
	for seed := uint64(1); seed <= 40; seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 11))
			p := newRealPair(1 + int(seed%5))

			rv := 0
			var trace []string
			for i, o := range randomOps(rng, 300) {
				if o.kind == opBookmark {
					continue
				}
				trace = append(trace, o.String())
				rv++
				errOurs, errTheirs := applyBoth(p.ours, p.theirs, o, i, rv)
				if o.kind == opPop {
					if err := p.drain(t); err != nil {
						t.Fatalf("%v\ntrace: %v", err, trace)
					}
				}
				if errOurs != nil || errTheirs != nil {
					t.Fatalf("%v: ours %v, client-go %v", o, errOurs, errTheirs)
				}
			}
			if err := p.drain(t); err != nil {
				t.Fatalf("final drain: %v\ntrace: %v", err, trace)
			}
		})
	}
}

// TestDifferentialFailsOnMismatch checks that the side-by-side comparisons
// fail at once, and do not wait, when one queue holds what the other does
// not: the mismatch that used to hang the test binary until its timeout.
func TestDifferentialFailsOnMismatch(t *testing.T) {
	a := cm("a", "1", "a1")
	cases := []struct {
		name string
		// ours queues a in ours only, else in client-go's only.
		ours bool
		// wantDelta and wantReal are in the error of a DeltaFIFO pop and of
		// a RealFIFO drain.
		wantDelta, wantReal string
	}{
		{"ours holds more", true, "client-go's DeltaFIFO is empty", "delta stream differs from client-go"},
		{"client-go holds more", false, "ours holds no key", "delta stream differs from client-go"},
	}
	for _, tc := range cases {
		t.Run("DeltaFIFO/"+tc.name, func(t *testing.T) {
			p := newDeltaPair(true)
			if tc.ours {
				must(t, p.ours.Add(a))
			} else {
				must(t, p.theirs.Add(a))
			}
			_, err := p.pop(t)
			if err == nil || !strings.Contains(err.Error(), tc.wantDelta) {
				t.Fatalf("pop: error %v, want one containing %q", err, tc.wantDelta)
			}
		})
		t.Run("RealFIFO/"+tc.name, func(t *testing.T) {
			p := newRealPair(2)
			if tc.ours {
				must(t, p.ours.Add(a))
			} else {
				must(t, p.theirs.Add(a))
			}
			err := p.drain(t)
			if err == nil || !strings.Contains(err.Error(), tc.wantReal) {
				t.Fatalf("drain: error %v, want one containing %q", err, tc.wantReal)
			}
		})
	}
}

// TestClosedClientGoQueuesStillQueue pins the client-go behaviour the
// differential tests rely on: a closed DeltaFIFO or RealFIFO still accepts
// every write and hands it out, and Pop on it returns ErrFIFOClosed at once
// when it is empty instead of waiting.
func TestClosedClientGoQueuesStillQueue(t *testing.T) {
	a1, a2, b1 := cm("a", "1", "a1"), cm("a", "2", "a2"), cm("b", "3", "b1")
	type clientGoQueue interface {
		cache.Queue
		IsClosed() bool
	}
	cases := []struct {
		name string
		new  func(*known) clientGoQueue
		// want is every delta popped, in order, after the writes below.
		want cache.Deltas
	}{
		{
			name: "DeltaFIFO",
			new: func(k *known) clientGoQueue {
				return cache.NewDeltaFIFOWithOptions(cache.DeltaFIFOOptions{KnownObjects: k, EmitDeltaTypeReplaced: true})
			},
			want: cache.Deltas{
				{Type: cache.Added, Object: a1}, {Type: cache.Updated, Object: a2}, {Type: cache.Replaced, Object: a2},
				{Type: cache.Replaced, Object: b1}, {Type: cache.Deleted, Object: b1},
			},
		},
		{
			name: "RealFIFO",
			new: func(k *known) clientGoQueue {
				return cache.NewRealFIFOWithOptions(cache.RealFIFOOptions{KnownObjects: k})
			},
			want: cache.Deltas{
				{Type: cache.Added, Object: a1}, {Type: cache.Updated, Object: a2}, {Type: cache.Replaced, Object: a2},
				{Type: cache.Replaced, Object: b1}, {Type: cache.Deleted, Object: b1},
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			q := tc.new(newKnown())
			q.Close()
			popAll := func() cache.Deltas {
				t.Helper()
				var got cache.Deltas
				for {
					_, err := q.Pop(func(obj interface{}, _ bool) error {
						got = append(got, obj.(cache.Deltas)...)
						return nil
					})
					if errors.Is(err, cache.ErrFIFOClosed) {
						return got
					}
					must(t, err)
				}
			}
			diff(t, "pops of an empty closed queue", cache.Deltas(nil), popAll())
			must(t, q.Add(a1))
			must(t, q.Update(a2))
			must(t, q.Replace([]interface{}{a2, b1}, "3"))
			must(t, q.Resync()) // nothing is known: queues nothing
			must(t, q.Delete(b1))
			diff(t, "IsClosed", true, q.IsClosed())
			diff(t, "deltas popped after Close", tc.want, popAll())
		})
	}
}
