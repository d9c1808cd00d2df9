package store

import "fmt"

// CheckKey returns an error wrapping ErrInvalid when no backend may store an
// object under key, and nil otherwise. The only such key is the empty one:
// bbolt cannot store it, so a store or snapshot holding it could not move to
// a bolt database, and an object without a key is a bug upstream
// (Kubernetes objects always have a name, and client-go's DeltaFIFO refuses
// an empty key). Every backend calls CheckKey on each key a write or an
// Import would store, before changing anything, so that they all refuse the
// same keys. The error says only what is wrong ("empty key"); callers add
// the operation and which operation or record of it.
func CheckKey(key string) error {
	if key == "" {
		return fmt.Errorf("empty key: %w", ErrInvalid)
	}
	return nil
}
