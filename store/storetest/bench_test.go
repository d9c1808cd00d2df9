package storetest_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
	_ "github.com/informerdb/informerdb/store/badger"
	_ "github.com/informerdb/informerdb/store/bolt"
	_ "github.com/informerdb/informerdb/store/memdb"
	_ "github.com/informerdb/informerdb/store/memory"
)

// Benchmarks run client-go's indexer and every backend in the same process,
// as sub-benchmarks impl=client-go, impl=memory, ..., so that
//
//	go run golang.org/x/perf/cmd/benchstat@... -col /impl bench.txt
//
// reports each backend as a ratio of client-go. N pods (2-4 KiB of protobuf
// each) are loaded first; INFORMERDB_BENCH_N overrides the default 10,000.

const namespaces = 100

func benchN(b *testing.B) int {
	b.Helper()
	if v := os.Getenv("INFORMERDB_BENCH_N"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < namespaces {
			b.Fatalf("INFORMERDB_BENCH_N=%q: want a number >= %d", v, namespaces)
		}
		return n
	}
	return 10_000
}

// benchPod returns pod i of a deterministic, realistic population: a
// Deployment's pod with labels, owner, two containers with env, resources
// and probes, and a status with conditions.
func benchPod(i, version int) *corev1.Pod {
	ns := fmt.Sprintf("team-%02d", i%namespaces)
	app := fmt.Sprintf("service-%03d", i/namespaces%50)
	name := fmt.Sprintf("%s-7d9f8c6b5-%05d", app, i)
	rv := strconv.Itoa(1000 + i*3 + version)
	ts := metav1.Unix(1700000000+int64(i), 0)
	env := make([]corev1.EnvVar, 10)
	for j := range env {
		env[j] = corev1.EnvVar{Name: fmt.Sprintf("CONFIG_VALUE_%d", j), Value: fmt.Sprintf("value-%d-%d-of-the-service-configuration", i, j)}
	}
	container := func(name, image string) corev1.Container {
		return corev1.Container{
			Name: name, Image: image, Env: env,
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("512Mi")},
			},
			ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstrPort}}, PeriodSeconds: 10},
			VolumeMounts:   []corev1.VolumeMount{{Name: "config", MountPath: "/etc/config", ReadOnly: true}},
		}
	}
	phase := corev1.PodRunning
	if version%2 == 1 {
		phase = corev1.PodPending
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: name, UID: types.UID(fmt.Sprintf("6f1c1e2a-0000-4000-8000-%012d", i)),
			ResourceVersion: rv, CreationTimestamp: ts, GenerateName: app + "-7d9f8c6b5-",
			Labels: map[string]string{"app": app, "pod-template-hash": "7d9f8c6b5", "tier": []string{"frontend", "backend", "cache"}[i%3]},
			Annotations: map[string]string{
				"kubectl.kubernetes.io/restartedAt": "2026-11-01T10:00:00Z",
				"prometheus.io/scrape":              "true",
			},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "ReplicaSet", Name: app + "-7d9f8c6b5",
				UID: types.UID(fmt.Sprintf("rs-%s-%s", ns, app)), Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: corev1.PodSpec{
			NodeName:           fmt.Sprintf("node-%03d", i%200),
			ServiceAccountName: app,
			Containers:         []corev1.Container{container("app", "registry.example.com/"+app+":v1.2.3"), container("sidecar", "registry.example.com/proxy:v2.0.1")},
			Volumes:            []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: app + "-config"}}}}},
		},
		Status: corev1.PodStatus{
			Phase: phase, PodIP: fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255), HostIP: "192.168.0.1",
			StartTime: &ts,
			Conditions: []corev1.PodCondition{
				{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: ts},
				{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: ts},
				{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: ts},
			},
		},
	}
}

var intstrPort = intstr.FromInt32(8080)

func benchIndexers() cache.Indexers {
	return cache.Indexers{
		cache.NamespaceIndex: cache.MetaNamespaceIndexFunc,
		"node": func(obj interface{}) ([]string, error) {
			return []string{obj.(*corev1.Pod).Spec.NodeName}, nil
		},
	}
}

// impl is one implementation under benchmark.
type impl struct {
	name string
	// open returns an empty indexer and a function closing it.
	open func(b *testing.B) (cache.Indexer, func())
}

func openURL(url func(dir string) string) func(b *testing.B) (cache.Indexer, func()) {
	return func(b *testing.B) (cache.Indexer, func()) {
		b.Helper()
		codec, err := indexer.NewCodec(&corev1.Pod{})
		if err != nil {
			b.Fatal(err)
		}
		dir, err := os.MkdirTemp(b.TempDir(), "db")
		if err != nil {
			b.Fatal(err)
		}
		s, err := store.Open(b.Context(), url(dir), &store.Options{Name: "pods", Codec: codec, Indexers: benchIndexers()})
		if err != nil {
			b.Fatal(err)
		}
		return s, func() {
			if err := s.Close(); err != nil {
				b.Error(err)
			}
		}
	}
}

var impls = []impl{
	{"client-go", func(*testing.B) (cache.Indexer, func()) {
		return cache.NewIndexer(cache.DeletionHandlingMetaNamespaceKeyFunc, benchIndexers()), func() {}
	}},
	{"memory", openURL(func(string) string { return "memory://" })},
	{"memdb", openURL(func(string) string { return "memdb://" })},
	{"bolt", openURL(func(dir string) string { return "bolt://" + filepath.Join(dir, "cache.db") })},
	{"badger", openURL(func(dir string) string { return "badger://" + dir })},
}

// pods caches the population across benchmarks.
var pods = map[[2]int][]*corev1.Pod{}

func population(n, version int) []*corev1.Pod {
	if p, ok := pods[[2]int{n, version}]; ok {
		return p
	}
	p := make([]*corev1.Pod, n)
	for i := range p {
		p[i] = benchPod(i, version)
	}
	pods[[2]int{n, version}] = p
	return p
}

// load fills s with the population, in batches for stores.
func load(b *testing.B, s cache.Indexer, ps []*corev1.Pod) {
	b.Helper()
	st, ok := s.(store.Store)
	if !ok {
		for _, p := range ps {
			if err := s.Add(p); err != nil {
				b.Fatal(err)
			}
		}
		return
	}
	for i := 0; i < len(ps); i += 1000 {
		ops := make([]store.Op, 0, 1000)
		for _, p := range ps[i:min(i+1000, len(ps))] {
			ops = append(ops, store.Op{Type: store.OpPut, Object: p})
		}
		if err := st.Commit(b.Context(), store.Batch{Ops: ops, ResourceVersion: strconv.Itoa(i)}); err != nil {
			b.Fatal(err)
		}
	}
}

// forEachImpl runs fn for every implementation over a loaded store; what fn
// does before its b.Loop is not timed (the first b.Loop resets the timer).
func forEachImpl(b *testing.B, fn func(b *testing.B, s cache.Indexer, ps []*corev1.Pod)) {
	n := benchN(b)
	ps := population(n, 0)
	for _, im := range impls {
		b.Run("impl="+im.name, func(b *testing.B) {
			s, closeFn := im.open(b)
			defer closeFn()
			load(b, s, ps)
			b.ReportAllocs()
			fn(b, s, ps)
		})
	}
}

func BenchmarkGet(b *testing.B) {
	forEachImpl(b, func(b *testing.B, s cache.Indexer, ps []*corev1.Pod) {
		keys := make([]string, len(ps))
		for i, p := range ps {
			keys[i] = p.Namespace + "/" + p.Name
		}
		for i := 0; b.Loop(); i++ {
			if _, ok, err := s.GetByKey(keys[i%len(keys)]); !ok || err != nil {
				b.Fatalf("GetByKey: %v, %v", ok, err)
			}
		}
	})
}

func BenchmarkByIndex(b *testing.B) {
	forEachImpl(b, func(b *testing.B, s cache.Indexer, ps []*corev1.Pod) {
		want := len(ps) / namespaces
		for i := 0; b.Loop(); i++ {
			objs, err := s.ByIndex(cache.NamespaceIndex, fmt.Sprintf("team-%02d", i%namespaces))
			if err != nil || len(objs) < want {
				b.Fatalf("ByIndex: %d objects, %v", len(objs), err)
			}
		}
	})
}

func BenchmarkList(b *testing.B) {
	forEachImpl(b, func(b *testing.B, s cache.Indexer, ps []*corev1.Pod) {
		for b.Loop() {
			if n := len(s.List()); n != len(ps) {
				b.Fatalf("List: %d objects", n)
			}
		}
	})
}

func BenchmarkUpdate(b *testing.B) {
	forEachImpl(b, func(b *testing.B, s cache.Indexer, ps []*corev1.Pod) {
		next := population(len(ps), 1)
		for i := 0; b.Loop(); i++ {
			p := next[i%len(ps)]
			if i/len(ps)%2 == 1 {
				p = ps[i%len(ps)]
			}
			if err := s.Update(p); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkAdd inserts new keys into a store that starts empty; when the
// population is used up, a fresh store is opened outside the timer.
func BenchmarkAdd(b *testing.B) {
	n := benchN(b)
	ps := population(n, 0)
	for _, im := range impls {
		b.Run("impl="+im.name, func(b *testing.B) {
			s, closeFn := im.open(b)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if i > 0 && i%n == 0 {
					b.StopTimer()
					closeFn()
					s, closeFn = im.open(b)
					b.StartTimer()
				}
				if err := s.Add(ps[i%n]); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			closeFn()
		})
	}
}

// TestBenchPodSize keeps the benchmark population realistic: 2-4 KiB of
// protobuf per pod.
func TestBenchPodSize(t *testing.T) {
	codec, err := indexer.NewCodec(&corev1.Pod{})
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, 1, 999, 12345} {
		data, err := codec.Encode(benchPod(i, 0))
		if err != nil {
			t.Fatal(err)
		}
		if len(data) < 2<<10 || len(data) > 4<<10 {
			t.Errorf("pod %d encodes to %d bytes; want 2-4 KiB", i, len(data))
		}
	}
}
