package deltafifo_test

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/deltafifo"
)

// The end-to-end statement of DESIGN invariants 1 and 2 for each queue: a
// consumer that persists, after every pop, what it applied together with
// Batch.ResourceVersion (and Batch.RelistPending) can crash after any pop,
// restart, resume the watch from what it persisted (or relist, when a
// relist was pending) and end up with exactly the server's objects. Unlike
// TestResumePoint, which checks the watermark against a model of the
// queue, this checks what a restart makes of it against a model server.

// server is a model API server: objects, a global resourceVersion and the
// history of watch events.
type server struct {
	rv      int
	objs    map[string]*v1.ConfigMap // by name
	history []serverEvent
}

type serverEvent struct {
	typ cache.DeltaType // Added, Updated or Deleted
	obj *v1.ConfigMap
}

func rvNum(obj *v1.ConfigMap) int {
	n, _ := strconv.Atoi(obj.ResourceVersion)
	return n
}

// change applies a random change to name and returns the watch event.
func (s *server) change(name string) serverEvent {
	s.rv++
	rv := strconv.Itoa(s.rv)
	var e serverEvent
	switch old, ok := s.objs[name]; {
	case !ok:
		e = serverEvent{cache.Added, cm(name, rv, name+rv)}
		s.objs[name] = e.obj
	case s.rv%3 == 0:
		e = serverEvent{cache.Deleted, cm(name, rv, old.Data["v"])}
		delete(s.objs, name)
	default:
		e = serverEvent{cache.Updated, cm(name, rv, name+rv)}
		s.objs[name] = e.obj
	}
	s.history = append(s.history, e)
	return e
}

// list returns a consistent list and its resourceVersion.
func (s *server) list() ([]interface{}, string) {
	var out []interface{}
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		if o, ok := s.objs[name]; ok {
			out = append(out, o)
		}
	}
	return out, strconv.Itoa(s.rv)
}

// valuesAt returns key -> data "v" of the server's objects after every
// event at or before rv.
func (s *server) valuesAt(rv string) map[string]string {
	upTo, _ := strconv.Atoi(rv)
	out := map[string]string{}
	for _, e := range s.history {
		if rvNum(e.obj) > upTo {
			break
		}
		if e.typ == cache.Deleted {
			delete(out, "ns/"+e.obj.Name)
		} else {
			out["ns/"+e.obj.Name] = e.obj.Data["v"]
		}
	}
	return out
}

// values returns key -> data "v" of the server's objects.
func (s *server) values() map[string]string {
	out := map[string]string{}
	for _, o := range s.objs {
		out["ns/"+o.Name] = o.Data["v"]
	}
	return out
}

// persisted is what a persisting consumer has committed: objects, resume
// point and relist marker, all from the same pop.
type persisted struct {
	objs          map[string]interface{}
	rv            string
	relistPending bool
}

func (p persisted) values() map[string]string {
	out := map[string]string{}
	for k, o := range p.objs {
		out[k] = o.(*v1.ConfigMap).Data["v"]
	}
	return out
}

// consumer applies popped batches to known (the queue's KnownObjects, as
// an informer's store is) and persists after each pop.
type consumer struct {
	t     *testing.T
	known *known
	p     persisted
}

func (c *consumer) pop(q deltafifo.Queue) {
	c.t.Helper()
	err := q.Pop(c.t.Context(), func(_ context.Context, b deltafifo.Batch) error {
		c.known.apply(c.t, cache.DeletionHandlingMetaNamespaceKeyFunc, b)
		if b.ResourceVersion != "" {
			c.p.rv = b.ResourceVersion
		}
		c.p.relistPending = b.RelistPending
		c.p.objs = maps.Clone(c.known.objs)
		return nil
	})
	if err != nil {
		c.t.Fatalf("pop: %v", err)
	}
}

func newQueue(fifo bool, k *known) deltafifo.Queue {
	opts := deltafifo.Options{KnownObjects: k, EmitDeltaTypeReplaced: true, MaxBatch: 2}
	if fifo {
		return deltafifo.New(&opts)
	}
	return deltafifo.NewDeltaFIFO(&opts)
}

func queueEvent(q deltafifo.Queue, e serverEvent) error {
	switch e.typ {
	case cache.Added:
		return q.Add(e.obj)
	case cache.Updated:
		return q.Update(e.obj)
	}
	return q.Delete(e.obj)
}

// restart starts a consumer on what p holds, as a restarted process does:
// it resumes the watch from p.rv, replaying the server's later events, or
// relists when no resume point was persisted or a relist was pending; then
// it drains the queue and returns the objects it ends up with.
func restart(t *testing.T, fifo bool, srv *server, p persisted) map[string]string {
	t.Helper()
	k := newKnown()
	k.objs = maps.Clone(p.objs)
	if k.objs == nil {
		k.objs = map[string]interface{}{}
	}
	c := &consumer{t: t, known: k, p: p}
	q := newQueue(fifo, k)
	if p.rv == "" || p.relistPending {
		list, rv := srv.list()
		must(t, q.Replace(list, rv))
	} else {
		from, err := strconv.Atoi(p.rv)
		if err != nil {
			t.Fatalf("persisted resume point %q: %v", p.rv, err)
		}
		for _, e := range srv.history {
			if rvNum(e.obj) > from {
				must(t, queueEvent(q, e))
			}
		}
	}
	must(t, q.Bookmark(strconv.Itoa(srv.rv)))
	q.Close()
	for queueLen(q) > 0 {
		c.pop(q)
	}
	if want := strconv.Itoa(srv.rv); c.p.rv != want {
		t.Errorf("resume point after the restarted consumer drained its queue = %q, want %q", c.p.rv, want)
	}
	return c.known.values()
}

func (k *known) values() map[string]string {
	return persisted{objs: k.objs}.values()
}

// TestRestartConverges runs random interleavings of server changes,
// bookmarks, relists, resyncs and pops through each queue into a
// persisting consumer; after every pop it restarts a second consumer from
// what the first persisted and checks that, once caught up, it holds
// exactly the server's objects: no event at or before the persisted resume
// point was left unapplied (invariant 1), and a relist handed out only
// partly was relisted, not resumed from (invariant 2). For FIFO it also
// checks, after every pop, that what is persisted is exactly the server's
// state at the persisted resume point: nothing behind it, nothing ahead.
func TestRestartConverges(t *testing.T) {
	for _, fifo := range []bool{true, false} {
		name := "impl=DeltaFIFO"
		if fifo {
			name = "impl=FIFO"
		}
		t.Run(name, func(t *testing.T) {
			for seed := uint64(1); seed <= 40; seed++ {
				t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
					runRestartSeed(t, fifo, seed)
				})
			}
		})
	}
}

func runRestartSeed(t *testing.T, fifo bool, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	srv := &server{objs: map[string]*v1.ConfigMap{}}
	k := newKnown()
	c := &consumer{t: t, known: k}
	q := newQueue(fifo, k)
	list, rv := srv.list()
	must(t, q.Replace(list, rv))
	var trace []string
	names := []string{"a", "b", "c", "d", "e"}
	for step := range 200 {
		switch r := rng.IntN(100); {
		case r < 45:
			e := srv.change(names[rng.IntN(len(names))])
			trace = append(trace, fmt.Sprintf("%s %s@%s", e.typ, e.obj.Name, e.obj.ResourceVersion))
			must(t, queueEvent(q, e))
		case r < 50:
			trace = append(trace, "bookmark")
			must(t, q.Bookmark(strconv.Itoa(srv.rv)))
		case r < 55:
			// A relist after lost events: the server changed a key the
			// watch never reported.
			srv.change(names[rng.IntN(len(names))])
			list, rv := srv.list()
			trace = append(trace, "relist@"+rv)
			must(t, q.Replace(list, rv))
		case r < 58:
			trace = append(trace, "resync")
			must(t, q.Resync())
		default:
			if queueLen(q) == 0 {
				continue
			}
			c.pop(q)
			trace = append(trace, fmt.Sprintf("pop (persisted rv %q, relist pending %v)", c.p.rv, c.p.relistPending))
			if fifo && c.p.rv != "" {
				// In order: what is persisted is exactly the server's
				// state at the persisted resume point.
				if d := cmp.Diff(srv.valuesAt(c.p.rv), c.p.values()); d != "" {
					t.Fatalf("step %d: persisted objects are not the server's state at the persisted resume point %s (-server +persisted):\n%s\ntrace: %v", step, c.p.rv, d, trace)
				}
			}
			got := restart(t, fifo, srv, c.p)
			if d := cmp.Diff(srv.values(), got); d != "" {
				t.Fatalf("step %d: a consumer restarted from what was persisted after this pop does not converge (-server +restarted):\n%s\ntrace: %v", step, d, trace)
			}
		}
	}
}
