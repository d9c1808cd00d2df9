package apiserver

import (
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RenewLease makes the server a live cluster's: it creates a ConfigMap
// "lease" in namespace ns (which must exist) and updates it every second,
// as node and leader-election leases are renewed, until the returned
// function is called or the test ends. A restart then rarely finds the
// newest revision among the objects its informers watch, and a resumed
// informer learns that it has caught up only from a bookmark (DESIGN,
// Testing). A failed renewal fails the test.
func (s *Server) RenewLease(t testing.TB, ns string) (stop func()) {
	t.Helper()
	c := s.Client()
	cm, err := c.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "lease"}, Data: map[string]string{"renew": "0"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("apiserver: create the lease ConfigMap: %v", err)
	}
	quit := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for n := 1; ; n++ {
			select {
			case <-quit:
				return
			case <-tick.C:
			}
			cm.Data["renew"] = fmt.Sprint(n)
			updated, err := c.CoreV1().ConfigMaps(ns).Update(t.Context(), cm, metav1.UpdateOptions{})
			if err != nil {
				t.Errorf("apiserver: renewing the lease: %v", err)
				return
			}
			cm = updated
		}
	}()
	var once sync.Once
	stop = func() { once.Do(func() { close(quit); <-done }) }
	t.Cleanup(stop)
	return stop
}
