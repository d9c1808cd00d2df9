package indexer_test

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
)

// codecRoundTrips encodes and decodes obj n times and returns the time per
// round trip.
func codecRoundTrips(b *testing.B, c store.Codec, obj interface{}, n int) time.Duration {
	start := time.Now()
	for range n {
		data, err := c.Encode(obj)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.Decode(data); err != nil {
			b.Fatal(err)
		}
	}
	return time.Since(start) / time.Duration(n)
}

// BenchmarkEncryptedCodec measures an encode and a decode of a 1 KiB
// ConfigMap with the protobuf codec and with it sealed by AES-256-GCM. The
// encrypted sub-benchmark runs the plain codec on as many objects right
// after its timed run and reports the paired ratio "x-plain" (time
// encrypted / time plain), so that the drift of a shared machine cancels.
//
//	go test -run '^$' -bench BenchmarkEncryptedCodec -count 5 ./indexer/
func BenchmarkEncryptedCodec(b *testing.B) {
	obj := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "cm", ResourceVersion: "12345", Labels: map[string]string{"app": "x"}},
		Data:       map[string]string{"v": strings.Repeat("x", 1024)},
	}
	plain, err := indexer.NewCodec(&corev1.ConfigMap{})
	if err != nil {
		b.Fatal(err)
	}
	key, err := indexer.NewEncryptionKey(make([]byte, indexer.KeySize))
	if err != nil {
		b.Fatal(err)
	}
	ring, err := indexer.NewKeyRing(key)
	if err != nil {
		b.Fatal(err)
	}
	enc, err := indexer.NewEncryptedCodec(plain, ring)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("codec=protobuf", func(b *testing.B) {
		b.ReportAllocs()
		codecRoundTrips(b, plain, obj, b.N)
	})
	b.Run("codec=protobuf+aes256gcm", func(b *testing.B) {
		b.ReportAllocs()
		per := codecRoundTrips(b, enc, obj, b.N)
		b.StopTimer()
		base := codecRoundTrips(b, plain, obj, b.N)
		b.ReportMetric(float64(per)/float64(base), "x-plain")
	})
}
