package deltafifo

// deque is a first-in first-out slice that keeps its array while it is
// pushed and popped at once. Slicing popped elements off the front would
// lose that part of the array for good: a queue with a backlog (a watch
// outpacing its consumer) would copy itself into a new array each time
// appends reached the end. Instead the queued elements move to the array's
// start once the popped slots outnumber them, so each element moves at most
// once per slot popped before it. Not safe for concurrent use; the queues
// guard theirs with their mutex.
type deque[T any] struct {
	buf  []T // buf[head:] are queued, oldest first; buf[:head] are popped (zeroed)
	head int
}

// items returns the queued elements, oldest first. The slice aliases the
// deque: valid until the next push or drop.
func (d *deque[T]) items() []T { return d.buf[d.head:] }

func (d *deque[T]) len() int { return len(d.buf) - d.head }

func (d *deque[T]) push(x T) { d.buf = append(d.buf, x) }

// drop removes the n oldest elements. Their slots are zeroed, so that
// what they referenced can be collected while the array lives on.
func (d *deque[T]) drop(n int) {
	clear(d.buf[d.head : d.head+n])
	d.head += n
	switch queued := len(d.buf) - d.head; {
	case queued == 0:
		d.buf, d.head = d.buf[:0], 0
	case d.head >= queued:
		copy(d.buf, d.buf[d.head:])
		clear(d.buf[queued:])
		d.buf, d.head = d.buf[:queued], 0
	}
}
