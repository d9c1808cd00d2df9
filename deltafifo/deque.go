package deltafifo

import "iter"

// dequeChunk is the number of elements in one chunk of a deque (a FIFO unit
// is about 140 bytes, so a chunk is about 35 KiB).
const dequeChunk = 256

// dequeSpares is how many emptied chunks a deque keeps for reuse unless
// told otherwise (deque.keep), so that a queue refilled by a couple of
// thousand elements at a time allocates nothing.
const dequeSpares = 8

// deque is a first-in first-out queue kept in fixed-size chunks: a backlog
// grows by one chunk at a time without copying what it holds, and a chunk
// its consumer empties is freed or kept as a spare, where one growing slice
// would copy itself at every growth and keep its largest array, full of
// pointers for the garbage collector, as long as the queue lives. Not safe
// for concurrent use; the queues guard theirs with their mutex.
type deque[T any] struct {
	// chunks[first:] hold the queued elements, oldest first:
	// chunks[first][head:], then the following chunks whole. Every chunk
	// but the last is full (len == dequeChunk). chunks[:first] are nil.
	chunks [][]T
	first  int
	head   int
	n      int   // elements queued
	spares [][]T // emptied chunks (len 0, zeroed), at most keep
	// keep is how many emptied chunks to keep; 0 means dequeSpares.
	keep int
}

func (d *deque[T]) len() int { return d.n }

// spareLimit is how many emptied chunks d keeps.
func (d *deque[T]) spareLimit() int {
	if d.keep == 0 {
		return dequeSpares
	}
	return d.keep
}

// at returns the i-th oldest queued element, valid until the next drop.
func (d *deque[T]) at(i int) *T {
	if i < 0 || i >= d.n {
		panic("deltafifo: deque index out of range")
	}
	j := d.head + i
	return &d.chunks[d.first+j/dequeChunk][j%dequeChunk]
}

// back returns the newest queued element, or nil when the deque is empty.
func (d *deque[T]) back() *T {
	if d.n == 0 {
		return nil
	}
	last := d.chunks[len(d.chunks)-1]
	return &last[len(last)-1]
}

// all yields the queued elements, oldest first. The deque must not change
// while it runs.
func (d *deque[T]) all() iter.Seq[*T] {
	return func(yield func(*T) bool) {
		start := d.head
		for _, c := range d.chunks[d.first:] {
			for i := start; i < len(c); i++ {
				if !yield(&c[i]) {
					return
				}
			}
			start = 0
		}
	}
}

func (d *deque[T]) push(x T) {
	if k := len(d.chunks); k == d.first || len(d.chunks[k-1]) == dequeChunk {
		if d.first > 0 && len(d.chunks) == cap(d.chunks) {
			// Move the live chunk pointers to the front rather than let
			// append copy the used-up slots along.
			live := copy(d.chunks, d.chunks[d.first:])
			clear(d.chunks[live:])
			d.chunks, d.first = d.chunks[:live], 0
		}
		var c []T
		if k := len(d.spares); k > 0 {
			c = d.spares[k-1]
			d.spares[k-1] = nil
			d.spares = d.spares[:k-1]
		} else {
			c = make([]T, 0, dequeChunk)
		}
		d.chunks = append(d.chunks, c)
	}
	k := len(d.chunks) - 1
	d.chunks[k] = append(d.chunks[k], x)
	d.n++
}

// drop removes the n oldest elements. Their slots are zeroed, so that what
// they referenced can be collected, and the chunks they empty are freed.
func (d *deque[T]) drop(n int) {
	if n < 0 || n > d.n {
		panic("deltafifo: deque drop out of range")
	}
	for n > 0 {
		c := d.chunks[d.first]
		m := min(n, len(c)-d.head)
		clear(c[d.head : d.head+m])
		d.head += m
		d.n -= m
		n -= m
		if d.head < len(c) {
			break
		}
		// The oldest chunk is used up (when it is also the newest, the
		// deque is now empty).
		if len(d.spares) < d.spareLimit() {
			d.spares = append(d.spares, c[:0])
		}
		d.chunks[d.first] = nil
		d.first++
		d.head = 0
	}
	if d.first == len(d.chunks) {
		d.chunks, d.first = d.chunks[:0], 0
	}
}
