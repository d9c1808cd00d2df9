package indexer

import "sync"

// Bounds of what an encodeBuffers keeps for reuse: a group commit of a few
// thousand objects of a few KiB, and no single large object.
const (
	encodeBuffersMaxBytes = 8 << 20
	encodeBufferMaxCap    = 64 << 10
)

// encodeBuffers is a free list of encoding buffers. A buffer is taken for
// one object's encoding and given back once a persister that copies what it
// writes (BaseConfig.CopiesData) has persisted it. It is safe for
// concurrent use.
type encodeBuffers struct {
	mu    sync.Mutex
	free  [][]byte
	bytes int // total capacity of free
}

// get returns an empty buffer, from the free list if it has one.
func (e *encodeBuffers) get() []byte {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := len(e.free)
	if n == 0 {
		return nil
	}
	buf := e.free[n-1]
	e.free[n-1] = nil
	e.free = e.free[:n-1]
	e.bytes -= cap(buf)
	return buf[:0]
}

// release gives back the buffers of ps taken from e, and clears their Data:
// nothing may read them once they are reused.
func (e *encodeBuffers) release(ps []Prepared) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for i := range ps {
		p := &ps[i]
		if !p.pooled {
			continue
		}
		buf := p.Data
		p.Data, p.pooled = nil, false
		poisonReleased(buf)
		if c := cap(buf); c <= encodeBufferMaxCap && e.bytes+c <= encodeBuffersMaxBytes {
			e.free = append(e.free, buf)
			e.bytes += c
		}
	}
}
