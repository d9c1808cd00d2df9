// Package store defines the contract every informerdb backend satisfies, and
// opens backends by URL.
//
// A [Store] is a client-go [cache.Indexer] whose contents, indexes and resume
// point (the resourceVersion from which a restarted informer resumes its watch)
// may outlive the process. Library code programs against [Store]; applications
// pick a backend with a URL and a blank import, as with database/sql drivers:
//
//	import _ "github.com/informerdb/informerdb/store/bolt"
//
//	s, err := store.Open(ctx, "bolt:///var/lib/ctrl/cache.db", &store.Options{
//		Name:  "v1/configmaps",
//		Codec: codec,
//	})
//
// # URLs
//
// The scheme names the backend: memory://, memdb://, bolt:// and badger://.
// The path, when present, names the file or directory. Query parameters tune
// the backend, which rejects those it does not know and lists the ones it
// accepts.
//
// # Resume point
//
// [Store.ResourceVersion] is the persisted resume point R. It moves only in
// the same transaction as the objects and index entries it describes, so R
// never runs ahead of what is stored: a resume point that lags is safe, one
// that runs ahead loses events.
//
// # Errors
//
// Errors name the operation and the cause ("store: add default/x: ...") and
// wrap one of the sentinel errors where one applies, to be tested with
// [errors.Is].
package store
