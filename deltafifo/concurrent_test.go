package deltafifo_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/deltafifo"
)

// TestConcurrentWriterAndPopper runs a writer and a popper at once (under
// the race detector in CI) and checks what the popper saw: every event
// exactly once, in arrival order for FIFO and per key for DeltaFIFO, and no
// resume point ahead of an event not yet received.
func TestConcurrentWriterAndPopper(t *testing.T) {
	const events = 3000
	keys := []string{"a", "b", "c", "d", "e", "f", "g"}
	evs := make([]concurrentEvent, events)
	rvIndex := map[string]int{}
	for i := range evs {
		// RVs in an order strings do not sort by.
		evs[i] = concurrentEvent{keys[(i*5)%len(keys)], fmt.Sprintf("%x", uint32(i)*2654435761)}
		rvIndex[evs[i].rv] = i
		// The bookmark written after event i stands for it.
		rvIndex[fmt.Sprintf("bm-%d", i)] = i
	}
	for _, impl := range impls {
		// With MaxQueued, the writer keeps waiting for the popper to make
		// room (FIFO; DeltaFIFO ignores it).
		for _, maxQueued := range []int{0, 5} {
			t.Run(fmt.Sprintf("%s/max_queued=%d", impl.name, maxQueued), func(t *testing.T) {
				testConcurrentWriterAndPopper(t, impl.name, impl.new(deltafifo.Options{MaxBatch: 7, MaxQueued: maxQueued}), evs, rvIndex)
			})
		}
	}
}

// concurrentEvent is one event of TestConcurrentWriterAndPopper.
type concurrentEvent struct {
	key string
	rv  string
}

// testConcurrentWriterAndPopper writes evs to q from one goroutine while
// it pops them from this one, and checks what it popped (see
// TestConcurrentWriterAndPopper).
func testConcurrentWriterAndPopper(t *testing.T, implName string, q deltafifo.Queue, evs []concurrentEvent, rvIndex map[string]int) {
	events := len(evs)
	writeErr := make(chan error, 1)
	go func() {
		defer q.Close()
		for i, e := range evs {
			obj := cm(e.key, e.rv, fmt.Sprint(i))
			var err error
			if i%3 == 0 {
				err = q.Add(obj)
			} else {
				err = q.Update(obj)
			}
			if err == nil && i%100 == 99 {
				err = q.Bookmark(fmt.Sprintf("bm-%d", i))
			}
			if err != nil {
				writeErr <- err
				return
			}
		}
		writeErr <- nil
	}()

	received := make([]bool, events)
	var order []int // event indexes in the order received
	for {
		err := q.Pop(t.Context(), func(_ context.Context, b deltafifo.Batch) error {
			for _, d := range b.Deltas {
				if d.Type == cache.Bookmark {
					continue
				}
				i := rvIndex[d.Object.(interface{ GetResourceVersion() string }).GetResourceVersion()]
				if received[i] {
					t.Errorf("event %d received twice", i)
				}
				received[i] = true
				order = append(order, i)
			}
			if b.ResourceVersion == "" {
				return nil
			}
			idx := rvIndex[b.ResourceVersion]
			for i := 0; i <= idx; i++ {
				if !received[i] {
					t.Errorf("resume point at event %d runs ahead of event %d", idx, i)
					break
				}
			}
			return nil
		})
		if errors.Is(err, deltafifo.ErrClosed) {
			break
		}
		must(t, err)
	}
	must(t, <-writeErr)

	diff(t, "events received", events, len(order))
	last := map[string]int{}
	for n, i := range order {
		if implName == "impl=FIFO" && i != n {
			t.Fatalf("FIFO handed out event %d at position %d", i, n)
		}
		if prev, ok := last[evs[i].key]; ok && prev > i {
			t.Fatalf("key %s: event %d after event %d", evs[i].key, i, prev)
		}
		last[evs[i].key] = i
	}
}

func TestReplaceAndResyncSkipKnownKeysThatVanished(t *testing.T) {
	for _, impl := range impls {
		t.Run(impl.name, func(t *testing.T) {
			k := newKnown(cm("a", "1", "a1"))
			k.ghosts = []string{"ns/ghost"}
			q := impl.new(deltafifo.Options{KnownObjects: k, EmitDeltaTypeReplaced: true})
			must(t, q.Replace(nil, "10"))
			must(t, q.Resync())
			var got cache.Deltas
			for _, b := range drain(t, q) {
				got = append(got, b.Deltas...)
			}
			// No tombstone without an object (DESIGN invariant 4), no Sync
			// of nothing.
			diff(t, "deltas", deltas(d(cache.Deleted, tomb("a", cm("a", "1", "a1")))), got)
		})
	}
}
