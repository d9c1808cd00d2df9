package rawdb

import "sync"

// Registry holds the databases this process has open, by path, each shared
// by its users (a second open of a path would wait for the engine's lock)
// and closed with the last: the stores open on it, by name, and raw
// accesses, user "". The zero value is empty; it is safe for concurrent use.
type Registry[D any] struct {
	mu  sync.Mutex
	dbs map[string]*entry[D]
}

type entry[D any] struct {
	db     D
	users  map[string]int // how many of each user
	opened chan struct{}  // closed once the open is over, failed or not
}

// Acquire returns the database at path with user added, opening it with
// open, the registry unlocked, unless this process has it open: then use,
// the registry locked, says whether user may share it (inUse: a named user
// has it already) with a nil channel and error, or a channel to wait for
// before looking again. wait, the registry unlocked, waits for such a
// channel or (opening) for another user's open, or fails.
func (r *Registry[D]) Acquire(path, user string, open func() (D, error),
	use func(db D, inUse bool) (<-chan struct{}, error), wait func(ch <-chan struct{}, opening bool) error) (D, error) {
	var zero D
	r.mu.Lock()
	defer r.mu.Unlock()
	for e := r.dbs[path]; e != nil; e = r.dbs[path] {
		var ch <-chan struct{} = e.opened
		opening := !isClosed(e.opened)
		if !opening {
			var err error
			if ch, err = use(e.db, user != "" && e.users[user] > 0); err != nil {
				return zero, err
			}
			if ch == nil {
				e.users[user]++
				return e.db, nil
			}
		}
		r.mu.Unlock()
		err := wait(ch, opening)
		r.mu.Lock()
		if err != nil {
			return zero, err
		}
	}
	if r.dbs == nil {
		r.dbs = map[string]*entry[D]{}
	}
	e := &entry[D]{users: map[string]int{user: 1}, opened: make(chan struct{})}
	r.dbs[path] = e
	r.mu.Unlock()
	db, err := open()
	r.mu.Lock()
	close(e.opened)
	if err != nil {
		delete(r.dbs, path)
		return zero, err
	}
	e.db = db
	return db, nil
}

// Reserve adds the named user to the database at path, which the caller
// uses; false if it has it already.
func (r *Registry[D]) Reserve(path, user string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.dbs[path]
	if e.users[user] > 0 {
		return false
	}
	e.users[user]++
	return true
}

// Join adds a user "" to the database at path if a named user (a store,
// not only raw reads) has it open and ok(db).
func (r *Registry[D]) Join(path string, ok func(D) bool) (D, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.dbs[path]
	if e == nil || !isClosed(e.opened) || len(e.users) == 1 && e.users[""] > 0 || !ok(e.db) {
		var zero D
		return zero, false
	}
	e.users[""]++
	return e.db, true
}

// Release removes a user of the database at path and, with the last,
// removes the database and closes it with close, the registry locked: an
// open of the path meanwhile waits for the close.
func (r *Registry[D]) Release(path, user string, close func(D) error) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.dbs[path]
	if e.users[user]--; e.users[user] <= 0 {
		delete(e.users, user)
	}
	if len(e.users) > 0 {
		return nil
	}
	delete(r.dbs, path)
	return close(e.db)
}

// Lookup returns the database at path, if this process has it open, or
// whether it is opening it.
func (r *Registry[D]) Lookup(path string) (db D, opening, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e := r.dbs[path]; e != nil {
		return e.db, !isClosed(e.opened), true
	}
	return db, false, false
}

// Unless runs fn, the registry locked (opens wait), unless this process has
// the database at path open or opening.
func (r *Registry[D]) Unless(path string, fn func() error) (ran bool, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.dbs[path] != nil {
		return false, nil
	}
	return true, fn()
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
