package deltafifo

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// held returns how many chunks d holds, its spares included.
func (d *deque[T]) held() int {
	return len(d.chunks) - d.first + len(d.spares)
}

// checkDeque compares d with want, the queued elements oldest first,
// through every accessor.
func checkDeque(t *testing.T, step int, d *deque[int], want []int) {
	t.Helper()
	if d.len() != len(want) {
		t.Fatalf("step %d: len %d, want %d", step, d.len(), len(want))
	}
	var got []int
	for p := range d.all() {
		got = append(got, *p)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("step %d: all yields %v, want %v", step, got, want)
	}
	for i, w := range want {
		if v := *d.at(i); v != w {
			t.Fatalf("step %d: at(%d) = %d, want %d", step, i, v, w)
		}
	}
	switch b := d.back(); {
	case len(want) == 0 && b != nil:
		t.Fatalf("step %d: back of an empty deque = %d, want nil", step, *b)
	case len(want) > 0 && (b == nil || *b != want[len(want)-1]):
		t.Fatalf("step %d: back = %v, want %d", step, b, want[len(want)-1])
	}
}

// TestDequeModel pushes and drops at random, crossing chunk boundaries both
// ways and emptying the deque now and then, and checks it against a slice.
func TestDequeModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var d deque[int]
	var want []int
	next := 0
	for step := range 3000 {
		switch op := rng.IntN(10); {
		case op < 5:
			for range rng.IntN(3 * dequeChunk / 2) {
				d.push(next)
				want = append(want, next)
				next++
			}
		case op < 9:
			n := rng.IntN(len(want) + 1)
			d.drop(n)
			want = want[n:]
		default:
			d.drop(len(want))
			want = want[:0]
		}
		checkDeque(t, step, &d, want)
		if max := (len(want)+dequeChunk-1)/dequeChunk + 1 + dequeSpares; d.held() > max {
			t.Fatalf("step %d: holds %d chunks for %d elements, want at most %d", step, d.held(), len(want), max)
		}
	}
}

// TestDequeChangesThroughPointers checks that at and back return the
// queued elements themselves, as DeltaFIFO's bookmark coalescing needs.
func TestDequeChangesThroughPointers(t *testing.T) {
	var d deque[int]
	for i := range dequeChunk + 1 {
		d.push(i)
	}
	*d.back() = -1
	*d.at(dequeChunk - 1) = -2
	if got := *d.at(dequeChunk); got != -1 {
		t.Errorf("after setting back: at(%d) = %d, want -1", dequeChunk, got)
	}
	d.drop(dequeChunk - 1)
	if got := *d.at(0); got != -2 {
		t.Errorf("after setting at(%d) and dropping before it: at(0) = %d, want -2", dequeChunk-1, got)
	}
}

// TestDequeDropZeroesAndFrees checks that dropped elements do not keep what
// they point to reachable: their slots are zeroed, used-up chunks leave the
// deque or become spares that hold nothing, and a drained backlog keeps no
// more than dequeSpares chunks.
func TestDequeDropZeroesAndFrees(t *testing.T) {
	var d deque[*int]
	const burst = (dequeSpares + 5) * dequeChunk
	for i := range burst + 10 {
		d.push(&i)
	}
	d.drop(2*dequeChunk + 5)
	// Two chunks are used up and become spares: the deque holds as many.
	if want := (burst + 10 + dequeChunk - 1) / dequeChunk; d.held() != want {
		t.Fatalf("holds %d chunks, want %d: the ones in use and two spares", d.held(), want)
	}
	for i, c := range d.chunks[:d.first] {
		if c != nil {
			t.Errorf("used-up chunk %d is still referenced", i)
		}
	}
	for i, p := range d.chunks[d.first][:d.head] {
		if p != nil {
			t.Errorf("dropped slot %d of the oldest chunk is not zeroed", i)
		}
	}
	d.drop(d.len())
	if d.held() != dequeSpares || len(d.chunks) != 0 {
		t.Errorf("a drained deque holds %d chunks (%d in use), want its %d spares only", d.held(), len(d.chunks), dequeSpares)
	}
	for i, c := range d.spares {
		if slices.ContainsFunc(c[:cap(c)], func(p *int) bool { return p != nil }) {
			t.Errorf("spare chunk %d still points to dropped elements", i)
		}
	}
}

// TestDequeSteadyBacklogDoesNotAllocate: a backlog that is pushed and
// popped at the same pace reuses its chunks (through the spares) and the
// slots of its array of chunks, whatever its size.
func TestDequeSteadyBacklogDoesNotAllocate(t *testing.T) {
	for _, backlog := range []int{0, 10, dequeChunk, 5*dequeChunk + 3, 3 * dequeSpares * dequeChunk} {
		var d deque[int]
		for i := range backlog {
			d.push(i)
		}
		round := func() {
			for i := range 100 {
				d.push(i)
			}
			d.drop(100)
		}
		for range 5 * dequeChunk {
			round() // warm up: the array of chunks reaches its size
		}
		if allocs := testing.AllocsPerRun(200, round); allocs != 0 {
			t.Errorf("backlog %d: %v allocations per round of 100 pushes and drops, want 0", backlog, allocs)
		}
		// The array of chunks stays in proportion to the backlog: the
		// slots of used-up chunks are reused, not kept at its start.
		if c, live := cap(d.chunks), backlog/dequeChunk+2; c > 4*live {
			t.Errorf("backlog %d: the array of chunks has room for %d after %d rounds, want at most %d", backlog, c, 5*dequeChunk+200, 4*live)
		}
	}
}

func TestDequeOutOfRangePanics(t *testing.T) {
	var d deque[int]
	d.push(1)
	for name, f := range map[string]func(){
		"at(1)":   func() { d.at(1) },
		"at(-1)":  func() { d.at(-1) },
		"drop(2)": func() { d.drop(2) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s on a deque of one element did not panic", name)
				}
			}()
			f()
		}()
	}
}

// TestDequeKeepsWhatItRefillsWith: a deque emptied and refilled by more
// chunks than dequeSpares allocates nothing once told to keep that many
// (deque.keep, which FIFO sets from its MaxBatch).
func TestDequeKeepsWhatItRefillsWith(t *testing.T) {
	const chunks = 3 * dequeSpares
	d := deque[int]{keep: chunks}
	round := func() {
		for i := range chunks * dequeChunk {
			d.push(i)
		}
		d.drop(d.len())
	}
	round()
	if allocs := testing.AllocsPerRun(20, round); allocs != 0 {
		t.Errorf("%v allocations per refill of %d chunks with keep=%d, want 0", allocs, chunks, chunks)
	}
	if d.held() != chunks {
		t.Errorf("a drained deque with keep=%d holds %d chunks, want %d", chunks, d.held(), chunks)
	}
}
