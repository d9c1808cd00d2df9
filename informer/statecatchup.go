package informer

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
)

// StateLister lists the state of what an informer lists: the metadata of
// every object, as one consistent snapshot at a resourceVersion the server
// reached after the call began (Options.StateCatchUp).
// MetadataStateLister is the one a cluster gives.
type StateLister interface {
	ListState(ctx context.Context) (items []metav1.Object, resourceVersion string, err error)
}

// MetadataStateLister returns a StateLister that lists through client the
// metadata of the objects of gvr in namespace ("" for all) that match the
// selectors tweak (which may be nil) sets, the informer's own, with one
// streaming list: a watch with sendInitialEvents=true and
// resourceVersionMatch=NotOlderThan from the server's current revision,
// ended by the initial-events-end bookmark. A server that does not serve
// streaming lists fails it, or times it out (60 seconds); the informer
// catches up by the bookmark meanwhile.
func MetadataStateLister(client metadata.Interface, gvr schema.GroupVersionResource, namespace string, tweak func(*metav1.ListOptions)) StateLister {
	return &metadataState{client: client, gvr: gvr, namespace: namespace, tweak: tweak}
}

type metadataState struct {
	client    metadata.Interface
	gvr       schema.GroupVersionResource
	namespace string
	tweak     func(*metav1.ListOptions)
}

// stateListTimeout is the timeoutSeconds of the streaming list: the watch
// is stopped at the initial-events-end bookmark, long before.
const stateListTimeout int64 = 60

func (m *metadataState) ListState(ctx context.Context) ([]metav1.Object, string, error) {
	opts := metav1.ListOptions{
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
		SendInitialEvents:    ptr.To(true),
		AllowWatchBookmarks:  true,
		TimeoutSeconds:       ptr.To(stateListTimeout),
	}
	if m.tweak != nil {
		m.tweak(&opts)
	}
	w, err := m.client.Resource(m.gvr).Namespace(m.namespace).Watch(ctx, opts)
	if err != nil {
		return nil, "", fmt.Errorf("informer: list state of %s: %w", m.gvr.String(), err)
	}
	defer w.Stop()
	// Keyed, so that a change sent before the end bookmark replaces the
	// object.
	items := map[string]metav1.Object{}
	for {
		select {
		case <-ctx.Done():
			return nil, "", fmt.Errorf("informer: list state of %s: %w", m.gvr.String(), ctx.Err())
		case ev, ok := <-w.ResultChan():
			if !ok {
				return nil, "", fmt.Errorf("informer: list state of %s: the streaming list ended before its initial-events-end bookmark", m.gvr.String())
			}
			if ev.Type == watch.Error {
				err := errors.New("error event")
				if st, ok := ev.Object.(*metav1.Status); ok && st != nil {
					err = fmt.Errorf("%s (%s, code %d)", st.Message, st.Reason, st.Code)
				}
				return nil, "", fmt.Errorf("informer: list state of %s: %w", m.gvr.String(), err)
			}
			obj, err := meta.Accessor(ev.Object)
			if err != nil {
				return nil, "", fmt.Errorf("informer: list state of %s: %s event: %w", m.gvr.String(), ev.Type, err)
			}
			key := obj.GetNamespace() + "/" + obj.GetName()
			switch ev.Type {
			case watch.Added, watch.Modified:
				items[key] = obj
			case watch.Deleted:
				delete(items, key)
			case watch.Bookmark:
				if obj.GetAnnotations()[metav1.InitialEventsAnnotationKey] != "true" {
					continue
				}
				if obj.GetResourceVersion() == "" {
					return nil, "", fmt.Errorf("informer: list state of %s: initial-events-end bookmark without a resourceVersion", m.gvr.String())
				}
				out := make([]metav1.Object, 0, len(items))
				for _, o := range items {
					out = append(out, o)
				}
				return out, obj.GetResourceVersion(), nil
			}
		}
	}
}

// stateWait is what a resumed informer with Options.StateCatchUp still
// waits for: the keys whose committed state differs from the server's at
// rv, at or past the sync target. When none is left, the informer has
// synced. Guarded by applyMu.
type stateWait struct {
	rv string
	// want is the server's resourceVersion of each key at rv.
	want map[string]string
	// outstanding holds the keys whose committed state is not yet the
	// server's at rv, nor newer.
	outstanding map[string]struct{}
}

// catchUpByState lists the state of the server through
// Options.StateCatchUp once the reflector knows its sync target, and makes
// the informer wait for exactly the keys whose committed state differs.
// It leaves the catch-up to the bookmark when the list fails or is older
// than the target.
func (inf *Informer) catchUpByState(ctx context.Context, logger klog.Logger) {
	src := inf.src
	select {
	case <-ctx.Done():
		return
	case <-src.CaughtUp():
		return
	case <-src.TargetKnown():
	}
	if src.CaughtUpByRelist() {
		// The stored objects may come from another history, whose
		// resourceVersions would compare as newer: the relist syncs.
		return
	}
	inf.stats.stateLists.Add(1)
	items, rv, err := inf.opts.StateCatchUp.ListState(ctx)
	if err != nil {
		if ctx.Err() == nil {
			logger.Error(err, "Listing the server's state failed; catching up by the watch's bookmark instead")
		}
		return
	}
	target, ok, err := src.ReachesTarget(rv)
	if !ok {
		logger.Info("The server's state is not at or past the sync target; catching up by the watch's bookmark instead", "resourceVersion", rv, "syncTarget", target, "err", err)
		return
	}
	want := make(map[string]string, len(items))
	for _, o := range items {
		key, err := inf.opts.KeyFunc(o)
		if err != nil {
			logger.Error(err, "The key function refused an object's metadata; catching up by the watch's bookmark instead", "object", o.GetNamespace()+"/"+o.GetName())
			return
		}
		want[key] = o.GetResourceVersion()
	}

	inf.applyMu.Lock()
	defer inf.applyMu.Unlock()
	if inf.synced {
		return
	}
	w := &stateWait{rv: rv, want: want, outstanding: map[string]struct{}{}}
	for key := range want {
		if !inf.stateMatchesLocked(w, key) {
			w.outstanding[key] = struct{}{}
		}
	}
	for _, key := range inf.store.ListKeys() {
		if _, listed := want[key]; !listed && !inf.stateMatchesLocked(w, key) {
			w.outstanding[key] = struct{}{}
		}
	}
	logger.V(2).Info("Listed the server's state; waiting for the changes it shows", "resourceVersion", rv, "syncTarget", target, "objects", len(want), "outstanding", len(w.outstanding))
	inf.state = w
	inf.checkStateLocked(logger, nil)
}

// stateMatchesLocked reports whether key's committed state is w's, or
// newer: the object at the resourceVersion w lists, or at a newer one; for
// a key w does not list, no object, or one newer than w. The caller holds
// applyMu.
func (inf *Informer) stateMatchesLocked(w *stateWait, key string) bool {
	obj, exists, err := inf.store.GetByKey(key)
	if err != nil {
		return false
	}
	want, listed := w.want[key]
	if !exists {
		return !listed
	}
	have := resourceVersionOf(obj)
	if listed && have == want {
		return true
	}
	than := want
	if !listed {
		than = w.rv
	}
	c, err := resourceversion.CompareResourceVersion(have, than)
	return err == nil && c > 0
}

// checkStateLocked brings the outstanding keys up to date after a commit
// of keys (nil: none), and syncs the informer once none is left. Every key
// a commit touches is checked: an object created and deleted again before
// the listed resourceVersion is outstanding between the two commits. The
// caller holds applyMu.
func (inf *Informer) checkStateLocked(logger klog.Logger, keys []string) {
	w := inf.state
	if w == nil || inf.synced {
		return
	}
	for _, key := range keys {
		if inf.stateMatchesLocked(w, key) {
			delete(w.outstanding, key)
		} else {
			w.outstanding[key] = struct{}{}
		}
	}
	if len(w.outstanding) == 0 {
		inf.syncedByState.Store(true)
		inf.markSyncedLocked(logger, "the store holds the server's state at "+w.rv)
		inf.state = nil
	}
}
