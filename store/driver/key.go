package driver

import (
	"fmt"
	"strings"

	"github.com/informerdb/informerdb/store"
)

// CheckKey returns an error wrapping store.ErrInvalid when no backend may
// store an object under key, and nil otherwise. Two kinds of key are refused:
//
//   - the empty one: bbolt cannot store it, so a store holding it could not
//     move to a bolt database, and an object without a key is a bug
//     upstream (client-go's DeltaFIFO refuses it too);
//   - one ending in "/": what client-go's key function makes of an object
//     with a namespace and no name ("ns/"), which the API server never
//     serves.
//
// Every backend calls CheckKey on each key a write or an Import would store,
// before changing anything, so that they all refuse the same keys. The error
// says only what is wrong; callers add the operation and the record.
func CheckKey(key string) error {
	switch {
	case key == "":
		return fmt.Errorf("empty key: %w", store.ErrInvalid)
	case strings.HasSuffix(key, "/"):
		return fmt.Errorf("key %.64q ends in \"/\" (an object with a namespace and no name): %w", key, store.ErrInvalid)
	}
	return nil
}
