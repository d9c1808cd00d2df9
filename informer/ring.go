package informer

// ring is an unbounded FIFO of notifications backed by a circular slice,
// of at least one element, that doubles when full. It is not safe for
// concurrent use; listener guards it.
type ring struct {
	buf   []notification
	head  int // index of the oldest element
	count int
}

func (r *ring) len() int { return r.count }

func (r *ring) push(n notification) {
	if r.count == len(r.buf) {
		grown := make([]notification, 2*len(r.buf))
		k := copy(grown, r.buf[r.head:])
		copy(grown[k:], r.buf[:r.head])
		r.buf = grown
		r.head = 0
	}
	r.buf[(r.head+r.count)%len(r.buf)] = n
	r.count++
}

// peek returns the oldest element without removing it.
func (r *ring) peek() (notification, bool) {
	if r.count == 0 {
		return notification{}, false
	}
	return r.buf[r.head], true
}

func (r *ring) pop() (notification, bool) {
	if r.count == 0 {
		return notification{}, false
	}
	n := r.buf[r.head]
	r.buf[r.head] = notification{} // let the objects be collected
	r.head = (r.head + 1) % len(r.buf)
	r.count--
	return n, true
}

// reset drops every element and returns how many of them were counted
// towards the handler's sync.
func (r *ring) reset() (counted int) {
	for {
		n, ok := r.pop()
		if !ok {
			return counted
		}
		if n.counted {
			counted++
		}
	}
}
