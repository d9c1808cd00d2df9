package store

import "errors"

var (
	// ErrNotFound is returned when a named thing (an index, a store in a
	// database, a file) does not exist.
	ErrNotFound = errors.New("not found")
	// ErrClosed is returned by every operation on a closed store.
	ErrClosed = errors.New("store is closed")
	// ErrCorrupt is returned when a database or snapshot cannot be read
	// because its contents are damaged. The error names the file. Recovery:
	// delete the file and let the informer relist.
	ErrCorrupt = errors.New("data is corrupt")
	// ErrIncompatible is returned when a store was written with another
	// format version, codec, object type or key function than the one it is
	// opened with. The error says what differs.
	ErrIncompatible = errors.New("incompatible store")
	// ErrLocked is returned when a database is held by another process and
	// did not become free within the lock timeout.
	ErrLocked = errors.New("database is locked by another process")
	// ErrInvalid is returned for bad input: a nil object, an object the key
	// function, an index function or the codec rejects, an unknown URL
	// parameter or a malformed option.
	ErrInvalid = errors.New("invalid argument")
	// ErrIndexExists is returned by AddIndexers when an index of that name
	// already exists.
	ErrIndexExists = errors.New("index already exists")
	// ErrInUse is returned when a store name is opened twice in one process.
	ErrInUse = errors.New("store is already open")
	// ErrWritesStopped is returned by every write of a persistent store
	// after a commit of its database may have failed to reach the disk (a
	// failed fsync, an I/O error): the commit may be on disk or not, and no
	// later one would be known durable. The error also wraps that first
	// failure. Reads go on; writes fail until every store of the database
	// is closed and opened again, which in practice means restarting the
	// process. Retrying the write cannot help: a liveness check should
	// restart the process (see informer.Informer.CheckCommits).
	ErrWritesStopped = errors.New("writes stopped until the store is reopened")
	// ErrUnsafe is returned when a database or snapshot path is not private
	// to the user opening it: it is a symbolic link, it (or a file in it)
	// can be written by other users or belongs to another user, or its
	// directory lets other users replace it. The error names the path and
	// what is wrong.
	ErrUnsafe = errors.New("unsafe file permissions")
)
