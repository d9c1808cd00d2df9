package badger

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
)

func podCodec(t testing.TB) store.Codec {
	t.Helper()
	c, err := indexer.NewCodec(&corev1.Pod{})
	if err != nil {
		t.Fatalf("NewCodec: %v", err)
	}
	return c
}

func podIndexers() cache.Indexers {
	return cache.Indexers{
		cache.NamespaceIndex: indexer.NamespaceIndexFunc,
		"app":                indexer.LabelIndexFunc("app"),
	}
}

func podOptions(t testing.TB, name string, cacheSize int) *store.Options {
	return &store.Options{Name: name, Codec: podCodec(t), Indexers: podIndexers(), CacheSize: cacheSize}
}

// newPod returns a realistic Pod of 2-4 KiB of protobuf: labels,
// annotations, two containers with env, resources and status.
func newPod(i int, rv, app string) *corev1.Pod {
	ns := fmt.Sprintf("ns-%d", i%10)
	name := fmt.Sprintf("pod-%06d", i)
	env := make([]corev1.EnvVar, 12)
	for j := range env {
		env[j] = corev1.EnvVar{Name: fmt.Sprintf("ENV_VARIABLE_%02d", j), Value: strings.Repeat("v", 40+i%23)}
	}
	ctr := func(n string) corev1.Container {
		return corev1.Container{
			Name:  n,
			Image: "registry.example.com/team/" + app + ":v1.2.3",
			Env:   env,
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("512Mi")},
			},
		}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       ns,
			Name:            name,
			UID:             types.UID(fmt.Sprintf("00000000-0000-0000-0000-%012d", i)),
			ResourceVersion: rv,
			Labels:          map[string]string{"app": app, "tier": "backend", "pod-template-hash": "5d9c8b7f6d"},
			Annotations:     map[string]string{"example.com/checksum": strings.Repeat("c", 64), "example.com/owner": "team-" + app},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: app + "-5d9c8b7f6d", UID: "11111111-2222-3333-4444-555555555555"}},
		},
		Spec: corev1.PodSpec{
			Containers:         []corev1.Container{ctr("main"), ctr("sidecar")},
			NodeName:           fmt.Sprintf("node-%03d", i%200),
			ServiceAccountName: app,
		},
		Status: corev1.PodStatus{
			Phase:  corev1.PodRunning,
			PodIP:  fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255),
			HostIP: "192.168.0.1",
			Conditions: []corev1.PodCondition{
				{Type: corev1.PodReady, Status: corev1.ConditionTrue},
				{Type: corev1.ContainersReady, Status: corev1.ConditionTrue},
			},
		},
	}
}

func mustOK(t testing.TB, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// contents maps key to "rv/app" for every object of s.
func contents(t testing.TB, s store.Store) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, obj := range s.List() {
		p := obj.(*corev1.Pod)
		out[p.Namespace+"/"+p.Name] = p.ResourceVersion + "/" + p.Labels["app"]
	}
	return out
}

// eachIndexed calls fn with every (index, value, key) the index functions
// of s yield for its objects.
func eachIndexed(t testing.TB, s store.Store, fn func(index, value, key string)) {
	t.Helper()
	objs := s.List()
	for name, f := range s.GetIndexers() {
		for _, obj := range objs {
			key, err := cache.MetaNamespaceKeyFunc(obj)
			mustOK(t, "key", err)
			vals, err := f(obj)
			mustOK(t, "index func", err)
			for _, v := range vals {
				fn(name, v, key)
			}
		}
	}
}

// checkIndexes checks that IndexKeys agrees with the objects for every
// index and value (invariant 7).
func checkIndexes(t testing.TB, s store.Store) {
	t.Helper()
	want := map[string]map[string][]string{}
	for name := range s.GetIndexers() {
		want[name] = map[string][]string{}
	}
	eachIndexed(t, s, func(name, v, key string) {
		want[name][v] = append(want[name][v], key)
	})
	got := map[string]map[string][]string{}
	for name := range s.GetIndexers() {
		got[name] = map[string][]string{}
		for _, v := range s.ListIndexFuncValues(name) {
			keys, err := s.IndexKeys(name, v)
			mustOK(t, "IndexKeys", err)
			sort.Strings(keys)
			got[name][v] = keys
		}
		for v := range want[name] {
			sort.Strings(want[name][v])
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("index entries disagree with objects (-want +got):\n%s", diff)
	}
}

// generationsOf returns the generation numbers that have keys for s's
// store, once the deletions of old generations running in the background
// are over.
func generationsOf(t testing.TB, s store.Store) []uint64 {
	t.Helper()
	sp := spaceOf(t, s)
	sp.sh.oldGens.Wait()
	gens, _, err := sp.generations(0)
	mustOK(t, "generations", err)
	return gens
}

func spaceOf(t testing.TB, s store.Store) *space {
	t.Helper()
	switch s := s.(type) {
	case *bounded:
		return s.sp
	case *defaultStore:
		return s.sp
	}
	t.Fatalf("unexpected store type %T", s)
	return nil
}

// dirSize returns the apparent size of the files in dir.
func dirSize(t testing.TB, dir string) int64 {
	t.Helper()
	var n int64
	ents, err := os.ReadDir(dir)
	mustOK(t, "ReadDir", err)
	for _, e := range ents {
		fi, err := os.Stat(filepath.Join(dir, e.Name()))
		if errors.Is(err, fs.ErrNotExist) {
			// Badger's goroutines delete files (a flushed memtable's
			// .mem, a rewritten value-log file) while the directory is
			// read: what is gone takes no space.
			continue
		}
		mustOK(t, "Stat", err)
		n += fi.Size()
	}
	return n
}
