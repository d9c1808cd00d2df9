package engine

// SetTestHooks sets what runs between a write's commit and its cache update
// (afterCommit) and between a reader's decoding of an object from its
// transaction and its use or caching (afterRead): the windows the
// consistency protocol guards (see Store.seq). nil clears one. It must not
// be called while the store is in use.
func (s *Store) SetTestHooks(afterCommit func(), afterRead func(key string)) {
	s.afterCommit, s.afterRead = afterCommit, afterRead
}

// Cached reports whether the cache holds key's object.
func (s *Store) Cached(key string) bool {
	_, ok := s.lru.Get(key)
	return ok
}

// ClearCache empties the cache.
func (s *Store) ClearCache() {
	s.cacheMu.Lock()
	s.lru.Clear()
	s.cacheMu.Unlock()
}
