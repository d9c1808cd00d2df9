// Package memory is the in-memory informerdb backend: plain maps, as fast as
// client-go's indexer, optionally saved to a snapshot file. Import it for its
// side effect of registering the memory:// scheme.
//
// # URLs
//
//	memory://                                   a store that lives as long as the process
//	memory:///abs/path/cache.snap               loaded from the file on Open, saved on Close
//	memory:///abs/path/cache.snap?snapshot_interval=30s   also saved every 30s
//
// snapshot_interval overrides store.Options.SnapshotInterval and
// lock_timeout store.Options.LockTimeout; both need a file. Other
// parameters, and a file path that is relative or ends in a slash (which
// names a directory), are rejected with store.ErrInvalid. [New] is the
// direct constructor of a store without a file.
//
// One file holds any number of stores, one per Options.Name; a snapshot
// written by any of them saves all of them. One process at a time has a file
// open: the first store of a file locks it (flock of cache.snap.lock beside
// it), and another process's Open waits up to Options.LockTimeout, then
// fails with store.ErrLocked (or its context's error); the lock is released when the file's last
// store closes. A file store needs Options.Codec: snapshots hold encoded
// objects, and Open decodes them and rebuilds the indexes.
//
// # Durability
//
// Without a file, nothing survives the process: the resume point is lost with
// it, and the informer lists again on start.
//
// With a file, what survives is the last snapshot (Close's, or the last
// periodic one): the objects and resume point of every store of the file as
// committed at one instant, written to a temporary file that is fsynced and
// renamed over the old one, so kill -9 or a power loss at any instant leaves
// the old snapshot or the new one, never a resume point ahead of its
// objects. Commits after the last snapshot are lost by a crash; the informer
// then resumes from the older resume point and receives them again. A
// snapshot that fails leaves the previous one: a periodic one logs the
// error, Close returns it (the store is closed all the same).
// store.Options.Durability does not apply: commits never wait for the disk.
//
// # Concurrency
//
// Stores are safe for concurrent use. Reads never wait for encoding or I/O;
// writes are serialized per store. A snapshot copies the committed state
// under a short lock and writes it without blocking commits.
//
// # Errors
//
// As package store and package indexer state them; in file mode an object
// the codec cannot encode is store.ErrInvalid. A truncated or damaged
// snapshot fails Open with store.ErrCorrupt naming the file; one written
// with another codec, object type or key function with
// store.ErrIncompatible; a changed Options.Scope empties the store
// (Info().Reset says why). Opening a name already open in the process,
// until its Close returns, is store.ErrInUse.
//
// # Caveats
//
//   - Every snapshot rewrites the whole file, and file mode keeps each
//     object's encoding besides the decoded object (about a fifth more
//     memory for Pods).
//   - A memory store without a file keeps objects as given (not copied, see
//     store.Store), without encoding them, so it does not reject objects
//     its codec could not encode.
//   - On platforms without flock (not Unix) the file is not locked: two
//     processes must not open one file there.
package memory
