package indexer

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/informerdb/informerdb/store"
)

// KeySize is the size in bytes of an encryption key (AES-256).
const KeySize = 32

// ErrUnknownKey is returned (wrapped, with store.ErrIncompatible) when an
// encrypted record names a key the key ring does not hold. The error names
// the record's key id and the ids in the ring.
var ErrUnknownKey = errors.New("encryption key not in the key ring")

const (
	sealVersion = 1
	keyIDSize   = 8
	headerSize  = 1 + keyIDSize
)

// EncryptionKey is one AES-256 key. Its ID is stored with every record sealed
// under it. An EncryptionKey is immutable and safe for concurrent use.
type EncryptionKey struct {
	id   [keyIDSize]byte
	aead cipher.AEAD
}

// NewEncryptionKey returns the key made of the KeySize bytes of secret (copied).
func NewEncryptionKey(secret []byte) (EncryptionKey, error) {
	if len(secret) != KeySize {
		return EncryptionKey{}, fmt.Errorf("indexer: new encryption key: %d bytes, want %d (AES-256): %w", len(secret), KeySize, store.ErrInvalid)
	}
	block, err := aes.NewCipher(secret)
	if err != nil {
		return EncryptionKey{}, fmt.Errorf("indexer: new encryption key: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return EncryptionKey{}, fmt.Errorf("indexer: new encryption key: %w", err)
	}
	h := sha256.New()
	h.Write([]byte("informerdb encryption key id\x00"))
	h.Write(secret)
	var k EncryptionKey
	copy(k.id[:], h.Sum(nil))
	k.aead = aead
	return k, nil
}

// ParseKey returns the key held in data: exactly KeySize raw bytes, or their
// base64 encoding (standard or URL alphabet, padded or not; surrounding
// whitespace is ignored).
func ParseKey(data []byte) (EncryptionKey, error) {
	if len(data) == KeySize {
		return NewEncryptionKey(data)
	}
	text := strings.TrimSpace(string(data))
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(text); err == nil {
			if len(b) != KeySize {
				return EncryptionKey{}, fmt.Errorf("indexer: parse key: base64 decodes to %d bytes, want %d (AES-256): %w", len(b), KeySize, store.ErrInvalid)
			}
			return NewEncryptionKey(b)
		}
	}
	return EncryptionKey{}, fmt.Errorf("indexer: parse key: %d bytes that are neither %d raw bytes nor base64 (make one with: head -c 32 /dev/urandom | base64): %w", len(data), KeySize, store.ErrInvalid)
}

// LoadKey reads a key from the file at path (see ParseKey). Keep the file
// readable by the controller's user only; a Kubernetes Secret mounted as a
// volume is a good home for it.
func LoadKey(path string) (EncryptionKey, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return EncryptionKey{}, fmt.Errorf("indexer: load key: %w", err)
	}
	k, err := ParseKey(data)
	if err != nil {
		return EncryptionKey{}, fmt.Errorf("indexer: load key %s: %w", path, err)
	}
	return k, nil
}

// KeyFromEnv reads a key from the environment variable name (see ParseKey;
// in practice base64).
func KeyFromEnv(name string) (EncryptionKey, error) {
	v, ok := os.LookupEnv(name)
	if !ok || v == "" {
		return EncryptionKey{}, fmt.Errorf("indexer: key from environment: $%s is not set: %w", name, store.ErrInvalid)
	}
	k, err := ParseKey([]byte(v))
	if err != nil {
		return EncryptionKey{}, fmt.Errorf("indexer: key from environment $%s: %w", name, err)
	}
	return k, nil
}

// ID returns the key's identifier (16 hex digits), as stored with each
// record sealed under it and named in errors. The zero EncryptionKey has none.
func (k EncryptionKey) ID() string {
	if k.aead == nil {
		return ""
	}
	return hex.EncodeToString(k.id[:])
}

// KeyRing holds the keys an EncryptedCodec may use: the primary key seals
// every new record; every key of the ring opens the records sealed under
// it. To rotate, make the new key primary and keep the old one until every
// record has been rewritten (by Rekey at once, or as objects change). A
// KeyRing is immutable and safe for concurrent use.
type KeyRing struct {
	primary EncryptionKey
	byID    map[[keyIDSize]byte]EncryptionKey
}

// NewKeyRing returns a key ring that seals with primary and opens records
// sealed under primary or any of others. Duplicates are ignored.
func NewKeyRing(primary EncryptionKey, others ...EncryptionKey) (*KeyRing, error) {
	if primary.aead == nil {
		return nil, fmt.Errorf("indexer: new key ring: zero primary key (use NewEncryptionKey, ParseKey, LoadKey or KeyFromEnv): %w", store.ErrInvalid)
	}
	r := &KeyRing{primary: primary, byID: map[[keyIDSize]byte]EncryptionKey{primary.id: primary}}
	for i, k := range others {
		if k.aead == nil {
			return nil, fmt.Errorf("indexer: new key ring: key %d is the zero key: %w", i+1, store.ErrInvalid)
		}
		r.byID[k.id] = k
	}
	return r, nil
}

// nearID reports whether id differs from a ring key's id in at most half
// its bytes.
func (r *KeyRing) nearID(id [keyIDSize]byte) bool {
	for kid := range r.byID {
		diff := 0
		for i := range id {
			if id[i] != kid[i] {
				diff++
			}
		}
		if diff <= keyIDSize/2 {
			return true
		}
	}
	return false
}

// Primary returns the id of the key new records are sealed with.
func (r *KeyRing) Primary() string { return r.primary.ID() }

// IDs returns the ids of every key in the ring, sorted.
func (r *KeyRing) IDs() []string {
	ids := make([]string, 0, len(r.byID))
	for _, k := range r.byID {
		ids = append(ids, k.ID())
	}
	slices.Sort(ids)
	return ids
}

// EncryptedCodec seals the encodings of another codec with AES-256-GCM:
// encryption at rest. Each record is
//
//	version (1 byte, 0x01) | key id (8 bytes) | nonce (12 bytes) | ciphertext and tag
//
// The key id is the first 8 bytes of SHA-256 of a fixed label and the key:
// it names a key without revealing it. The authenticated data binds the
// record to its header and to the inner codec's name and type. Nonces are
// random: rotate the key before 2^32 records have been sealed under it.
//
// It protects each object's confidentiality, and that a record was sealed
// by a holder of the key. It does not bind a record to its store or object
// key (a codec sees only the object), and a store's metadata (its resume
// point, its set of keys) is neither encrypted nor authenticated: someone
// who can write the database's files, without the key, can move a sealed
// record between keys or stores of one key ring, drop records, or change
// the resume point. Against that, protect the files themselves (see
// driver.CheckPath).
//
// It is safe for concurrent use.
type EncryptedCodec struct {
	inner store.Codec
	keys  *KeyRing
	name  string
	// aad is the fixed part of every record's authenticated data.
	aad []byte
}

var _ store.Codec = (*EncryptedCodec)(nil)

// NewEncryptedCodec returns a codec that encodes with inner and seals the
// result under keys' primary key. Its Name is inner's followed by
// "+aes256gcm", so that a store written encrypted is refused when opened
// without encryption, and the reverse, with store.ErrIncompatible; Rekey
// converts one into the other. Only the objects are encrypted: keys, index
// values and the store's metadata are stored as they are.
func NewEncryptedCodec(inner store.Codec, keys *KeyRing) (*EncryptedCodec, error) {
	if inner == nil {
		return nil, fmt.Errorf("indexer: new encrypted codec: nil inner codec: %w", store.ErrInvalid)
	}
	if keys == nil {
		return nil, fmt.Errorf("indexer: new encrypted codec: nil key ring: %w", store.ErrInvalid)
	}
	c := &EncryptedCodec{inner: inner, keys: keys, name: inner.Name() + "+aes256gcm"}
	c.aad = []byte("informerdb aes256gcm\x00" + inner.Name() + "\x00" + inner.Type() + "\x00")
	return c, nil
}

// Name implements store.Codec: the inner codec's name and "+aes256gcm".
func (c *EncryptedCodec) Name() string { return c.name }

// Type implements store.Codec: the inner codec's type.
func (c *EncryptedCodec) Type() string { return c.inner.Type() }

// Encode implements store.Codec: the inner encoding, sealed.
func (c *EncryptedCodec) Encode(obj interface{}) ([]byte, error) {
	plain, err := c.inner.Encode(obj)
	if err != nil {
		return nil, err
	}
	return c.seal(plain)
}

// Decode implements store.Codec. A record sealed under a key the ring does
// not hold fails with ErrUnknownKey and store.ErrIncompatible; a record that
// does not authenticate (damaged, or not sealed by this codec), or whose
// key id is that of a key of the ring with a few bytes changed (damaged),
// fails with store.ErrCorrupt. Decode never returns an object it could not
// authenticate.
func (c *EncryptedCodec) Decode(data []byte) (interface{}, error) {
	plain, err := c.open(data)
	if err != nil {
		return nil, err
	}
	return c.inner.Decode(plain)
}

// KeyID returns the id of the key the record data was sealed under.
func (c *EncryptedCodec) KeyID(data []byte) (string, error) {
	if err := checkHeader(data); err != nil {
		return "", err
	}
	return hex.EncodeToString(data[1:headerSize]), nil
}

// Reencrypt opens the record data with whichever key of the ring sealed it
// and seals it again under the primary key, with a fresh nonce.
func (c *EncryptedCodec) Reencrypt(data []byte) ([]byte, error) {
	plain, err := c.open(data)
	if err != nil {
		return nil, err
	}
	return c.seal(plain)
}

func (c *EncryptedCodec) seal(plain []byte) ([]byte, error) {
	k := c.keys.primary
	nonceSize := k.aead.NonceSize()
	out := make([]byte, headerSize+nonceSize, headerSize+nonceSize+len(plain)+k.aead.Overhead())
	out[0] = sealVersion
	copy(out[1:headerSize], k.id[:])
	if _, err := io.ReadFull(rand.Reader, out[headerSize:]); err != nil {
		return nil, fmt.Errorf("indexer: encrypt: nonce: %w", err)
	}
	return k.aead.Seal(out, out[headerSize:], plain, c.additional(out[:headerSize])), nil
}

func (c *EncryptedCodec) open(data []byte) ([]byte, error) {
	if err := checkHeader(data); err != nil {
		return nil, err
	}
	var id [keyIDSize]byte
	copy(id[:], data[1:headerSize])
	k, ok := c.keys.byID[id]
	if !ok && c.keys.nearID(id) {
		// Another key's id shares a byte or two with the ring's by chance
		// at most: one that differs in a few bytes is a ring key's, damaged.
		return nil, fmt.Errorf("indexer: decrypt: record sealed under key %s, a damaged id of a key of the ring (%s): %w",
			hex.EncodeToString(id[:]), strings.Join(c.keys.IDs(), ", "), store.ErrCorrupt)
	}
	if !ok {
		return nil, fmt.Errorf("indexer: decrypt: record sealed under key %s; the key ring holds %s (load the old key as a secondary key of the ring): %w: %w",
			hex.EncodeToString(id[:]), strings.Join(c.keys.IDs(), ", "), ErrUnknownKey, store.ErrIncompatible)
	}
	nonceSize := k.aead.NonceSize()
	if len(data) < headerSize+nonceSize+k.aead.Overhead() {
		return nil, fmt.Errorf("indexer: decrypt: record of %d bytes is truncated: %w", len(data), store.ErrCorrupt)
	}
	plain, err := k.aead.Open(nil, data[headerSize:headerSize+nonceSize], data[headerSize+nonceSize:], c.additional(data[:headerSize]))
	if err != nil {
		return nil, fmt.Errorf("indexer: decrypt: record sealed under key %s does not authenticate (damaged, or sealed for another codec or type than %s %s): %w",
			k.ID(), c.inner.Name(), c.inner.Type(), store.ErrCorrupt)
	}
	return plain, nil
}

func checkHeader(data []byte) error {
	switch {
	case len(data) < headerSize:
		return fmt.Errorf("indexer: decrypt: record of %d bytes is too short to be encrypted: %w", len(data), store.ErrCorrupt)
	case data[0] != sealVersion:
		return fmt.Errorf("indexer: decrypt: record format %d, want %d (not written by an encrypted codec?): %w", data[0], sealVersion, store.ErrCorrupt)
	}
	return nil
}

func (c *EncryptedCodec) additional(header []byte) []byte {
	return append(bytes.Clone(c.aad), header...)
}

// RekeyResult says what Rekey did.
type RekeyResult struct {
	// Records is the number of records rewritten.
	Records int
	// Encrypted is true when the store was written without encryption and
	// now is encrypted.
	Encrypted bool
	// From counts the records read per key id ("" for plain records).
	From map[string]int
}

// Rekey rewrites every record of the store named name in the database at
// rawURL sealed under c's primary key: records sealed under older keys of
// the ring are re-encrypted, and a store written without encryption with
// c's inner codec is encrypted (its codec becomes c.Name()). Index values
// and the resume point are kept, so an informer resumes without relisting.
// The store is replaced in one atomic import (store.Export, store.Import).
//
// The database must not be open in another process. Rekey holds every
// record in memory. It does not scrub the database files: a backend may keep
// the old bytes in free pages (bbolt) or until compaction (badger). After a
// key is compromised, or to encrypt a store that held Secrets in plain text,
// delete the database instead and let the informer relist, or restore a
// snapshot into a new file.
func Rekey(ctx context.Context, rawURL, name string, c *EncryptedCodec) (RekeyResult, error) {
	var recs []store.Record
	info, err := store.Export(ctx, rawURL, name, func(r store.Record) error {
		r.Data = bytes.Clone(r.Data)
		recs = append(recs, r)
		return nil
	})
	if err != nil {
		return RekeyResult{}, fmt.Errorf("indexer: rekey %s: %w", name, err)
	}
	res := RekeyResult{From: map[string]int{}}
	switch {
	case info.Type != c.Type():
		return RekeyResult{}, fmt.Errorf("indexer: rekey %s: stored object type %q, codec type %q: %w", name, info.Type, c.Type(), store.ErrIncompatible)
	case info.Codec == c.Name():
	case info.Codec == c.inner.Name():
		res.Encrypted = true
	default:
		return RekeyResult{}, fmt.Errorf("indexer: rekey %s: stored with codec %q, want %q or %q: %w", name, info.Codec, c.Name(), c.inner.Name(), store.ErrIncompatible)
	}
	for i := range recs {
		var data []byte
		if res.Encrypted {
			res.From[""]++
			data, err = c.seal(recs[i].Data)
		} else {
			id, _ := c.KeyID(recs[i].Data)
			res.From[id]++
			data, err = c.Reencrypt(recs[i].Data)
		}
		if err != nil {
			return RekeyResult{}, fmt.Errorf("indexer: rekey %s: record %s: %w", name, recs[i].Key, err)
		}
		recs[i].Data = data
	}
	info.Codec = c.Name()
	next := 0
	err = store.Import(ctx, rawURL, info, func() (store.Record, error) {
		if next == len(recs) {
			return store.Record{}, io.EOF
		}
		next++
		return recs[next-1], nil
	})
	if err != nil {
		return RekeyResult{}, fmt.Errorf("indexer: rekey %s: %w", name, err)
	}
	res.Records = len(recs)
	return res, nil
}
