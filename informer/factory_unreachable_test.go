package informer

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"
)

var (
	errRefused  = errors.New("dial tcp 127.0.0.1:6443: connect: connection refused")
	errNotReady = apierrors.NewServiceUnavailable("the API server is starting")
)

// failFirst makes the fake client's matching requests fail with errs, one
// per request, before they are served as usual. It counts every request.
func failFirst(errs ...error) (k8stesting.ReactionFunc, *atomic.Int32) {
	var calls atomic.Int32
	return func(k8stesting.Action) (bool, runtime.Object, error) {
		n := int(calls.Add(1))
		if n <= len(errs) {
			return true, nil, errs[n-1]
		}
		return false, nil, nil
	}, &calls
}

// A factory started while the API server cannot be reached waits for it
// rather than guessing the cluster identity: a guess ("") would change
// every store's scope and make every informer relist.
func TestFactoryClusterIdentity(t *testing.T) {
	gr := schema.GroupResource{Resource: "namespaces"}
	for _, tc := range []struct {
		name      string
		errs      []error
		want      string
		wantCalls int32
	}{
		{"served", nil, "kube-system/ks-uid", 1},
		{"unreachable, then served", []error{errRefused, errNotReady}, "kube-system/ks-uid", 3},
		{"credentials not yet valid", []error{apierrors.NewUnauthorized("token expired")}, "kube-system/ks-uid", 2},
		{"throttled", []error{apierrors.NewTooManyRequests("slow down", 0)}, "kube-system/ks-uid", 2},
		{"forbidden", []error{apierrors.NewForbidden(gr, "kube-system", errors.New("RBAC"))}, "", 1},
		{"not found", []error{apierrors.NewNotFound(gr, "kube-system")}, "", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client, _ := fakeClientset()
			react, calls := failFirst(tc.errs...)
			client.PrependReactor("get", "namespaces", react)
			f, err := NewFactory(t.Context(), "memory://", client, nil)
			if err != nil {
				t.Fatalf("NewFactory: %v", err)
			}
			t.Cleanup(func() { _ = f.Shutdown() })
			if f.cluster != tc.want {
				t.Errorf("cluster identity = %q, want %q", f.cluster, tc.want)
			}
			if got := calls.Load(); got != tc.wantCalls {
				t.Errorf("kube-system read %d times, want %d", got, tc.wantCalls)
			}
		})
	}

	t.Run("set by the caller", func(t *testing.T) {
		client, _ := fakeClientset()
		react, calls := failFirst()
		client.PrependReactor("get", "namespaces", react)
		f, err := NewFactory(t.Context(), "memory://", client, &FactoryOptions{Cluster: "prod-1"})
		if err != nil {
			t.Fatalf("NewFactory: %v", err)
		}
		t.Cleanup(func() { _ = f.Shutdown() })
		if f.cluster != "prod-1" || calls.Load() != 0 {
			t.Errorf("cluster identity = %q after %d reads, want prod-1 after none", f.cluster, calls.Load())
		}
	})

	t.Run("unreachable until the context ends", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		client, _ := fakeClientset()
		var calls atomic.Int32
		client.PrependReactor("get", "namespaces", func(k8stesting.Action) (bool, runtime.Object, error) {
			if calls.Add(1) == 3 {
				cancel()
			}
			return true, nil, errRefused
		})
		f, err := NewFactory(ctx, "memory://", client, nil)
		if err == nil {
			_ = f.Shutdown()
			t.Fatalf("NewFactory succeeded without the API server")
		}
		if !errors.Is(err, context.Canceled) || !errors.Is(err, errRefused) {
			t.Errorf("error %q should wrap both the context's end and the last failure", err)
		}
		for _, part := range []string{"new factory", "cluster identity", "kube-system", "FactoryOptions.Cluster", "3 attempts"} {
			if !strings.Contains(err.Error(), part) {
				t.Errorf("error %q lacks %q", err, part)
			}
		}
	})
}

// Discovery, which a namespaced dynamic or metadata informer needs, waits
// for the API server too, without holding up the rest of the factory.
func TestFactoryDiscoveryUnreachable(t *testing.T) {
	withDiscovery := func(t *testing.T, react k8stesting.ReactionFunc) *Factory {
		t.Helper()
		client, _ := fakeClientset()
		client.Resources = []*metav1.APIResourceList{
			{GroupVersion: "example.com/v1", APIResources: []metav1.APIResource{{Name: "widgets", Namespaced: false, Kind: "Widget"}}},
		}
		client.PrependReactor("get", "resource", react)
		f, err := NewFactory(t.Context(), "memory://", client, &FactoryOptions{Cluster: "test", Namespace: "a", Dynamic: fakeDynamic(&listRecorder{})})
		if err != nil {
			t.Fatalf("NewFactory: %v", err)
		}
		t.Cleanup(func() { _ = f.Shutdown() })
		return f
	}

	t.Run("unreachable, then served", func(t *testing.T) {
		react, calls := failFirst(errNotReady, errRefused)
		f := withDiscovery(t, react)
		inf, err := f.DynamicInformerFor(t.Context(), widgetsGVR)
		if err != nil {
			t.Fatalf("DynamicInformerFor: %v", err)
		}
		if got := calls.Load(); got != 3 {
			t.Errorf("discovery asked %d times, want 3", got)
		}
		if scope := inf.Store().Info().Scope; !strings.Contains(scope, "namespace=;") {
			t.Errorf("scope %q: widgets are cluster-scoped, want namespace=", scope)
		}
	})

	t.Run("answered", func(t *testing.T) {
		react, calls := failFirst(apierrors.NewForbidden(schema.GroupResource{}, "", errors.New("RBAC")))
		f := withDiscovery(t, react)
		if _, err := f.DynamicInformerFor(t.Context(), widgetsGVR); err == nil || !strings.Contains(err.Error(), "discovery of example.com/v1") {
			t.Errorf("DynamicInformerFor = %v, want the discovery's error", err)
		}
		if got := calls.Load(); got != 1 {
			t.Errorf("discovery asked %d times, want 1 (a Forbidden is an answer)", got)
		}
	})

	t.Run("shutdown while waiting", func(t *testing.T) {
		asked := make(chan struct{})
		var once sync.Once
		f := withDiscovery(t, func(k8stesting.Action) (bool, runtime.Object, error) {
			once.Do(func() { close(asked) })
			return true, nil, errRefused
		})
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		informerFor := make(chan error, 1)
		go func() {
			_, err := f.DynamicInformerFor(ctx, widgetsGVR)
			informerFor <- err
		}()
		<-asked
		shutdown := make(chan error, 1)
		go func() { shutdown <- f.Shutdown() }()
		select {
		case err := <-shutdown:
			if err != nil {
				t.Errorf("Shutdown: %v", err)
			}
		case <-time.After(time.Minute):
			t.Fatal("Shutdown did not end a discovery waiting for the API server")
		}
		// Its context would not have ended the call.
		select {
		case err := <-informerFor:
			if !errors.Is(err, ErrStopped) {
				t.Errorf("DynamicInformerFor = %v, want ErrStopped", err)
			}
		case <-time.After(time.Minute):
			t.Errorf("DynamicInformerFor still waits for discovery after Shutdown")
		}
	})

	t.Run("factory shut down meanwhile", func(t *testing.T) {
		var f *Factory
		shutdown := make(chan error, 1)
		var once sync.Once
		f = withDiscovery(t, func(k8stesting.Action) (bool, runtime.Object, error) {
			once.Do(func() {
				// Shutdown waits for this call; it has begun once the
				// factory is closed.
				go func() { shutdown <- f.Shutdown() }()
				for {
					f.set.mu.Lock()
					closed := f.set.closed
					f.set.mu.Unlock()
					if closed {
						break
					}
					time.Sleep(time.Millisecond)
				}
			})
			return false, nil, nil // served
		})
		_, err := f.DynamicInformerFor(t.Context(), widgetsGVR)
		if !errors.Is(err, ErrStopped) {
			t.Errorf("DynamicInformerFor on a factory shut down during discovery = %v, want ErrStopped", err)
		}
		if err := <-shutdown; err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
}
