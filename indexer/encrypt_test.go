package indexer_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
	_ "github.com/informerdb/informerdb/store/badger"
	_ "github.com/informerdb/informerdb/store/bolt"
	"github.com/informerdb/informerdb/store/driver"
)

// marker is the secret payload whose plaintext must never reach the disk of
// an encrypted store.
const marker = "informerdb-plaintext-marker-7f3c9a"

func secretOf(i int) []byte {
	b := bytes.Repeat([]byte{byte(i)}, indexer.KeySize)
	b[0] = 0xa5 // not a base64 letter pattern by accident
	return b
}

func mustKey(t *testing.T, i int) indexer.EncryptionKey {
	t.Helper()
	k, err := indexer.NewEncryptionKey(secretOf(i))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func mustEncrypted(t *testing.T, example interface{}, primary indexer.EncryptionKey, others ...indexer.EncryptionKey) *indexer.EncryptedCodec {
	t.Helper()
	ring, err := indexer.NewKeyRing(primary, others...)
	if err != nil {
		t.Fatal(err)
	}
	c, err := indexer.NewEncryptedCodec(mustCodec(t, example), ring)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func secretObj(name, rv string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, ResourceVersion: rv, Labels: map[string]string{"app": "x"}},
		Data:       map[string][]byte{"password": []byte(marker)},
	}
}

func TestEncryptedCodecRoundTrip(t *testing.T) {
	c := mustEncrypted(t, &corev1.Secret{}, mustKey(t, 1))
	plain := mustCodec(t, &corev1.Secret{})
	if got, want := c.Name(), "protobuf+aes256gcm"; got != want {
		t.Errorf("Name() = %q, want %q", got, want)
	}
	if c.Name() == plain.Name() {
		t.Errorf("encrypted and plain codecs share the name %q", c.Name())
	}
	if got, want := c.Type(), plain.Type(); got != want {
		t.Errorf("Type() = %q, want the inner codec's %q", got, want)
	}
	in := secretObj("s", "7")
	a, err := c.Encode(in)
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Encode(in)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(a, []byte(marker)) {
		t.Errorf("encoding holds the plaintext marker")
	}
	if bytes.Equal(a, b) {
		t.Errorf("two encodings of one object are equal: the nonce is not random")
	}
	for _, data := range [][]byte{a, b} {
		out, err := c.Decode(data)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(in, out); diff != "" {
			t.Errorf("round trip (-in +out):\n%s", diff)
		}
	}
	if id, err := c.KeyID(a); err != nil || id != mustKey(t, 1).ID() {
		t.Errorf("KeyID = %q, %v; want %q", id, err, mustKey(t, 1).ID())
	}
	if _, err := c.Encode(&corev1.ConfigMap{}); err == nil {
		t.Errorf("Encode of a ConfigMap by a Secret codec succeeded")
	}
}

func TestEncryptedCodecRefuses(t *testing.T) {
	k1, k2 := mustKey(t, 1), mustKey(t, 2)
	c1 := mustEncrypted(t, &corev1.Secret{}, k1)
	sealed, err := c1.Encode(secretObj("s", "1"))
	if err != nil {
		t.Fatal(err)
	}
	plainData, err := mustCodec(t, &corev1.Secret{}).Encode(secretObj("s", "1"))
	if err != nil {
		t.Fatal(err)
	}
	flip := func(i int) []byte {
		d := bytes.Clone(sealed)
		d[i] ^= 1
		return d
	}
	tests := []struct {
		name  string
		codec *indexer.EncryptedCodec
		data  []byte
		want  []error
		text  string
	}{
		{name: "unknown key", codec: mustEncrypted(t, &corev1.Secret{}, k2), data: sealed,
			want: []error{indexer.ErrUnknownKey, store.ErrIncompatible}, text: "sealed under key " + k1.ID() + "; the key ring holds " + k2.ID()},
		{name: "flipped ciphertext bit", codec: c1, data: flip(len(sealed) - 20), want: []error{store.ErrCorrupt}, text: "does not authenticate"},
		{name: "flipped nonce bit", codec: c1, data: flip(10), want: []error{store.ErrCorrupt}, text: "does not authenticate"},
		// A key id a few bytes off one of the ring's is that id damaged,
		// not another key's.
		{name: "flipped key id bit", codec: c1, data: flip(1), want: []error{store.ErrCorrupt}, text: "a damaged id of a key of the ring"},
		{name: "truncated", codec: c1, data: sealed[:20], want: []error{store.ErrCorrupt}, text: "truncated"},
		{name: "too short", codec: c1, data: sealed[:3], want: []error{store.ErrCorrupt}, text: "too short"},
		{name: "empty", codec: c1, data: nil, want: []error{store.ErrCorrupt}, text: "too short"},
		{name: "plain protobuf", codec: c1, data: plainData, want: []error{store.ErrCorrupt}, text: "not written by an encrypted codec"},
		{name: "record of another type under the same key", codec: mustEncrypted(t, &corev1.ConfigMap{}, k1), data: sealed,
			want: []error{store.ErrCorrupt}, text: "sealed for another codec or type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj, err := tt.codec.Decode(tt.data)
			if obj != nil {
				t.Errorf("Decode returned an object %#v with error %v", obj, err)
			}
			for _, w := range tt.want {
				if !errors.Is(err, w) {
					t.Errorf("Decode: %v, want an error wrapping %v", err, w)
				}
			}
			if err != nil && (!strings.Contains(err.Error(), tt.text) || !strings.HasPrefix(err.Error(), "indexer: decrypt:")) {
				t.Errorf("Decode: %q, want it to start with %q and contain %q", err, "indexer: decrypt:", tt.text)
			}
		})
	}
}

func TestEncryptedCodecRotation(t *testing.T) {
	k1, k2 := mustKey(t, 1), mustKey(t, 2)
	old := mustEncrypted(t, &corev1.Secret{}, k1)
	rotating := mustEncrypted(t, &corev1.Secret{}, k2, k1)
	rotated := mustEncrypted(t, &corev1.Secret{}, k2)

	in := secretObj("s", "1")
	sealedOld, err := old.Encode(in)
	if err != nil {
		t.Fatal(err)
	}
	// The rotating ring still opens records of the old key...
	out, err := rotating.Decode(sealedOld)
	if err != nil {
		t.Fatalf("decode an old record with the old key as secondary: %v", err)
	}
	if diff := cmp.Diff(in, out); diff != "" {
		t.Errorf("(-in +out):\n%s", diff)
	}
	// ...and seals new ones under the new key.
	sealedNew, err := rotating.Encode(in)
	if err != nil {
		t.Fatal(err)
	}
	if id, _ := rotating.KeyID(sealedNew); id != k2.ID() {
		t.Errorf("new record sealed under %s, want the primary %s", id, k2.ID())
	}
	re, err := rotating.Reencrypt(sealedOld)
	if err != nil {
		t.Fatal(err)
	}
	if id, _ := rotating.KeyID(re); id != k2.ID() {
		t.Errorf("re-encrypted record sealed under %s, want %s", id, k2.ID())
	}
	// Once every record is rewritten, the old key can go.
	for _, data := range [][]byte{sealedNew, re} {
		out, err := rotated.Decode(data)
		if err != nil {
			t.Fatalf("decode without the old key: %v", err)
		}
		if diff := cmp.Diff(in, out); diff != "" {
			t.Errorf("(-in +out):\n%s", diff)
		}
	}
	if _, err := rotated.Decode(sealedOld); !errors.Is(err, indexer.ErrUnknownKey) {
		t.Errorf("decode of an old record after the old key is gone: %v, want ErrUnknownKey", err)
	}
	if got, want := rotating.Name(), old.Name(); got != want {
		t.Errorf("rotation changed the codec name from %q to %q: stores would be refused", want, got)
	}
}

func TestEncryptedCodecConcurrent(t *testing.T) {
	c := mustEncrypted(t, &corev1.Secret{}, mustKey(t, 1))
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 200 {
				in := secretObj("s", "1")
				in.Data["n"] = []byte{byte(g), byte(i)}
				data, err := c.Encode(in)
				if err != nil {
					t.Error(err)
					return
				}
				out, err := c.Decode(data)
				if err != nil {
					t.Error(err)
					return
				}
				if diff := cmp.Diff(in, out); diff != "" {
					t.Errorf("(-in +out):\n%s", diff)
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestParseKey(t *testing.T) {
	raw := secretOf(3)
	want := mustKey(t, 3).ID()
	tests := []struct {
		name    string
		data    []byte
		wantErr string // empty: the key must be raw
	}{
		{name: "raw bytes", data: raw},
		{name: "base64", data: []byte(base64.StdEncoding.EncodeToString(raw))},
		{name: "base64 with newline", data: []byte(base64.StdEncoding.EncodeToString(raw) + "\n")},
		{name: "unpadded url base64", data: []byte(base64.RawURLEncoding.EncodeToString(raw))},
		{name: "31 raw bytes", data: raw[:31], wantErr: "neither 32 raw bytes nor base64"},
		{name: "base64 of 16 bytes", data: []byte(base64.StdEncoding.EncodeToString(raw[:16])), wantErr: "base64 decodes to 16 bytes, want 32"},
		{name: "empty", data: nil, wantErr: "base64 decodes to 0 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, err := indexer.ParseKey(tt.data)
			if tt.wantErr == "" {
				if err != nil || k.ID() != want {
					t.Errorf("ParseKey: id %q, err %v; want id %q", k.ID(), err, want)
				}
				return
			}
			if !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseKey: %v; want ErrInvalid containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestLoadKeyAndKeyFromEnv(t *testing.T) {
	want := mustKey(t, 4).ID()
	path := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(path, []byte(base64.StdEncoding.EncodeToString(secretOf(4))+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if k, err := indexer.LoadKey(path); err != nil || k.ID() != want {
		t.Errorf("LoadKey: id %q, err %v; want %q", k.ID(), err, want)
	}
	if _, err := indexer.LoadKey(path + ".missing"); !errors.Is(err, fs.ErrNotExist) || !strings.HasPrefix(err.Error(), "indexer: load key") {
		t.Errorf("LoadKey of a missing file: %v", err)
	}
	bad := filepath.Join(t.TempDir(), "bad")
	if err := os.WriteFile(bad, []byte("short"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := indexer.LoadKey(bad); !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), bad) {
		t.Errorf("LoadKey of a bad file: %v, want ErrInvalid naming the file", err)
	}

	t.Setenv("INFORMERDB_TEST_KEY", base64.StdEncoding.EncodeToString(secretOf(4)))
	if k, err := indexer.KeyFromEnv("INFORMERDB_TEST_KEY"); err != nil || k.ID() != want {
		t.Errorf("KeyFromEnv: id %q, err %v; want %q", k.ID(), err, want)
	}
	t.Setenv("INFORMERDB_TEST_EMPTY", "")
	for _, name := range []string{"INFORMERDB_TEST_EMPTY", "INFORMERDB_TEST_UNSET_4711"} {
		if _, err := indexer.KeyFromEnv(name); !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), "$"+name+" is not set") {
			t.Errorf("KeyFromEnv(%s): %v, want ErrInvalid naming it", name, err)
		}
	}
}

func TestKeyIDs(t *testing.T) {
	if a, b := mustKey(t, 1).ID(), mustKey(t, 1).ID(); a != b || len(a) != 16 {
		t.Errorf("ids of one key: %q and %q, want equal 16 hex digits", a, b)
	}
	if a, b := mustKey(t, 1).ID(), mustKey(t, 2).ID(); a == b {
		t.Errorf("two keys share the id %q", a)
	}
	if _, err := indexer.NewKeyRing(indexer.EncryptionKey{}); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("NewKeyRing(zero key): %v, want ErrInvalid", err)
	}
	ring, err := indexer.NewKeyRing(mustKey(t, 2), mustKey(t, 1), mustKey(t, 2))
	if err != nil {
		t.Fatal(err)
	}
	if ring.Primary() != mustKey(t, 2).ID() || len(ring.IDs()) != 2 {
		t.Errorf("ring: primary %s ids %v", ring.Primary(), ring.IDs())
	}
	if _, err := indexer.NewEncryptedCodec(nil, ring); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("NewEncryptedCodec(nil inner): %v, want ErrInvalid", err)
	}
}

// persistentBackends are the backends whose files are searched for
// plaintext.
var persistentBackends = []struct {
	name string
	url  func(dir string) string
}{
	{"bolt", func(dir string) string { return "bolt://" + filepath.Join(dir, "cache.db") }},
	{"badger", func(dir string) string { return "badger://" + filepath.Join(dir, "cache") }},
}

// writeSecrets opens u with codec, commits Secrets holding the marker, and
// closes the store.
func writeSecrets(t *testing.T, u string, codec store.Codec) {
	t.Helper()
	s, err := store.Open(t.Context(), u, &store.Options{Name: "v1/secrets", Codec: codec})
	if err != nil {
		t.Fatalf("open %s: %v", u, err)
	}
	var ops []store.Op
	for _, name := range []string{"a", "b", "c"} {
		ops = append(ops, store.Op{Type: store.OpPut, Object: secretObj(name, "5")})
	}
	if err := s.Commit(t.Context(), store.Batch{Ops: ops, ResourceVersion: "5"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// filesWith returns the files under dir whose bytes contain s.
func filesWith(t *testing.T, dir, s string) []string {
	t.Helper()
	var found []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if bytes.Contains(b, []byte(s)) {
			found = append(found, filepath.Base(p))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

func openSecrets(t *testing.T, u string, codec store.Codec) (store.Store, error) {
	t.Helper()
	s, err := store.Open(t.Context(), u, &store.Options{Name: "v1/secrets", Codec: codec})
	if err == nil {
		t.Cleanup(func() { s.Close() })
	}
	return s, err
}

// TestEncryptionAtRest writes Secrets through real databases and searches
// every file for the plaintext: absent when encrypted, present when not (so
// the search can fail). It also checks that an encrypted store cannot be
// opened plain, nor the reverse, nor with an unknown key.
func TestEncryptionAtRest(t *testing.T) {
	for _, b := range persistentBackends {
		t.Run(b.name, func(t *testing.T) {
			k1, k2 := mustKey(t, 1), mustKey(t, 2)
			plain := mustCodec(t, &corev1.Secret{})
			enc := mustEncrypted(t, &corev1.Secret{}, k1)

			encDir, plainDir := t.TempDir(), t.TempDir()
			writeSecrets(t, b.url(encDir), enc)
			writeSecrets(t, b.url(plainDir), plain)
			if found := filesWith(t, encDir, marker); len(found) != 0 {
				t.Errorf("encrypted database: plaintext found in %v", found)
			}
			if found := filesWith(t, plainDir, marker); len(found) == 0 {
				t.Errorf("plain database: plaintext not found in any file; the search cannot tell")
			}

			s, err := openSecrets(t, b.url(encDir), enc)
			if err != nil {
				t.Fatalf("reopen with the key: %v", err)
			}
			got, ok, err := s.GetByKey("default/b")
			if err != nil || !ok {
				t.Fatalf("GetByKey: %v %v", ok, err)
			}
			if diff := cmp.Diff(secretObj("b", "5"), got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if rv := s.ResourceVersion(); rv != "5" {
				t.Errorf("resume point %q, want 5", rv)
			}
			s.Close()

			if _, err := openSecrets(t, b.url(encDir), plain); !errors.Is(err, store.ErrIncompatible) || !strings.Contains(err.Error(), "protobuf+aes256gcm") {
				t.Errorf("open an encrypted store plain: %v, want ErrIncompatible naming the codec", err)
			}
			if _, err := openSecrets(t, b.url(plainDir), enc); !errors.Is(err, store.ErrIncompatible) {
				t.Errorf("open a plain store encrypted: %v, want ErrIncompatible", err)
			}
			if s, err := openSecrets(t, b.url(encDir), mustEncrypted(t, &corev1.Secret{}, k2)); err == nil {
				// A backend that decodes lazily must fail on the read.
				if _, _, err := s.GetByKey("default/a"); !errors.Is(err, indexer.ErrUnknownKey) {
					t.Errorf("read with an unknown key: %v, want ErrUnknownKey", err)
				}
				s.Close()
			} else if !strings.Contains(err.Error(), k1.ID()) || !errors.Is(err, indexer.ErrUnknownKey) || errors.Is(err, store.ErrCorrupt) {
				t.Errorf("open with an unknown key: %v, want ErrUnknownKey (not ErrCorrupt) naming key %s", err, k1.ID())
			}
			// The bounded mode decodes lazily, but the sample it checks
			// at open finds the unknown key: the open fails, rather
			// than List returning nothing.
			if s, err := openSecrets(t, b.url(encDir)+"?cache=4", mustEncrypted(t, &corev1.Secret{}, k2)); err == nil {
				t.Errorf("bounded open with an unknown key succeeded (List returns %d objects); want ErrUnknownKey", len(s.List()))
				s.Close()
			} else if !strings.Contains(err.Error(), k1.ID()) || !errors.Is(err, indexer.ErrUnknownKey) || errors.Is(err, store.ErrCorrupt) {
				t.Errorf("bounded open with an unknown key: %v, want ErrUnknownKey (not ErrCorrupt) naming key %s", err, k1.ID())
			}
		})
	}
}

// fakeSchemes numbers the schemes TestRekey registers its fakeRaw under.
var fakeSchemes atomic.Int32

// fakeRaw is a store.RawDriver over records in memory: Rekey's logic is
// tested without depending on a backend's record access.
type fakeRaw struct {
	info    store.Info
	recs    []store.Record
	imports int
}

func (f *fakeRaw) Open(context.Context, *url.URL, store.Options) (store.Store, error) {
	return nil, errors.New("fakeRaw: not a store")
}

func (f *fakeRaw) Stores(context.Context, *url.URL) ([]store.Info, error) {
	return []store.Info{f.info}, nil
}

func (f *fakeRaw) ListStores(ctx context.Context, u *url.URL) ([]store.StoreEntry, error) {
	infos, err := f.Stores(ctx, u)
	return driver.EntriesOf(infos), err
}

func (f *fakeRaw) Drop(context.Context, *url.URL, string) error {
	return errors.New("fakeRaw: cannot drop")
}

func (f *fakeRaw) Export(_ context.Context, u *url.URL, name string, fn func(store.Record) error) (store.Info, error) {
	if name != f.info.Name || u.Path != "/db" {
		return store.Info{}, fmt.Errorf("fakeRaw: export %s of %s: %w", name, u, store.ErrNotFound)
	}
	for _, r := range f.recs {
		// Callers must not retain Data: hand out a buffer that is reused.
		buf := bytes.Clone(r.Data)
		r.Data = buf
		if err := fn(r); err != nil {
			return store.Info{}, err
		}
		clear(buf)
	}
	return f.info, nil
}

func (f *fakeRaw) Import(_ context.Context, _ *url.URL, info store.Info, next func() (store.Record, error)) error {
	var recs []store.Record
	for {
		r, err := next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		recs = append(recs, r)
	}
	f.info, f.recs = info, recs
	f.imports++
	return nil
}

// TestRekey turns a plain store into an encrypted one, then rotates its
// key, and checks that the records decode with the new key alone and that
// keys, index values and the resume point are kept.
func TestRekey(t *testing.T) {
	k1, k2 := mustKey(t, 1), mustKey(t, 2)
	plain := mustCodec(t, &corev1.Secret{})
	f := &fakeRaw{info: store.Info{Backend: "fake", Name: "v1/secrets", Codec: plain.Name(), Type: plain.Type(), Indexes: []string{"app"}, ResourceVersion: "5"}}
	var wantRecs []store.Record
	for _, name := range []string{"a", "b", "c"} {
		data, err := plain.Encode(secretObj(name, "5"))
		if err != nil {
			t.Fatal(err)
		}
		r := store.Record{Key: "default/" + name, Data: data, Values: [][]string{{"x-" + name}}}
		f.recs = append(f.recs, r)
		wantRecs = append(wantRecs, store.Record{Key: r.Key, Values: r.Values})
	}
	// Registered under a scheme of its own: a test run with -count=N
	// registers N of them.
	scheme := fmt.Sprintf("fakerekey%d", fakeSchemes.Add(1))
	store.Register(scheme, f)
	u := scheme + ":///db"

	res, err := indexer.Rekey(t.Context(), u, "v1/secrets", mustEncrypted(t, &corev1.Secret{}, k1))
	if err != nil {
		t.Fatalf("Rekey to encrypt: %v", err)
	}
	if diff := cmp.Diff(indexer.RekeyResult{Records: 3, Encrypted: true, From: map[string]int{"": 3}}, res); diff != "" {
		t.Errorf("encrypting (-want +got):\n%s", diff)
	}
	if got, want := f.info.Codec, "protobuf+aes256gcm"; got != want {
		t.Errorf("codec after encrypting %q, want %q", got, want)
	}
	for _, r := range f.recs {
		if bytes.Contains(r.Data, []byte(marker)) {
			t.Errorf("record %s holds plaintext after encrypting", r.Key)
		}
	}

	rotating := mustEncrypted(t, &corev1.Secret{}, k2, k1)
	res, err = indexer.Rekey(t.Context(), u, "v1/secrets", rotating)
	if err != nil {
		t.Fatalf("Rekey to rotate: %v", err)
	}
	if diff := cmp.Diff(indexer.RekeyResult{Records: 3, From: map[string]int{k1.ID(): 3}}, res); diff != "" {
		t.Errorf("rotating (-want +got):\n%s", diff)
	}

	// The new key alone opens every record; keys, values, resume point kept.
	only2 := mustEncrypted(t, &corev1.Secret{}, k2)
	var gotRecs []store.Record
	for _, r := range f.recs {
		obj, err := only2.Decode(r.Data)
		if err != nil {
			t.Fatalf("decode %s with the new key alone: %v", r.Key, err)
		}
		sec := obj.(*corev1.Secret)
		if diff := cmp.Diff(secretObj(sec.Name, "5"), sec); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
		gotRecs = append(gotRecs, store.Record{Key: r.Key, Values: r.Values})
	}
	if diff := cmp.Diff(wantRecs, gotRecs); diff != "" {
		t.Errorf("keys and index values (-want +got):\n%s", diff)
	}
	if f.info.ResourceVersion != "5" || f.info.Codec != only2.Name() {
		t.Errorf("info after rekey: %+v", f.info)
	}

	// Refusals leave the store alone.
	before := f.imports
	refusals := []struct {
		name  string
		codec *indexer.EncryptedCodec
		want  error
	}{
		{"codec of another type", mustEncrypted(t, &corev1.ConfigMap{}, k2), store.ErrIncompatible},
		{"key ring without the records' key", mustEncrypted(t, &corev1.Secret{}, k1), indexer.ErrUnknownKey},
	}
	for _, tt := range refusals {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := indexer.Rekey(t.Context(), u, "v1/secrets", tt.codec); !errors.Is(err, tt.want) || !strings.HasPrefix(err.Error(), "indexer: rekey v1/secrets") {
				t.Errorf("Rekey: %v, want %v", err, tt.want)
			}
		})
	}
	if _, err := indexer.Rekey(t.Context(), u, "v1/other", rotating); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Rekey of a missing store: %v, want ErrNotFound", err)
	}
	if f.imports != before {
		t.Errorf("a refused Rekey imported")
	}
}

// TestRekeyBackends encrypts, then rotates, real bolt and badger stores
// through their raw drivers, and reopens them with the new key alone: the
// objects, their index and the resume point are intact, and no record
// needs the old key.
func TestRekeyBackends(t *testing.T) {
	for _, b := range persistentBackends {
		t.Run(b.name, func(t *testing.T) {
			k1, k2 := mustKey(t, 1), mustKey(t, 2)
			u := b.url(t.TempDir())
			writeSecrets(t, u, mustCodec(t, &corev1.Secret{}))

			res, err := indexer.Rekey(t.Context(), u, "v1/secrets", mustEncrypted(t, &corev1.Secret{}, k1))
			if err != nil {
				t.Fatalf("Rekey to encrypt: %v", err)
			}
			if diff := cmp.Diff(indexer.RekeyResult{Records: 3, Encrypted: true, From: map[string]int{"": 3}}, res); diff != "" {
				t.Errorf("encrypting (-want +got):\n%s", diff)
			}
			res, err = indexer.Rekey(t.Context(), u, "v1/secrets", mustEncrypted(t, &corev1.Secret{}, k2, k1))
			if err != nil {
				t.Fatalf("Rekey to rotate: %v", err)
			}
			if diff := cmp.Diff(indexer.RekeyResult{Records: 3, From: map[string]int{k1.ID(): 3}}, res); diff != "" {
				t.Errorf("rotating (-want +got):\n%s", diff)
			}

			s, err := openSecrets(t, u, mustEncrypted(t, &corev1.Secret{}, k2))
			if err != nil {
				t.Fatalf("open with the new key alone: %v", err)
			}
			if rv := s.ResourceVersion(); rv != "5" {
				t.Errorf("resume point %q after rekey, want 5", rv)
			}
			for _, name := range []string{"a", "b", "c"} {
				got, ok, err := s.GetByKey("default/" + name)
				if err != nil || !ok {
					t.Fatalf("GetByKey(default/%s): %v %v", name, ok, err)
				}
				if diff := cmp.Diff(secretObj(name, "5"), got); diff != "" {
					t.Errorf("(-want +got):\n%s", diff)
				}
			}
		})
	}
}
