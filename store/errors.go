package store

import "errors"

var (
	// ErrNotFound is returned when a named thing (an index, a store in a
	// database, a file) does not exist.
	ErrNotFound = errors.New("not found")
	// ErrClosed is returned by every operation on a closed store.
	ErrClosed = errors.New("store is closed")
	// ErrCorrupt is returned when a database or snapshot named in the error
	// is damaged. Recovery: delete the file and let the informer relist.
	ErrCorrupt = errors.New("data is corrupt")
	// ErrIncompatible is returned when a store was written with another
	// format version, codec, object type or key function, which the error names.
	ErrIncompatible = errors.New("incompatible store")
	// ErrLocked is returned when a database is held by another process and
	// did not become free within the lock timeout.
	ErrLocked = errors.New("database is locked by another process")
	// ErrInvalid is returned for bad input: a nil object, one the key, index
	// or codec functions reject, an unknown URL parameter, a bad option.
	ErrInvalid = errors.New("invalid argument")
	// ErrIndexExists is returned by AddIndexers for a name already taken.
	ErrIndexExists = errors.New("index already exists")
	// ErrInUse is returned when a store name is opened twice in one process.
	ErrInUse = errors.New("store is already open")
	// ErrWritesStopped is returned by every write of a persistent store
	// after a commit of its database may have failed to reach the disk (a
	// failed fsync), wrapping that failure: no later commit would be known
	// durable. Reads go on; writes fail until every store of the database
	// is reopened. Retrying cannot help: a liveness check should restart
	// the process (see informer.Informer.CheckCommits).
	ErrWritesStopped = errors.New("writes stopped until the store is reopened")
	// ErrUnsafe is returned when a database or snapshot path is not private
	// to the user opening it (see store/driver.CheckPath); the error names
	// the path and what is wrong.
	ErrUnsafe = errors.New("unsafe file permissions")
)
