package indexer_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
)

// Encrypting a store's objects at rest, then rotating the key.
func ExampleNewEncryptedCodec() {
	// A key file as `head -c 32 /dev/urandom | base64 > key` makes; fixed
	// here so that the output is stable.
	dir, err := os.MkdirTemp("", "key")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	keyFile := filepath.Join(dir, "key")
	if err := os.WriteFile(keyFile, []byte(base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{1}, 32))+"\n"), 0o600); err != nil {
		panic(err)
	}
	oldKey, err := indexer.LoadKey(keyFile)
	if err != nil {
		panic(err)
	}
	ring, err := indexer.NewKeyRing(oldKey)
	if err != nil {
		panic(err)
	}
	inner, err := indexer.NewCodec(&corev1.Secret{})
	if err != nil {
		panic(err)
	}
	codec, err := indexer.NewEncryptedCodec(inner, ring) // store.Options.Codec
	if err != nil {
		panic(err)
	}
	fmt.Println("codec:", codec.Name())
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db"}, Data: map[string][]byte{"password": []byte("hunter2")}}
	sealed, err := codec.Encode(secret)
	if err != nil {
		panic(err)
	}
	fmt.Println("plaintext on disk:", bytes.Contains(sealed, []byte("hunter2")))

	// Rotation: the new key seals, the old one still opens.
	newKey, err := indexer.NewEncryptionKey(bytes.Repeat([]byte{2}, 32))
	if err != nil {
		panic(err)
	}
	rotating, _ := indexer.NewKeyRing(newKey, oldKey)
	codec2, _ := indexer.NewEncryptedCodec(inner, rotating)
	obj, err := codec2.Decode(sealed)
	fmt.Println("old record with the rotating ring:", string(obj.(*corev1.Secret).Data["password"]), err)
	resealed, _ := codec2.Reencrypt(sealed)
	id, _ := codec2.KeyID(resealed)
	fmt.Println("re-encrypted under the new key:", id == newKey.ID())

	// Without the old key, its records are refused, never misread.
	onlyNew, _ := indexer.NewKeyRing(newKey)
	codec3, _ := indexer.NewEncryptedCodec(inner, onlyNew)
	_, err = codec3.Decode(sealed)
	fmt.Println("old record without the old key:", errors.Is(err, indexer.ErrUnknownKey), errors.Is(err, store.ErrIncompatible))
	// Output:
	// codec: protobuf+aes256gcm
	// plaintext on disk: false
	// old record with the rotating ring: hunter2 <nil>
	// re-encrypted under the new key: true
	// old record without the old key: true true
}
