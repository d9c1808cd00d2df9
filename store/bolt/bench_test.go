package bolt_test

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/bolt"
)

// benchPodsEnv sets how many Pods the open and read benchmarks load
// (default 10,000; the figure is 100,000).
const benchPodsEnv = "INFORMERDB_BENCH_PODS"

func benchPods(b *testing.B) int {
	if v := os.Getenv(benchPodsEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			b.Fatalf("%s=%q: want a positive integer", benchPodsEnv, v)
		}
		return n
	}
	return 10000
}

// realisticPod is a Pod of a Deployment's ReplicaSet, 2-4 KiB in protobuf:
// labels, annotations, owner reference, two containers with env, ports,
// resources and probes, and a status with conditions.
func realisticPod(i int) *corev1.Pod {
	ns := fmt.Sprintf("team-%02d", i%50)
	app := fmt.Sprintf("app-%03d", i%400)
	env := func(n int) []corev1.EnvVar {
		var out []corev1.EnvVar
		for j := range n {
			out = append(out, corev1.EnvVar{Name: fmt.Sprintf("SETTING_%02d", j), Value: fmt.Sprintf("value-%d-%d-%s", i, j, strings.Repeat("v", 20))})
		}
		return out
	}
	container := func(name string, nenv int) corev1.Container {
		return corev1.Container{
			Name:  name,
			Image: "registry.example.com/" + app + "/" + name + ":v1.2." + strconv.Itoa(i%10),
			Args:  []string{"--config=/etc/" + name + "/config.yaml", "--v=2", "--listen=:8080"},
			Env:   env(nenv),
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("512Mi")},
			},
			VolumeMounts:   []corev1.VolumeMount{{Name: "config", MountPath: "/etc/" + name}, {Name: "token", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true}},
			ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080)}}, PeriodSeconds: 10},
		}
	}
	now := metav1.Unix(1700000000+int64(i), 0)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:              fmt.Sprintf("%s-7d9f8b6c5-%05d", app, i),
			Namespace:         ns,
			UID:               types.UID(fmt.Sprintf("00000000-0000-4000-8000-%012d", i)),
			ResourceVersion:   strconv.Itoa(1000 + i),
			CreationTimestamp: now,
			Labels:            map[string]string{"app": app, "pod-template-hash": "7d9f8b6c5", "tier": "backend"},
			Annotations:       map[string]string{"prometheus.io/scrape": "true", "kubectl.kubernetes.io/restartedAt": now.String()},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "ReplicaSet", Name: app + "-7d9f8b6c5",
				UID: types.UID(fmt.Sprintf("11111111-0000-4000-8000-%012d", i%400)), Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: corev1.PodSpec{
			Containers:         []corev1.Container{container("main", 12), container("sidecar", 4)},
			NodeName:           fmt.Sprintf("node-%03d", i%200),
			ServiceAccountName: app,
			Volumes: []corev1.Volume{
				{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: app + "-config"}}}},
				{Name: "token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To[int64](3607)}}}}}},
			},
			Tolerations: []corev1.Toleration{{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)}},
		},
		Status: corev1.PodStatus{
			Phase:  corev1.PodRunning,
			HostIP: fmt.Sprintf("10.0.%d.%d", i%200/250, i%250), PodIP: fmt.Sprintf("10.1.%d.%d", i/250%250, i%250),
			StartTime: &now,
			Conditions: []corev1.PodCondition{
				{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
				{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
				{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now},
			},
			ContainerStatuses: []corev1.ContainerStatus{
				{Name: "main", Ready: true, Image: "registry.example.com/" + app + "/main:v1", ImageID: "registry.example.com/" + app + "/main@sha256:" + strings.Repeat("a", 64), ContainerID: "containerd://" + strings.Repeat("b", 64)},
				{Name: "sidecar", Ready: true, Image: "registry.example.com/" + app + "/sidecar:v1", ImageID: "registry.example.com/" + app + "/sidecar@sha256:" + strings.Repeat("c", 64), ContainerID: "containerd://" + strings.Repeat("d", 64)},
			},
		},
	}
}

func benchIndexers() cache.Indexers {
	return cache.Indexers{
		cache.NamespaceIndex:    cache.MetaNamespaceIndexFunc,
		indexer.ControllerIndex: indexer.ControllerIndexFunc,
		"app":                   indexer.LabelIndexFunc("app"),
	}
}

func benchOptions(cacheSize int) *store.Options {
	return &store.Options{Name: "v1/pods", Codec: mustCodec(), Indexers: benchIndexers(), CacheSize: cacheSize}
}

// loadFile writes n realistic Pods into a new store file and returns its
// path and the Pods' keys.
func loadFile(b *testing.B, n int) (string, []string) {
	b.Helper()
	path := filepath.Join(b.TempDir(), "pods.db")
	s, err := bolt.Open(b.Context(), path, benchOptions(0))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	const batch = 5000
	keys := make([]string, 0, n)
	for lo := 0; lo < n; lo += batch {
		var ops []store.Op
		for i := lo; i < min(lo+batch, n); i++ {
			p := realisticPod(i)
			ops = append(ops, store.Op{Type: store.OpPut, Object: p})
			keys = append(keys, p.Namespace+"/"+p.Name)
		}
		if err := s.Commit(b.Context(), store.Batch{Ops: ops, ResourceVersion: strconv.Itoa(lo)}); err != nil {
			b.Fatal(err)
		}
	}
	return path, keys
}

// BenchmarkCommit measures group-committed writes: Commits of 1,000 new
// Pods each, durable (fsync per Commit) and not. client-go's indexer adding
// the same objects in memory is the reference. written-B/object is what
// the process wrote to storage per object (Linux). The store grows with
// b.N, and so does the cost per object: compare runs of equal b.N, e.g.
// -benchtime 100x for the 100,000 Pods, and the ratio to
// impl=bbolt-raw of the same run.
func BenchmarkCommit(b *testing.B) {
	const perCommit = 1000
	pods := make([]*corev1.Pod, perCommit)
	size := 0
	for i := range pods {
		pods[i] = realisticPod(i)
		data, _ := pods[i].Marshal()
		size += len(data)
	}
	b.Logf("%d Pods per Commit, %d bytes each on average in protobuf", perCommit, size/perCommit)
	// Each round adds new Pods, whose keys interleave with the earlier
	// ones', as new Pods' random names do.
	batch := func(round int) []*corev1.Pod {
		out := make([]*corev1.Pod, len(pods))
		for i, p := range pods {
			c := p.DeepCopy()
			c.Name = fmt.Sprintf("%s-r%d", p.Name, round)
			out[i] = c
		}
		return out
	}
	for _, c := range commitVariants {
		b.Run(c.name(), func(b *testing.B) {
			s := c.open(b)
			defer s.Close()
			round := 0
			written := writeBytes()
			for b.Loop() {
				b.StopTimer()
				ops := make([]store.Op, perCommit)
				for i, p := range batch(round) {
					ops[i] = store.Op{Type: store.OpPut, Object: p}
				}
				round++
				b.StartTimer()
				if err := s.Commit(b.Context(), store.Batch{Ops: ops, ResourceVersion: strconv.Itoa(round)}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*perCommit)/b.Elapsed().Seconds(), "objects/s")
			if w := writeBytes(); w > 0 {
				b.ReportMetric(float64(w-written)/float64(b.N*perCommit), "written-B/object")
			}
		})
	}
	// The engine's floor: the same Pods, encoded, put into one bbolt bucket
	// per transaction, without index entries, index values or resume point.
	b.Run("impl=bbolt-raw/durability=sync", func(b *testing.B) {
		db, err := bbolt.Open(filepath.Join(b.TempDir(), "raw.db"), 0o600, &bbolt.Options{PageSize: 16 << 10, FreelistType: bbolt.FreelistMapType})
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		round := 0
		written := writeBytes()
		for b.Loop() {
			b.StopTimer()
			objs := batch(round)
			round++
			b.StartTimer()
			err := db.Update(func(tx *bbolt.Tx) error {
				bk, err := tx.CreateBucketIfNotExists([]byte("objects"))
				if err != nil {
					return err
				}
				for _, p := range objs {
					data, err := p.Marshal()
					if err != nil {
						return err
					}
					if err := bk.Put([]byte(p.Namespace+"/"+p.Name), data); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N*perCommit)/b.Elapsed().Seconds(), "objects/s")
		if w := writeBytes(); w > 0 {
			b.ReportMetric(float64(w-written)/float64(b.N*perCommit), "written-B/object")
		}
	})
	b.Run("impl=client-go", func(b *testing.B) {
		idx := cache.NewIndexer(cache.DeletionHandlingMetaNamespaceKeyFunc, benchIndexers())
		round := 0
		for b.Loop() {
			b.StopTimer()
			objs := batch(round)
			round++
			b.StartTimer()
			for _, o := range objs {
				if err := idx.Add(o); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(b.N*perCommit)/b.Elapsed().Seconds(), "objects/s")
	})
}

// writeBytes returns the bytes this process has caused to be written to
// storage (Linux /proc/self/io), or 0 where that is unknown.
func writeBytes() int64 {
	data, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "write_bytes: "); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}

// BenchmarkOpen measures a restart: open a file of N Pods and have every one
// readable. client-go's reference is what a relist costs it locally:
// decoding N Pods from protobuf and adding them to a new indexer (without
// the API server and the network).
func BenchmarkOpen(b *testing.B) {
	n := benchPods(b)
	path, keys := loadFile(b, n)
	last := keys[len(keys)-1]
	b.Run(fmt.Sprintf("impl=bolt/pods=%d", n), func(b *testing.B) {
		for b.Loop() {
			s, err := bolt.Open(b.Context(), path, benchOptions(0))
			if err != nil {
				b.Fatal(err)
			}
			if _, ok, err := s.GetByKey(last); !ok || err != nil {
				b.Fatalf("GetByKey(%q) = %v, %v after open", last, ok, err)
			}
			s.Close()
		}
	})
	openBounded := func(b *testing.B) {
		s, err := bolt.Open(b.Context(), path, benchOptions(1000))
		if err != nil {
			b.Fatal(err)
		}
		if _, ok, err := s.GetByKey(last); !ok || err != nil {
			b.Fatalf("GetByKey(%q) = %v, %v after open", last, ok, err)
		}
		s.Close()
	}
	// The first bounded open of a store the default mode wrote builds its
	// index entries from the key records: what switching modes costs.
	b.Run(fmt.Sprintf("impl=bolt-bounded/from=default/pods=%d", n), func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			s, err := bolt.Open(b.Context(), path, benchOptions(0)) // drops the entries
			if err != nil {
				b.Fatal(err)
			}
			s.Close()
			b.StartTimer()
			openBounded(b)
		}
	})
	b.Run(fmt.Sprintf("impl=bolt-bounded/pods=%d", n), func(b *testing.B) {
		openBounded(b) // the store has its entries from here on
		for b.Loop() {
			openBounded(b)
		}
	})
	encoded := make([][]byte, n)
	for i := range encoded {
		encoded[i], _ = realisticPod(i).Marshal()
	}
	b.Run(fmt.Sprintf("impl=client-go/pods=%d", n), func(b *testing.B) {
		for b.Loop() {
			idx := cache.NewIndexer(cache.DeletionHandlingMetaNamespaceKeyFunc, benchIndexers())
			list := make([]interface{}, n)
			for i, data := range encoded {
				p := &corev1.Pod{}
				if err := p.Unmarshal(data); err != nil {
					b.Fatal(err)
				}
				list[i] = p
			}
			if err := idx.Replace(list, "1"); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkRead measures Get, ByIndex and List in the default mode, the
// bounded mode (cache=1000, keys spread over the whole store so most Gets
// decode), and client-go's indexer holding the same Pods.
func BenchmarkRead(b *testing.B) {
	n := benchPods(b)
	path, keys := loadFile(b, n)
	type impl struct {
		name  string
		store cache.Indexer
	}
	var impls []impl
	// A store name opens once per process: the bounded store reads a copy.
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	copyPath := path + ".copy"
	if err := os.WriteFile(copyPath, data, 0o600); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		path string
		size int
	}{{"bolt", path, 0}, {"bolt-bounded", copyPath, 1000}} {
		s, err := bolt.Open(b.Context(), c.path, benchOptions(c.size))
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		impls = append(impls, impl{c.name, s})
	}
	idx := cache.NewIndexer(cache.DeletionHandlingMetaNamespaceKeyFunc, benchIndexers())
	for i := range n {
		if err := idx.Add(realisticPod(i)); err != nil {
			b.Fatal(err)
		}
	}
	impls = append(impls, impl{"client-go", idx})
	for _, im := range impls {
		b.Run("op=Get/impl="+im.name, func(b *testing.B) {
			i := 0
			for b.Loop() {
				// A stride coprime with n visits every key.
				k := keys[(i*7919)%len(keys)]
				i++
				if _, ok, err := im.store.GetByKey(k); !ok || err != nil {
					b.Fatalf("GetByKey(%q) = %v, %v", k, ok, err)
				}
			}
		})
	}
	for _, im := range impls {
		b.Run("op=ByIndex/impl="+im.name, func(b *testing.B) {
			i := 0
			objs := 0
			for b.Loop() {
				// One ReplicaSet's Pods: n/400 of them.
				v := indexer.ControllerIndexValue("ReplicaSet", fmt.Sprintf("team-%02d", i%400%50), fmt.Sprintf("app-%03d-7d9f8b6c5", i%400))
				i++
				list, err := im.store.ByIndex(indexer.ControllerIndex, v)
				if err != nil || len(list) == 0 {
					b.Fatalf("ByIndex(controller, %q) = %d objects, %v", v, len(list), err)
				}
				objs += len(list)
			}
			b.ReportMetric(float64(objs)/float64(b.N), "objects/op")
		})
	}
	for _, im := range impls {
		b.Run("op=List/impl="+im.name, func(b *testing.B) {
			for b.Loop() {
				if got := len(im.store.List()); got != n {
					b.Fatalf("List = %d objects; want %d", got, n)
				}
			}
		})
	}
}

// BenchmarkHeap reports the heap of a bounded store (cache=1000) that has
// served reads of every Pod, against a default store and client-go's indexer
// holding the same Pods. Each iteration builds the store anew. heap-MiB is
// the heap in use after a GC with the store open; peak-heap-MiB the largest
// heap (garbage included) sampled every millisecond while it was built.
func BenchmarkHeap(b *testing.B) {
	n := benchPods(b)
	path, keys := loadFile(b, n)
	heap := func() uint64 {
		runtime.GC()
		sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		metrics.Read(sample)
		return sample[0].Value.Uint64()
	}
	// peak samples the heap's live and not yet collected objects every
	// millisecond until stop is closed, and returns the largest sample.
	peak := func(stop <-chan struct{}) <-chan uint64 {
		out := make(chan uint64, 1)
		go func() {
			sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
			var max uint64
			t := time.NewTicker(time.Millisecond)
			defer t.Stop()
			for {
				metrics.Read(sample)
				if v := sample[0].Value.Uint64(); v > max {
					max = v
				}
				select {
				case <-stop:
					out <- max
					return
				case <-t.C:
				}
			}
		}()
		return out
	}
	measure := func(b *testing.B, hold func() (interface{}, func())) {
		var total, peakTotal uint64
		for b.Loop() {
			before := heap()
			stop := make(chan struct{})
			peakc := peak(stop)
			x, done := hold()
			close(stop)
			max := <-peakc
			after := heap()
			runtime.KeepAlive(x)
			done()
			if after > before {
				total += after - before
			}
			if max > before {
				peakTotal += max - before
			}
		}
		b.ReportMetric(float64(total)/float64(b.N)/(1<<20), "heap-MiB")
		b.ReportMetric(float64(total)/float64(b.N)/float64(n), "heap-B/object")
		b.ReportMetric(float64(peakTotal)/float64(b.N)/(1<<20), "peak-heap-MiB")
	}
	b.Run(fmt.Sprintf("impl=bolt-bounded/cache=1000/pods=%d", n), func(b *testing.B) {
		measure(b, func() (interface{}, func()) {
			s, err := bolt.Open(b.Context(), path, benchOptions(1000))
			if err != nil {
				b.Fatal(err)
			}
			for _, k := range keys {
				if _, ok, err := s.GetByKey(k); !ok || err != nil {
					b.Fatalf("GetByKey(%q) = %v, %v", k, ok, err)
				}
			}
			return s, func() { s.Close() }
		})
	})
	b.Run(fmt.Sprintf("impl=bolt/pods=%d", n), func(b *testing.B) {
		measure(b, func() (interface{}, func()) {
			s, err := bolt.Open(b.Context(), path, benchOptions(0))
			if err != nil {
				b.Fatal(err)
			}
			return s, func() { s.Close() }
		})
	})
	b.Run(fmt.Sprintf("impl=client-go/pods=%d", n), func(b *testing.B) {
		measure(b, func() (interface{}, func()) {
			// Objects decoded from protobuf, as an informer gets them.
			idx := cache.NewIndexer(cache.DeletionHandlingMetaNamespaceKeyFunc, benchIndexers())
			for i := range n {
				data, err := realisticPod(i).Marshal()
				if err != nil {
					b.Fatal(err)
				}
				p := &corev1.Pod{}
				if err := p.Unmarshal(data); err != nil {
					b.Fatal(err)
				}
				if err := idx.Add(p); err != nil {
					b.Fatal(err)
				}
			}
			return idx, func() {}
		})
	})
}

// commitVariant is a store configuration the commit benchmarks run on.
type commitVariant struct {
	impl  string
	cache int
	dur   store.Durability
}

var commitVariants = []commitVariant{
	{"bolt", 0, store.DurabilitySync},
	{"bolt", 0, store.DurabilityNoSync},
	// The bounded mode writes the same file without holding every object
	// decoded: the garbage collector's share of the default mode's cost is
	// the difference.
	{"bolt-bounded", 1000, store.DurabilitySync},
}

func (c commitVariant) name() string { return "impl=" + c.impl + "/durability=" + string(c.dur) }

// open opens a new store of c for b.
func (c commitVariant) open(b *testing.B) store.Store {
	b.Helper()
	o := benchOptions(c.cache)
	o.Durability = c.dur
	s, err := bolt.Open(b.Context(), filepath.Join(b.TempDir(), "pods.db"), o)
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkCommitOne measures the cost of a Commit of one object: the fsync
// floor that group commits amortize.
func BenchmarkCommitOne(b *testing.B) {
	for _, c := range commitVariants {
		b.Run(c.name(), func(b *testing.B) {
			s := c.open(b)
			defer s.Close()
			p := realisticPod(1)
			i := 0
			for b.Loop() {
				i++
				p.ResourceVersion = strconv.Itoa(i)
				if err := s.Commit(b.Context(), store.Batch{Ops: []store.Op{{Type: store.OpPut, Object: p}}, ResourceVersion: p.ResourceVersion}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkReplace measures a relist: Replace with N Pods (sorted and
// written at 100% fill in one transaction), against client-go's Replace.
func BenchmarkReplace(b *testing.B) {
	n := benchPods(b)
	list := make([]interface{}, n)
	for i := range list {
		list[i] = realisticPod(i)
	}
	b.Run(fmt.Sprintf("impl=bolt/pods=%d", n), func(b *testing.B) {
		s, err := bolt.Open(b.Context(), filepath.Join(b.TempDir(), "pods.db"), benchOptions(0))
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		i := 0
		for b.Loop() {
			i++
			if err := s.Replace(list, strconv.Itoa(i)); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "objects/s")
	})
	b.Run(fmt.Sprintf("impl=client-go/pods=%d", n), func(b *testing.B) {
		idx := cache.NewIndexer(cache.DeletionHandlingMetaNamespaceKeyFunc, benchIndexers())
		i := 0
		for b.Loop() {
			i++
			if err := idx.Replace(list, strconv.Itoa(i)); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "objects/s")
	})
}

// BenchmarkCommitUpdates measures the informer's steady state: Commits of
// 1,000 updates each (new resourceVersion and status, same labels and
// owner) to Pods spread over a store of N, durable, against client-go's
// indexer updating the same objects.
func BenchmarkCommitUpdates(b *testing.B) {
	const perCommit = 1000
	n := benchPods(b)
	base := make([]*corev1.Pod, n)
	for i := range base {
		base[i] = realisticPod(i)
	}
	// batch returns round's updates: every n/perCommit-th Pod from an
	// offset, so commits touch Pods all over the key space.
	batch := func(round int) []*corev1.Pod {
		out := make([]*corev1.Pod, 0, perCommit)
		for j := range perCommit {
			i := (round*7919 + j*(n/perCommit)) % n
			c := base[i].DeepCopy()
			c.ResourceVersion = strconv.Itoa(1_000_000 + round*perCommit + j)
			c.Status.Conditions[0].LastTransitionTime = metav1.Unix(1800000000+int64(round), 0)
			out = append(out, c)
		}
		return out
	}
	b.Run(fmt.Sprintf("impl=bolt/pods=%d", n), func(b *testing.B) {
		path, _ := loadFile(b, n)
		s, err := bolt.Open(b.Context(), path, benchOptions(0))
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		round := 0
		written := writeBytes()
		for b.Loop() {
			b.StopTimer()
			ops := make([]store.Op, 0, perCommit)
			for _, p := range batch(round) {
				ops = append(ops, store.Op{Type: store.OpPut, Object: p})
			}
			round++
			b.StartTimer()
			if err := s.Commit(b.Context(), store.Batch{Ops: ops, ResourceVersion: strconv.Itoa(round)}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N*perCommit)/b.Elapsed().Seconds(), "objects/s")
		if w := writeBytes(); w > 0 {
			b.ReportMetric(float64(w-written)/float64(b.N*perCommit), "written-B/object")
		}
	})
	b.Run(fmt.Sprintf("impl=client-go/pods=%d", n), func(b *testing.B) {
		idx := cache.NewIndexer(cache.DeletionHandlingMetaNamespaceKeyFunc, benchIndexers())
		for _, p := range base {
			if err := idx.Add(p); err != nil {
				b.Fatal(err)
			}
		}
		round := 0
		for b.Loop() {
			b.StopTimer()
			objs := batch(round)
			round++
			b.StartTimer()
			for _, o := range objs {
				if err := idx.Update(o); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(b.N*perCommit)/b.Elapsed().Seconds(), "objects/s")
	})
}
