package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/store"
)

// MemImpls are the implementations MeasureMemory knows: client-go's
// indexer, and every backend in its default mode and bounded to 1000
// decoded objects.
var MemImpls = []string{
	"client-go",
	"memory", "memdb",
	"bolt", "bolt?cache=1000",
	"badger", "badger?cache=1000",
}

// MemResult is the memory held by N ConfigMaps in one implementation,
// measured in a fresh process after a garbage collection.
type MemResult struct {
	Impl string `json:"impl"`
	N    int    `json:"n"`
	// HeapBytes is the live heap (runtime.MemStats.HeapAlloc after GC).
	HeapBytes uint64 `json:"heap_bytes"`
	// RSSBytes is the process's resident set (VmRSS of /proc/self/status),
	// which includes the mmapped database file of bolt and badger's
	// caches; 0 where /proc is unavailable.
	RSSBytes uint64 `json:"rss_bytes"`
	// How says what was measured: "loaded" (objects added in this process)
	// or "reopened" (a persistent store written by another process and
	// opened by this one, as a restarted controller does).
	How string `json:"how"`
}

// MeasureMemory measures impl holding n ConfigMaps in child processes of
// exe (a program that calls ProbeMain when its first argument is
// ProbeArg), so that each number starts from a fresh heap. Persistent
// backends are written by one child and measured in another that reopens
// the database; client-go and the in-memory backends are measured after
// loading.
func MeasureMemory(ctx context.Context, exe, impl string, n int) (MemResult, error) {
	dir, err := os.MkdirTemp("", "informerdb-mem-")
	if err != nil {
		return MemResult{}, fmt.Errorf("bench: memory %s: %w", impl, err)
	}
	defer os.RemoveAll(dir)
	args := []string{ProbeArg, "-impl", impl, "-n", strconv.Itoa(n), "-dir", dir}
	if persistent(impl) {
		if _, err := runProbe(ctx, exe, append(args, "-phase", "load")); err != nil {
			return MemResult{}, err
		}
		return runProbe(ctx, exe, append(args, "-phase", "open"))
	}
	return runProbe(ctx, exe, append(args, "-phase", "load"))
}

// ProbeArg is the first argument that makes a program run ProbeMain.
const ProbeArg = "memory-probe"

func persistent(impl string) bool {
	name, _, _ := cutAny(impl, "?")
	return name == "bolt" || name == "badger"
}

func runProbe(ctx context.Context, exe string, args []string) (MemResult, error) {
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return MemResult{}, fmt.Errorf("bench: memory probe %v: %w", args, err)
	}
	var r MemResult
	if err := json.Unmarshal(out, &r); err != nil {
		return MemResult{}, fmt.Errorf("bench: memory probe %v: decode %q: %w", args, out, err)
	}
	return r, nil
}

// ProbeMain is the child side of MeasureMemory; args follow ProbeArg:
// -impl, -n, -dir, -phase (load or open) and, to find out what the heap
// holds, -heapprofile file. It prints one MemResult as JSON on stdout.
func ProbeMain(ctx context.Context, args []string) error {
	var impl, dir, phase, heapProfile string
	n := 0
	for i := 0; i+1 < len(args); i += 2 {
		switch args[i] {
		case "-impl":
			impl = args[i+1]
		case "-n":
			v, err := strconv.Atoi(args[i+1])
			if err != nil {
				return fmt.Errorf("bench: probe: -n: %w", err)
			}
			n = v
		case "-dir":
			dir = args[i+1]
		case "-phase":
			phase = args[i+1]
		case "-heapprofile":
			heapProfile = args[i+1]
		default:
			return fmt.Errorf("bench: probe: unknown flag %q", args[i])
		}
	}
	res := MemResult{Impl: impl, N: n, How: "loaded"}
	var keep interface{}
	switch impl {
	case "client-go":
		idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
		for i := range n {
			if err := idx.Add(memObject(i)); err != nil {
				return fmt.Errorf("bench: probe: add: %w", err)
			}
		}
		keep = idx
	default:
		url, err := memURL(impl, dir)
		if err != nil {
			return err
		}
		opts, err := storeOptions("probe")
		if err != nil {
			return err
		}
		s, err := store.Open(ctx, url, opts)
		if err != nil {
			return fmt.Errorf("bench: probe: %w", err)
		}
		defer s.Close()
		if phase == "open" {
			res.How = "reopened"
			if got := len(s.ListKeys()); got != n {
				return fmt.Errorf("bench: probe: reopened store holds %d objects, want %d", got, n)
			}
		} else {
			const batch = 1000
			for from := 0; from < n; from += batch {
				var ops []store.Op
				for i := from; i < min(n, from+batch); i++ {
					ops = append(ops, store.Op{Type: store.OpPut, Object: memObject(i)})
				}
				if err := s.Commit(ctx, store.Batch{Ops: ops, ResourceVersion: strconv.Itoa(from + len(ops))}); err != nil {
					return fmt.Errorf("bench: probe: commit: %w", err)
				}
			}
			if persistent(impl) {
				// The writer's numbers are not the point: a restarted
				// controller opens the database in a fresh process.
				return json.NewEncoder(os.Stdout).Encode(res)
			}
		}
		keep = s
	}
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	res.HeapBytes = ms.HeapAlloc
	res.RSSBytes = rss()
	if heapProfile != "" {
		if err := writeHeapProfile(heapProfile); err != nil {
			return err
		}
	}
	runtime.KeepAlive(keep)
	return json.NewEncoder(os.Stdout).Encode(res)
}

// writeHeapProfile writes the heap profile of what is live now, for finding
// out what a backend holds beyond the decoded objects.
func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("bench: probe: heap profile: %w", err)
	}
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		f.Close()
		return fmt.Errorf("bench: probe: heap profile: %w", err)
	}
	return f.Close()
}

// memURL is the database of impl under dir; the in-memory backends get no
// file, as they would be used without persistence in a process that holds
// them.
func memURL(impl, dir string) (string, error) {
	switch impl {
	case "memory":
		return "memory://", nil
	case "memdb":
		return "memdb://", nil
	}
	return StoreURL(impl, dir)
}

// memObject is the i-th ConfigMap as the API server returns it: about 1 KiB
// of data, a UID, a resourceVersion, a creation time and managed fields.
func memObject(i int) *corev1.ConfigMap {
	cm := newConfigMap("mem", i)
	// Objects decoded from the API server each hold their own strings; a
	// payload shared by every object would make client-go's indexer look
	// 1 KiB per object smaller than it is.
	cm.Data["payload"] = strings.Clone(payload)
	cm.UID = types.UID(fmt.Sprintf("00000000-0000-4000-8000-%012d", i))
	cm.ResourceVersion = strconv.Itoa(1000 + i)
	cm.CreationTimestamp = metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	cm.ManagedFields = []metav1.ManagedFieldsEntry{{
		Manager:    "informerdb-bench",
		Operation:  metav1.ManagedFieldsOperationUpdate,
		APIVersion: "v1",
		Time:       &cm.CreationTimestamp,
		FieldsType: "FieldsV1",
		FieldsV1:   metav1.NewFieldsV1(`{"f:data":{".":{},"f:data":{},"f:payload":{}},"f:metadata":{"f:labels":{".":{},"f:app":{}}}}`),
	}}
	return cm
}

// rss reads VmRSS from /proc/self/status; 0 where it is unavailable.
func rss() uint64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}
