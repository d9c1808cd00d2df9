package snapfile

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/informerdb/informerdb/store"
)

// TestOpenings checks that Wait returns at once for a path no open is
// under way for, waits for an open's done otherwise (with mu released
// meanwhile), and gives up with ErrLocked after its timeout and with the
// context's error when the context ends.
func TestOpenings(t *testing.T) {
	var mu sync.Mutex
	var o openings
	mu.Lock()
	defer mu.Unlock()
	if err := o.Wait(t.Context(), &mu, "a", 0); err != nil {
		t.Fatalf("Wait with no open under way: %v", err)
	}
	done := o.Start("a")
	if !o.Busy("a") || o.Busy("b") {
		t.Fatalf("Busy(a), Busy(b) = %v, %v after Start(a); want true, false", o.Busy("a"), o.Busy("b"))
	}
	if err := o.Wait(t.Context(), &mu, "b", 0); err != nil {
		t.Fatalf("Wait for another path: %v", err)
	}
	if err := o.Wait(t.Context(), &mu, "a", 0); !errors.Is(err, store.ErrLocked) {
		t.Fatalf("Wait past its timeout = %v, want ErrLocked", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := o.Wait(ctx, &mu, "a", time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait with its context ended = %v, want context.Canceled", err)
	}

	// The open ends while Wait waits: Wait must have released mu.
	waited := make(chan error, 1)
	go func() {
		mu.Lock()
		defer mu.Unlock()
		waited <- o.Wait(t.Context(), &mu, "a", time.Hour)
	}()
	mu.Unlock()
	mu.Lock() // taken while the goroutine waits, or before it starts
	done()
	mu.Unlock()
	if err := <-waited; err != nil {
		t.Fatalf("Wait for an open that ended: %v", err)
	}
	mu.Lock()
	if o.Busy("a") {
		t.Fatal("Busy(a) after its open ended")
	}
}
