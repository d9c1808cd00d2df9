package writes

import (
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/informerdb/informerdb/internal/typednil"
	"github.com/informerdb/informerdb/store"
)

// Rule says how a write moves the resourceVersion a store has seen
// (cache.Store's LastStoreSyncResourceVersion), as client-go's thread-safe
// store moves its own (with its AtomicFIFO feature, on by default).
type Rule uint8

const (
	// SeenObjects: the resourceVersion of the write's last object, when
	// that object has metadata; otherwise (a tombstone, a delete by key,
	// an object a transform left without metadata) it stays. Add,
	// Update and Delete follow it as client-go's Add, Update and
	// DeleteWithObject do, and a Commit with Batch.ResumeOnly as
	// client-go's Transaction.
	SeenObjects Rule = iota
	// SeenObjectsThenRV is SeenObjects followed, when the write has a
	// resourceVersion, by that resourceVersion: a Commit, whose batch
	// leads to its ResourceVersion as client-go's informer gets to a
	// watch event's or a bookmark's.
	SeenObjectsThenRV
	// SeenRV: the write's resourceVersion, "" included, as client-go's
	// Replace and Bookmark.
	SeenRV
)

// CommitRule is the Rule of a Commit of b.
func CommitRule(b store.Batch) Rule {
	if b.ResumeOnly {
		return SeenObjects
	}
	return SeenObjectsThenRV
}

// Seen holds the resourceVersion a store has seen, what cache.Store's
// LastStoreSyncResourceVersion returns. It is kept in memory only: a store
// opened again starts from its resume point. Stores set it once a write is
// visible to reads and before the next write can start, so it never runs
// ahead of what reads return. Seen is safe for concurrent use; the zero
// value holds "".
//
// It also holds the store's resume point (Resume), which only moves with a
// write that has a resourceVersion.
type Seen struct {
	mu     sync.RWMutex
	rv     string
	resume string
}

// NewSeen returns a Seen holding rv, as the resourceVersion seen and the
// resume point.
func NewSeen(rv string) *Seen { return &Seen{rv: rv, resume: rv} }

// Resume returns the resume point: NewSeen's, or the last non-empty
// resourceVersion given to After.
func (s *Seen) Resume() string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.resume
}

// Load returns the resourceVersion seen.
func (s *Seen) Load() string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.rv
}

// Store sets the resourceVersion seen.
func (s *Seen) Store(rv string) {
	s.mu.Lock()
	s.rv = rv
	s.mu.Unlock()
}

// After moves the resourceVersion seen past a write whose last
// operation's object is last (nil for a write without operations), with
// resourceVersion rv, under rule. It reads the metadata of one object at
// most: client-go's transaction too takes its final object's only. An
// object without metadata leaves the resourceVersion seen, as in client-go.
func (s *Seen) After(last interface{}, rv string, rule Rule) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if rv != "" {
		s.resume = rv
	}
	if rule == SeenRV {
		s.rv = rv
		return
	}
	if !typednil.Is(last) {
		if m, err := meta.Accessor(last); err == nil {
			s.rv = m.GetResourceVersion()
		}
	}
	if rule == SeenObjectsThenRV && rv != "" {
		s.rv = rv
	}
}
