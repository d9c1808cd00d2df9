package reflector

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/watchlist"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/informerdb/informerdb/internal/typednil"
)

// relist makes a full consistent list and hands it to the queue as one
// Replace.
func (r *Reflector) relist(ctx context.Context, st *runState) error {
	logger := klog.FromContext(ctx)
	reason := st.relist
	if !st.relistLogged {
		logger.Info("Listing", append([]interface{}{"reason", reason}, st.relistKV...)...)
		st.relistLogged = true
	}
	st.dropPending()

	var (
		items []interface{}
		rv    string
		w     watch.Interface
		err   error
	)
	if r.useWatchList(st) {
		w, items, rv, err = r.watchList(ctx)
		if err != nil {
			if ctx.Err() != nil || r.opts.WatchList != nil {
				// Stopping, or forced: back off and stream again.
				return err
			}
			// Auto mode: whatever failed (a ListerWatcher that does not
			// speak the streaming list fails in its own way), list with a
			// paginated LIST at once, as client-go does.
			w, items, rv = nil, nil, ""
			if watchListUnsupported(err) {
				st.noWatchList = true
				logger.V(2).Info("Streaming list not supported; falling back to paginated LIST for this run", "err", err)
			} else {
				logger.V(2).Info("Streaming list failed; listing with a paginated LIST instead", "err", err)
			}
		}
	}
	if w == nil {
		items, rv, err = r.list(ctx)
		if err != nil {
			return err
		}
	}
	// Counted before it is queued: the informer may apply the relist, and
	// report synced, before Replace returns.
	if !st.relistCounted {
		st.relistCounted = true
		r.count(func(s *Stats) { s.Relists.add(reason) })
	}
	if err := r.q.Replace(items, rv); err != nil {
		if w != nil {
			w.Stop()
		}
		return fmt.Errorf("reflector %s: replace %d objects at %s: %w", r.opts.Name, len(items), rv, err)
	}
	st.relist, st.relistKV, st.relistLogged, st.relistCounted = "", nil, false, false
	st.gone, st.goneNoted, st.checkServed = false, false, false
	st.mayHoldObjects = len(items) > 0
	st.catchUpDeadline = time.Time{}
	st.lastRV = rv
	st.pending = w
	st.catchUpMisses = 0
	st.lastRelist = r.opts.Clock.Now()
	st.slept, st.afterBackoff = false, false
	r.relisted(ctx, rv)
	logger.V(2).Info("Listed", "reason", reason, "objects", len(items), "resourceVersion", rv)
	return nil
}

func (r *Reflector) useWatchList(st *runState) bool {
	if r.opts.WatchList != nil {
		return *r.opts.WatchList
	}
	return !st.noWatchList && !watchlist.DoesClientNotSupportWatchListSemantics(r.lw)
}

// list makes a consistent paginated LIST.
func (r *Reflector) list(ctx context.Context) ([]interface{}, string, error) {
	opts := metav1.ListOptions{ResourceVersion: "", Limit: r.opts.PageSize}
	var (
		items []interface{}
		rv    string
	)
	for {
		obj, lm, err := r.listOnce(ctx, "list", opts)
		if err != nil {
			if opts.Continue != "" && isExpired(err) {
				// The continue token outlived etcd's compaction: the pages
				// so far and the rest no longer form one snapshot. Start
				// over with one unpaginated list, as client-go's pager does.
				klog.FromContext(ctx).V(2).Info("List continuation expired; listing without pages", "err", err)
				opts = metav1.ListOptions{ResourceVersion: ""}
				items, rv = nil, ""
				continue
			}
			return nil, "", err
		}
		if rv == "" {
			rv = lm.GetResourceVersion()
		}
		objs, err := meta.ExtractListWithAlloc(obj)
		if err != nil {
			return nil, "", fmt.Errorf("reflector %s: list: extracting items: %w", r.opts.Name, err)
		}
		for _, o := range objs {
			items = append(items, o)
		}
		if lm.GetContinue() == "" {
			break
		}
		opts.Continue = lm.GetContinue()
	}
	if rv == "" {
		return nil, "", fmt.Errorf("reflector %s: list: server returned no resourceVersion", r.opts.Name)
	}
	if items == nil {
		items = []interface{}{}
	}
	return items, rv, nil
}

// listOnce makes one LIST, counted in Stats.Lists, and returns it with its
// list metadata; errors name what (the probe, a list).
func (r *Reflector) listOnce(ctx context.Context, what string, opts metav1.ListOptions) (runtime.Object, metav1.ListInterface, error) {
	r.count(func(s *Stats) { s.Lists++ })
	obj, err := r.lw.ListWithContext(ctx, opts)
	if err == nil && typednil.Is(obj) {
		err = errNoList
	}
	if err != nil {
		return nil, nil, fmt.Errorf("reflector %s: %s: %w", r.opts.Name, what, err)
	}
	lm, err := meta.ListAccessor(obj)
	if err != nil {
		return nil, nil, fmt.Errorf("reflector %s: %s: reading list metadata: %w", r.opts.Name, what, err)
	}
	return obj, lm, nil
}

// watchList makes a streaming list: a watch whose initial events are the
// current state, ended by the initial-events-end bookmark. It returns the
// watch, left open for the events that follow.
func (r *Reflector) watchList(ctx context.Context) (watch.Interface, []interface{}, string, error) {
	timeout := r.watchTimeoutSeconds(false)
	r.count(func(s *Stats) { s.WatchLists++ })
	w, err := r.startWatch(ctx, metav1.ListOptions{
		ResourceVersion:      "",
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
		SendInitialEvents:    ptr.To(true),
		AllowWatchBookmarks:  true,
		TimeoutSeconds:       &timeout,
	})
	if err != nil {
		return nil, nil, "", fmt.Errorf("reflector %s: streaming list: %w", r.opts.Name, err)
	}
	// Keyed, so that an update or delete before the end bookmark is folded
	// in rather than duplicated.
	tmp := cache.NewStore(cache.DeletionHandlingMetaNamespaceKeyFunc)
	for {
		select {
		case <-ctx.Done():
			w.Stop()
			return nil, nil, "", ctx.Err()
		case ev, ok := <-w.ResultChan():
			if !ok {
				return nil, nil, "", fmt.Errorf("reflector %s: streaming list: %w", r.opts.Name, errStreamEndedEarly)
			}
			if ev.Type == watch.Error {
				w.Stop()
				return nil, nil, "", fmt.Errorf("reflector %s: streaming list: %w", r.opts.Name, errorEventErr(ev.Object))
			}
			if err := r.checkObject(ev.Object); err != nil {
				r.drop(ctx, ev.Type, err)
				continue
			}
			var serr error
			switch ev.Type {
			case watch.Added, watch.Modified:
				serr = tmp.Update(ev.Object)
			case watch.Deleted:
				serr = tmp.Delete(ev.Object)
			case watch.Bookmark:
				m, _ := meta.Accessor(ev.Object) // checkObject made sure it works
				if m.GetAnnotations()[metav1.InitialEventsAnnotationKey] != "true" {
					continue
				}
				if m.GetResourceVersion() == "" {
					w.Stop()
					return nil, nil, "", fmt.Errorf("reflector %s: streaming list: initial-events-end bookmark has no resourceVersion", r.opts.Name)
				}
				return w, tmp.List(), m.GetResourceVersion(), nil
			}
			if serr != nil {
				r.drop(ctx, ev.Type, fmt.Errorf("reflector %s: streaming list: %s event: %w", r.opts.Name, ev.Type, serr))
			}
		}
	}
}

// resourceGone empties the store with an empty Replace when err says the
// server does not serve the resource (404 on a LIST), so that handlers see
// every object deleted (DESIGN invariant 5); the reflector then lists from
// scratch once the resource is served again. The Replace is made even when
// the store is known to hold nothing, so that an informer syncs on the
// empty state, but only a store that may have held objects is logged as
// emptied and counted (ReasonGone), once per absence.
func (r *Reflector) resourceGone(ctx context.Context, st *runState, err error) {
	if st.gone || !apierrors.IsNotFound(err) {
		return
	}
	if !st.goneNoted {
		st.goneNoted = true
		logger := klog.FromContext(ctx)
		if st.mayHoldObjects {
			logger.Info("The server does not serve the resource; emptying the store", "err", err)
			// Counted before the queue has it, as relists are.
			r.count(func(s *Stats) { s.Relists.add(ReasonGone) })
		} else {
			logger.Info("The server does not serve the resource", "err", err)
		}
	}
	if qerr := r.q.Replace(nil, ""); qerr != nil {
		r.report(ctx, fmt.Errorf("reflector %s: empty the store of a resource the server does not serve: %w", r.opts.Name, qerr))
		return
	}
	st.gone, st.mayHoldObjects, st.checkServed = true, false, false
	st.startRelist(ReasonCold, "after", "resource not served")
}

// checkServed asks, with a LIST of one object rather than a full list,
// whether the resource a watch got 404 for is still served. If it is, the
// watch goes on from where it was (a resource created again has a new watch
// cache, whose 410 leads to a relist). A 404 is returned for resourceGone.
func (r *Reflector) checkServed(ctx context.Context, st *runState) error {
	if _, err := r.probeOnce(ctx); err != nil {
		return err
	}
	klog.FromContext(ctx).V(2).Info("Resource still served after a watch got 404; watching again", "resourceVersion", st.lastRV)
	st.checkServed, st.goneNoted = false, false
	return nil
}
