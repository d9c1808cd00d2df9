package rawdb

import (
	"errors"
	"testing"
)

// TestRegistry checks the rules both backends rely on: one open per path,
// shared by its users, closed with the last; a named user is refused while
// it has the database; Join needs a named user; an open in progress is
// waited for.
func TestRegistry(t *testing.T) {
	var r Registry[*int]
	opens, closes := 0, 0
	open := func() (*int, error) { opens++; n := opens; return &n, nil }
	errInUse := errors.New("in use")
	use := func(_ *int, inUse bool) (<-chan struct{}, error) {
		if inUse {
			return nil, errInUse
		}
		return nil, nil
	}
	wait := func(ch <-chan struct{}, _ bool) error { <-ch; return nil }
	closeDB := func(*int) error { closes++; return nil }

	a, err := r.Acquire("p", "", open, use, wait)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := r.Join("p", func(*int) bool { return true }); ok {
		t.Error("Join succeeded on a database only raw users have open")
	}
	b, err := r.Acquire("p", "pods", open, use, wait)
	if err != nil || b != a || opens != 1 {
		t.Fatalf("second Acquire: %v, %v (opens %d); want the first's database, opened once", b, err, opens)
	}
	if _, err := r.Acquire("p", "pods", open, use, wait); !errors.Is(err, errInUse) {
		t.Errorf("Acquire of a name in use: %v; want %v", err, errInUse)
	}
	if r.Reserve("p", "pods") {
		t.Error("Reserve of a name in use succeeded")
	}
	if ran, _ := r.Unless("p", func() error { return nil }); ran {
		t.Error("Unless ran for an open database")
	}
	j, ok := r.Join("p", func(*int) bool { return true })
	if !ok || j != a {
		t.Fatalf("Join: %v, %v; want the open database", j, ok)
	}
	for _, u := range []string{"", "pods", ""} {
		if closes != 0 {
			t.Fatalf("closed with users left")
		}
		if err := r.Release("p", u, closeDB); err != nil {
			t.Fatal(err)
		}
	}
	if closes != 1 {
		t.Fatalf("closes = %d after the last Release; want 1", closes)
	}
	if _, _, ok := r.Lookup("p"); ok {
		t.Error("Lookup found a closed database")
	}

	// A second Acquire during an open waits for it and shares it.
	started, finish := make(chan struct{}), make(chan struct{})
	got := make(chan *int, 1)
	go func() {
		db, err := r.Acquire("q", "a", func() (*int, error) {
			close(started)
			<-finish
			n := 42
			return &n, nil
		}, use, wait)
		if err != nil {
			t.Error(err)
		}
		got <- db
	}()
	<-started
	if _, opening, ok := r.Lookup("q"); !ok || !opening {
		t.Errorf("Lookup during the open: opening %v, ok %v; want both", opening, ok)
	}
	waited := make(chan *int, 1)
	go func() {
		db, err := r.Acquire("q", "b", func() (*int, error) { return nil, errors.New("opened twice") }, use,
			func(ch <-chan struct{}, opening bool) error {
				if !opening {
					t.Error("wait: not for an open in progress")
				}
				<-ch
				return nil
			})
		if err != nil {
			t.Error(err)
		}
		waited <- db
	}()
	close(finish)
	first, second := <-got, <-waited
	if first != second || *first != 42 {
		t.Errorf("the waiting Acquire got %v, the opener %v; want one database", second, first)
	}
}
