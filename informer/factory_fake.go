package informer

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
)

// fakeClient is what client-go's fake clientsets (k8s.io/client-go/kubernetes/fake)
// have for their typed clients to call: their reactors and object tracker.
// A Factory on a fake clientset, which has no REST client, lists and
// watches through it, sending the actions the fake's typed clients send.
type fakeClient interface {
	Invokes(action k8stesting.Action, defaultReturnObj runtime.Object) (runtime.Object, error)
	InvokesWatch(action k8stesting.Action) (watch.Interface, error)
}

// fakeClientLW lists and watches one resource through a fake clientset, as
// its typed client's List and Watch do.
type fakeClientLW struct {
	client    fakeClient
	gvr       schema.GroupVersionResource
	gvk       schema.GroupVersionKind
	namespace string
	tweak     func(*metav1.ListOptions)
}

var _ cache.ListerWatcherWithContext = (*fakeClientLW)(nil)

func (l *fakeClientLW) ListWithContext(_ context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	l.tweak(&opts)
	empty, err := scheme.Scheme.New(l.gvk.GroupVersion().WithKind(l.gvk.Kind + "List"))
	if err != nil {
		return nil, fmt.Errorf("list of %s: %w", l.gvk, err)
	}
	obj, err := l.client.Invokes(k8stesting.NewListActionWithOptions(l.gvr, l.gvk, l.namespace, opts), empty)
	if obj == nil || err != nil {
		return empty, err
	}
	// The fake's tracker ignores label selectors; its typed clients
	// filter what it returns.
	sel, _, _ := k8stesting.ExtractFromListOptions(opts)
	if sel == nil || sel.Empty() {
		return obj, nil
	}
	items, err := meta.ExtractList(obj)
	if err != nil {
		return nil, fmt.Errorf("list of %s: %w", l.gvk, err)
	}
	kept := items[:0]
	for _, item := range items {
		if m, err := meta.Accessor(item); err == nil && sel.Matches(labels.Set(m.GetLabels())) {
			kept = append(kept, item)
		}
	}
	if err := meta.SetList(obj, kept); err != nil {
		return nil, fmt.Errorf("list of %s: %w", l.gvk, err)
	}
	return obj, nil
}

func (l *fakeClientLW) WatchWithContext(_ context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	l.tweak(&opts)
	opts.Watch = true
	return l.client.InvokesWatch(k8stesting.NewWatchActionWithOptions(l.gvr, l.namespace, opts))
}
