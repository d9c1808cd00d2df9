package store

// Codec turns objects into bytes and back. Persistent backends need one; the
// indexer package provides codecs for Kubernetes objects (protobuf for types
// client-go's scheme knows, JSON for unstructured objects) and for plain Go
// structs.
//
// A Codec is safe for concurrent use.
type Codec interface {
	// Name identifies the encoding ("protobuf", "json"). It is recorded in the
	// store's metadata: reopening a store with a codec of another name fails
	// with ErrIncompatible.
	Name() string
	// Type identifies the object type (a GroupVersionKind or a Go type). It is
	// recorded like Name.
	Type() string
	// Encode returns the encoding of obj, or an error if obj is not of the
	// codec's type or cannot be encoded.
	Encode(obj interface{}) ([]byte, error)
	// Decode returns a new object decoded from data. It never retains data.
	Decode(data []byte) (interface{}, error)
}

// AppendEncoder is an optional interface of a Codec: it appends obj's
// encoding, the same bytes Encode returns, to dst and returns the extended
// buffer, growing it if need be. A store that copies what it writes may then
// encode into buffers it reuses, instead of allocating one per object.
type AppendEncoder interface {
	AppendEncode(dst []byte, obj interface{}) ([]byte, error)
}
