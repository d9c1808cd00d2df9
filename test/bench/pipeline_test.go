package bench_test

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	restclientwatch "k8s.io/client-go/rest/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/informer"
	"github.com/informerdb/informerdb/store"
	_ "github.com/informerdb/informerdb/store/badger"
	_ "github.com/informerdb/informerdb/store/bolt"
	_ "github.com/informerdb/informerdb/store/memdb"
	_ "github.com/informerdb/informerdb/store/memory"
)

// hotKeys is the number of distinct ConfigMaps the events update in the
// hot-keys variant: each ConfigMap is updated many times, as status-heavy
// objects are, and a group commit writes each once. The other variant
// updates as many ConfigMaps as there are events, each once.
const hotKeys = 1000

var pipelinePayload = strings.Repeat("x", 1000)

func pipelineCM(i, keys, rv int) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: "cm-" + strconv.Itoa(i%keys), ResourceVersion: strconv.Itoa(rv)},
		Data:       map[string]string{"payload": pipelinePayload},
	}
}

// pipelineLW lists keys ConfigMaps at resourceVersion keys, and its one
// watch is the one feed opens.
func pipelineLW(keys int, feed pipelineFeed, watching chan struct{}) *cache.ListWatch {
	var once atomic.Bool
	return &cache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			list := &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: strconv.Itoa(keys)}}
			for i := range keys {
				list.Items = append(list.Items, *pipelineCM(i, keys, i+1))
			}
			return list, nil
		},
		WatchFuncWithContext: func(_ context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			if opts.SendInitialEvents != nil && *opts.SendInitialEvents {
				// Both informers then fall back to a paginated LIST.
				return nil, apierrors.NewBadRequest("pipelineLW: sendInitialEvents is not supported")
			}
			if once.Swap(true) {
				return nil, apierrors.NewServiceUnavailable("pipelineLW: one watch only")
			}
			close(watching)
			return feed.watch(), nil
		},
	}
}

// pipelineFeed is where the benchmark's watch events come from.
type pipelineFeed interface {
	// watch returns the watch the informer reads the events from.
	watch() watch.Interface
	// send delivers event i to the watch; false when ctx ended first.
	send(ctx context.Context, i int) bool
	// close ends the feed once the run is over.
	close()
}

// decodedFeed hands the informer decoded objects, as a watch over an
// in-process source would: the informer's own work, without the decoding a
// watch on an API server costs.
type decodedFeed struct {
	keys, rv0 int
	// order, when set, is a permutation of the keys: event i updates
	// ConfigMap order[i%keys] instead of i%keys.
	order  []int
	events chan watch.Event
}

func newDecodedFeed(keys, rv0 int) *decodedFeed {
	return &decodedFeed{keys: keys, rv0: rv0, events: make(chan watch.Event, 1024)}
}

func (f *decodedFeed) watch() watch.Interface { return watch.NewProxyWatcher(f.events) }

func (f *decodedFeed) send(ctx context.Context, i int) bool {
	n := i % f.keys
	if f.order != nil {
		n = f.order[n]
	}
	select {
	case f.events <- watch.Event{Type: watch.Modified, Object: pipelineCM(n, f.keys, f.rv0+i)}:
		return true
	case <-ctx.Done():
		return false
	}
}

func (f *decodedFeed) close() {}

// wireFeed hands the informer the bytes of an API server's watch response
// in a media type (JSON, or protobuf as clients that ask for it get), read
// through the decoders client-go's REST client puts on a watch response:
// the whole path from the wire to the handler, but for HTTP and TLS. The
// events are encoded before the run, so only their decoding is timed; their
// frames pass through a buffered channel, as decodedFeed's events do (an
// HTTP/2 response body buffers what arrived, too).
type wireFeed struct {
	info   runtime.SerializerInfo
	frames [][]byte
	body   *frameReader
}

// newWireFeed encodes n events updating keys ConfigMaps, in the numbered
// order or, when order is set (a permutation of the keys), event i for
// ConfigMap order[i%keys].
func newWireFeed(b testing.TB, mediaType string, n, keys, rv0 int, order []int) *wireFeed {
	b.Helper()
	info, ok := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), mediaType)
	if !ok || info.StreamSerializer == nil {
		b.Fatalf("wireFeed: no stream serializer for %s", mediaType)
	}
	objEnc := scheme.Codecs.EncoderForVersion(info.Serializer, corev1.SchemeGroupVersion)
	f := &wireFeed{info: info, frames: make([][]byte, n), body: newFrameReader()}
	var buf bytes.Buffer
	for i := range n {
		k := i % keys
		if order != nil {
			k = order[k]
		}
		raw, err := runtime.Encode(objEnc, pipelineCM(k, keys, rv0+i))
		if err != nil {
			b.Fatal(err)
		}
		buf.Reset()
		enc := streaming.NewEncoder(info.StreamSerializer.NewFrameWriter(&buf), info.StreamSerializer.Serializer)
		if err := enc.Encode(&metav1.WatchEvent{Type: string(watch.Modified), Object: runtime.RawExtension{Raw: raw}}); err != nil {
			b.Fatal(err)
		}
		f.frames[i] = bytes.Clone(buf.Bytes())
	}
	return f
}

func (f *wireFeed) watch() watch.Interface {
	frames := f.info.StreamSerializer.NewFrameReader(f.body)
	events := streaming.NewDecoder(frames, f.info.StreamSerializer.Serializer)
	objects := scheme.Codecs.WithoutConversion().DecoderToVersion(f.info.Serializer, corev1.SchemeGroupVersion)
	return watch.NewStreamWatcher(restclientwatch.NewDecoder(events, objects),
		apierrors.NewClientErrorReporter(http.StatusInternalServerError, "WATCH", "ClientWatchDecoding"))
}

func (f *wireFeed) send(ctx context.Context, i int) bool {
	select {
	case f.body.chunks <- f.frames[i]:
		return true
	case <-f.body.closed:
		return false
	case <-ctx.Done():
		return false
	}
}

func (f *wireFeed) close() { _ = f.body.Close() }

// frameReader is a response body fed by chunks on a channel.
type frameReader struct {
	chunks    chan []byte
	closed    chan struct{}
	closeOnce sync.Once
	rest      []byte
}

func newFrameReader() *frameReader {
	return &frameReader{chunks: make(chan []byte, 1024), closed: make(chan struct{})}
}

// Read returns what is left of the current chunk, or waits for the next;
// io.EOF once closed.
func (r *frameReader) Read(p []byte) (int, error) {
	if len(r.rest) == 0 {
		select {
		case r.rest = <-r.chunks:
		case <-r.closed:
			return 0, io.EOF
		}
	}
	n := copy(p, r.rest)
	r.rest = r.rest[n:]
	return n, nil
}

func (r *frameReader) Close() error {
	r.closeOnce.Do(func() { close(r.closed) })
	return nil
}

// TestWireFeed checks that the wire feed's events decode, through
// client-go's watch decoders, into the objects BenchmarkPipeline sends
// decoded, in order, and that closing the feed ends its watch.
func TestWireFeed(t *testing.T) {
	for _, mediaType := range []string{runtime.ContentTypeJSON, runtime.ContentTypeProtobuf} {
		t.Run(mediaType, func(t *testing.T) {
			const n, keys, rv0 = 5, 3, 10
			f := newWireFeed(t, mediaType, n, keys, rv0, nil)
			w := f.watch()
			defer w.Stop()
			for i := range n {
				if !f.send(t.Context(), i) {
					t.Fatalf("send %d: the feed is closed", i)
				}
			}
			for i := range n {
				select {
				case ev := <-w.ResultChan():
					want := pipelineCM(i, keys, rv0+i)
					got, ok := ev.Object.(*corev1.ConfigMap)
					if ev.Type != watch.Modified || !ok {
						t.Fatalf("event %d: %s %T, want MODIFIED *v1.ConfigMap", i, ev.Type, ev.Object)
					}
					if got.Namespace != want.Namespace || got.Name != want.Name || got.ResourceVersion != want.ResourceVersion || got.Data["payload"] != want.Data["payload"] {
						t.Fatalf("event %d: got %s/%s at %s (%d-byte payload), want %s/%s at %s", i, got.Namespace, got.Name, got.ResourceVersion, len(got.Data["payload"]), want.Namespace, want.Name, want.ResourceVersion)
					}
				case <-time.After(10 * time.Second):
					t.Fatalf("event %d did not arrive", i)
				}
			}
			f.close()
			select {
			case ev, ok := <-w.ResultChan():
				if ok {
					t.Fatalf("after close: %s %T, want the watch to end", ev.Type, ev.Object)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the watch did not end after the feed was closed")
			}
		})
	}
}

// pipelineRate sends n MODIFIED events from newFeed, updating keys
// ConfigMaps round robin, to the informer newInf makes, after it synced, and
// returns events per second until the handler saw the last.
// With timed, b's timer runs for exactly that span; otherwise it stays
// stopped, so a paired run does not count in ns/op.
func pipelineRate(b *testing.B, n, keys int, timed bool, newFeed func(b *testing.B, n, keys, rv0 int) pipelineFeed, newInf func(lw *cache.ListWatch) (cache.SharedIndexInformer, error)) float64 {
	b.Helper()
	feed := newFeed(b, n, keys, keys+1)
	defer feed.close() // also when the informer cannot be made or started
	watching := make(chan struct{})
	inf, err := newInf(pipelineLW(keys, feed, watching))
	if err != nil {
		b.Fatal(err)
	}
	var seen atomic.Int64
	done := make(chan struct{})
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{UpdateFunc: func(_, _ interface{}) {
		if seen.Add(1) == int64(n) {
			close(done)
		}
	}}); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(b.Context())
	stopped, sent := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		inf.RunWithContext(ctx)
	}()
	// Ending the context and the feed unblocks the sender and the watch's
	// reader, whichever way the run ends.
	defer func() {
		cancel()
		feed.close()
		<-sent
		<-stopped
	}()
	if !cache.WaitFor(ctx, "", inf.HasSyncedChecker()) {
		close(sent) // no sender yet
		b.Fatal("informer did not sync")
	}
	<-watching
	if timed {
		b.StartTimer()
	}
	start := time.Now()
	go func() {
		defer close(sent)
		for i := range n {
			if !feed.send(ctx, i) {
				return
			}
		}
	}()
	<-done
	elapsed := time.Since(start)
	b.StopTimer()
	return float64(n) / elapsed.Seconds()
}

// bracket runs reference, then run, then reference again, and returns run's
// rate and the reference's: the rate of the two reference runs' mean time.
//
// Each run inherits the heap the run before it left, since go test collects
// garbage only before each sub-benchmark. Right after informerdb's run, the
// collector's next goal is high and client-go's short run often fits before
// a collection: with informerdb first in each pair, client-go ran a fifth
// faster than with client-go first, while informerdb's rate hardly moved
// with the order (BENCHMARKS.md, section 3, "Run length"). With the
// reference on both sides, it runs once after a fresh collection and once
// in the heap run left, so neither order favours either side of the ratio.
func bracket(run, reference func() float64) (rate, ref float64) {
	before := reference()
	rate = run()
	after := reference()
	return rate, 2 / (1/before + 1/after)
}

// reportPaired reports rate and client-go's rate in unit, and their ratio
// as x-client-go (above 1: informerdb is faster).
func reportPaired(b *testing.B, rate, clientGo float64, unit string) {
	b.ReportMetric(rate, unit)
	b.ReportMetric(clientGo, "client-go-"+unit)
	b.ReportMetric(rate/clientGo, "x-client-go")
}

func newClientGoInformer(lw *cache.ListWatch) (cache.SharedIndexInformer, error) {
	return cache.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}), nil
}

// BenchmarkPipeline measures steady-state events per second from watch
// event to handler through the whole pipeline, for every backend with its
// default options (durable commits for bolt and badger), against client-go's
// SharedIndexInformer. Each backend's sub-benchmark runs client-go on the
// same events right before and right after its own timed run (bracket) and
// reports client-go's rate and the paired ratio as x-client-go (above 1:
// informerdb is faster), so that the drift of a shared machine cancels out.
// The watch hands over decoded objects: this measures the informers' own
// work (BenchmarkPipelineWire adds the decoding).
//
// keys=1000 updates 1,000 ConfigMaps round robin (a group commit writes each
// key once however often it changed); keys=all updates b.N ConfigMaps once
// each, so every event is a write of its own, in the order of their names'
// numbers (cm-0, cm-1, ...); keys=all/order=random updates them in a fixed
// random order, as a real resource's updates come. The order matters to a
// B-tree store: the relist stores the ConfigMaps in key order, where cm-1000
// sits beside cm-10000 to cm-10009, so from cm-10000 on the numbered order
// updates neighbours together, and a random order almost never does.
//
//	go test -run '^$' -bench BenchmarkPipeline -benchtime 20000x -count 3 ./test/bench/
func BenchmarkPipeline(b *testing.B) {
	benchmarkPipeline(b, "keys=1000", false, decodedFeedFor)
	benchmarkPipeline(b, "keys=all", true, decodedFeedFor)
	benchmarkPipeline(b, "keys=all/order=random", true, randomOrderFeedFor)
}

// decodedFeedFor is the newFeed of pipelineRate for decoded events.
func decodedFeedFor(_ *testing.B, _, keys, rv0 int) pipelineFeed { return newDecodedFeed(keys, rv0) }

// randomOrderFeedFor is decodedFeedFor with the keys in randomOrder, made
// before the timer starts.
func randomOrderFeedFor(_ *testing.B, _, keys, rv0 int) pipelineFeed {
	f := newDecodedFeed(keys, rv0)
	f.order = randomOrder(keys)
	return f
}

// randomOrder is a permutation of the numbers below keys, the same in every
// run (a fixed seed).
func randomOrder(keys int) []int { return rand.New(rand.NewPCG(1, 2)).Perm(keys) }

// pipelineBackends are the backends the pipeline benchmarks run, each with
// its default options; "%s" in a URL is a fresh directory.
var pipelineBackends = []struct{ name, url string }{
	{"memory", "memory://"},
	{"memdb", "memdb://"},
	{"bolt", "bolt://%s/cache.db"},
	{"badger", "badger://%s/badger"},
}

// durable reports whether a pipeline backend writes to disk.
func durable(name string) bool { return name == "bolt" || name == "badger" }

// openPipelineStore opens the store of the pipeline benchmarks (ConfigMaps
// with a namespace index) on backend URL url, in a fresh directory, closed
// when b ends.
func openPipelineStore(b *testing.B, url string, codec store.Codec) (store.Store, error) {
	url = strings.Replace(url, "%s", filepath.ToSlash(b.TempDir()), 1)
	s, err := store.Open(b.Context(), url, &store.Options{
		Name: "v1/configmaps", Codec: codec,
		Indexers: cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
	})
	if err != nil {
		return nil, err
	}
	b.Cleanup(func() { _ = s.Close() })
	return s, nil
}

// BenchmarkPipelineWire is BenchmarkPipeline's keys=all with the events read
// from the bytes of an API server's watch response, JSON (client-go's
// default, and the only choice for custom resources) or protobuf, through
// the decoders client-go puts on a watch response (wireFeed). Both informers
// decode on their reflector's goroutine, as they would from a real watch.
// Protobuf also runs in BenchmarkPipeline's random order: JSON's decoding
// costs more than any backend's writes in either order.
//
//	go test -run '^$' -bench BenchmarkPipelineWire -benchtime 100000x -count 3 ./test/bench/
func BenchmarkPipelineWire(b *testing.B) {
	for _, w := range []struct {
		name, mediaType string
		random          bool
	}{
		{"json", runtime.ContentTypeJSON, false},
		{"protobuf", runtime.ContentTypeProtobuf, false},
		{"protobuf", runtime.ContentTypeProtobuf, true},
	} {
		variant := "keys=all/wire=" + w.name
		if w.random {
			variant = "keys=all/order=random/wire=" + w.name
		}
		benchmarkPipeline(b, variant, true, func(b *testing.B, n, keys, rv0 int) pipelineFeed {
			var order []int
			if w.random {
				order = randomOrder(keys)
			}
			return newWireFeed(b, w.mediaType, n, keys, rv0, order)
		})
	}
}

// benchmarkPipeline runs client-go, then every backend bracketed by
// client-go, on the events of newFeed: b.N ConfigMaps updated once each if
// allKeys, else hotKeys ConfigMaps round robin. variant ends each
// sub-benchmark's name.
func benchmarkPipeline(b *testing.B, variant string, allKeys bool, newFeed func(b *testing.B, n, keys, rv0 int) pipelineFeed) {
	codec, err := indexer.NewCodec(&corev1.ConfigMap{})
	if err != nil {
		b.Fatal(err)
	}
	nkeys := func(b *testing.B) int {
		if allKeys {
			return b.N
		}
		return hotKeys
	}
	// client-go first: benchstat -col /impl compares against the first.
	b.Run("impl=client-go/"+variant, func(b *testing.B) {
		b.StopTimer()
		b.ReportAllocs()
		b.ReportMetric(pipelineRate(b, b.N, nkeys(b), true, newFeed, newClientGoInformer), "events/s")
	})
	for _, be := range pipelineBackends {
		b.Run("impl=informerdb-"+be.name+"/"+variant, func(b *testing.B) {
			b.StopTimer()
			b.ReportAllocs()
			rate, clientGo := bracket(func() float64 {
				var s store.Store
				rate := pipelineRate(b, b.N, nkeys(b), true, newFeed, func(lw *cache.ListWatch) (cache.SharedIndexInformer, error) {
					var err error
					if s, err = openPipelineStore(b, be.url, codec); err != nil {
						return nil, err
					}
					return informer.New(lw, &corev1.ConfigMap{}, s, &informer.Options{MaxBatchSize: maxBatchSize(b)})
				})
				// Closed first, so that what the store does in the
				// background (badger's compactions) does not slow
				// client-go's run.
				if err := s.Close(); err != nil {
					b.Fatal(err)
				}
				return rate
			}, func() float64 {
				return pipelineRate(b, b.N, nkeys(b), false, newFeed, newClientGoInformer)
			})
			reportPaired(b, rate, clientGo, "events/s")
		})
	}
}

// maxBatchSizeEnv overrides informer.Options.MaxBatchSize in
// BenchmarkPipeline, to measure other group sizes than the default.
const maxBatchSizeEnv = "INFORMERDB_BENCH_MAX_BATCH"

func maxBatchSize(b *testing.B) int {
	v := os.Getenv(maxBatchSizeEnv)
	if v == "" {
		return 0 // the default
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		b.Fatalf("%s=%q: want a positive integer", maxBatchSizeEnv, v)
	}
	return n
}

// BenchmarkCommitCeiling bounds BenchmarkPipeline's keys=all for the durable
// backends from above: the same updates to b.N ConfigMaps, prepared for the
// store (encoded, keyed, indexed: store.Prepare) before the timer starts and
// committed in the groups the informer makes under a steady stream (its
// MaxBatchSize, or less where the store limits a commit), with nothing else
// running. That is the store's share of the pipeline alone; paired with
// client-go's whole pipeline on the same events (bracket), its x-client-go
// is the most any informer over that store could reach on this machine.
//
//	go test -run '^$' -bench BenchmarkCommitCeiling -benchtime 100000x -count 3 ./test/bench/
func BenchmarkCommitCeiling(b *testing.B) {
	codec, err := indexer.NewCodec(&corev1.ConfigMap{})
	if err != nil {
		b.Fatal(err)
	}
	for _, be := range pipelineBackends {
		if !durable(be.name) {
			continue
		}
		b.Run("impl=informerdb-"+be.name+"/keys=all", func(b *testing.B) {
			b.StopTimer()
			n := b.N
			rate, clientGo := bracket(func() float64 { return commitCeilingRate(b, be.url, codec, n) }, func() float64 {
				return pipelineRate(b, n, n, false, decodedFeedFor, newClientGoInformer)
			})
			reportPaired(b, rate, clientGo, "events/s")
		})
	}
}

// commitCeilingRate is BenchmarkCommitCeiling's timed run on the backend of
// url: the relist of n ConfigMaps, then their updates, prepared before b's
// timer starts and committed with it running. It returns updates per
// second.
func commitCeilingRate(b *testing.B, url string, codec store.Codec, n int) float64 {
	s, err := openPipelineStore(b, url, codec)
	if err != nil {
		b.Fatal(err)
	}
	// The informer's relist, then its groups of updates.
	list := make([]interface{}, n)
	for i := range n {
		list[i] = pipelineCM(i, n, i+1)
	}
	if err := s.Replace(list, strconv.Itoa(n)); err != nil {
		b.Fatal(err)
	}
	group := informer.DefaultMaxBatchSize
	if l, ok := s.(store.BatchLimiter); ok && l.MaxBatchOps() > 0 {
		group = min(group, l.MaxBatchOps())
	}
	var batches []store.PreparedBatch
	for lo := 0; lo < n; lo += group {
		ops := make([]store.Op, 0, group)
		for i := lo; i < min(lo+group, n); i++ {
			ops = append(ops, store.Op{Type: store.OpPut, Object: pipelineCM(i, n, n+1+i)})
		}
		p, err := store.Prepare(s, store.Batch{Ops: ops, ResourceVersion: strconv.Itoa(n + min(lo+group, n))})
		if err != nil {
			b.Fatal(err)
		}
		batches = append(batches, p)
	}
	b.StartTimer()
	start := time.Now()
	for _, p := range batches {
		if err := p.Commit(b.Context()); err != nil {
			b.Fatal(err)
		}
	}
	rate := float64(n) / time.Since(start).Seconds()
	b.StopTimer()
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	return rate
}
