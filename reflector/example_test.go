package reflector_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	fcache "k8s.io/client-go/tools/cache/testing"

	"github.com/informerdb/informerdb/reflector"
)

// printQueue prints what the reflector hands it.
type printQueue struct{}

func (printQueue) Add(obj interface{}) error    { return printEvent("add", obj) }
func (printQueue) Update(obj interface{}) error { return printEvent("update", obj) }
func (printQueue) Delete(obj interface{}) error { return printEvent("delete", obj) }
func (printQueue) Replace(list []interface{}, rv string) error {
	fmt.Printf("replace %d objects at %s\n", len(list), rv)
	return nil
}
func (printQueue) Bookmark(rv string) error { fmt.Printf("bookmark %s\n", rv); return nil }

func printEvent(op string, obj interface{}) error {
	cm := obj.(*corev1.ConfigMap)
	fmt.Printf("%s %s/%s at %s\n", op, cm.Namespace, cm.Name, cm.ResourceVersion)
	return nil
}

// A reflector restarted with the resourceVersion its store persisted
// watches from there: it sees only what changed since, and lists nothing but
// the one-object freshness probe.
func Example_resume() {
	source := fcache.NewFakeControllerSource()
	defer source.Shutdown()
	for _, name := range []string{"a", "b", "c"} {
		source.Add(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}})
	}
	// The store was written after "a" (resourceVersion 1); "b" and "c"
	// were created while the process was down.
	off := false
	r, err := reflector.New(cache.ToListerWatcherWithContext(source), printQueue{}, &reflector.Options{
		Name:       "configmaps",
		ResumeFrom: "1",
		WatchList:  &off,
	})

	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- r.Run(ctx) }()

	<-r.CaughtUp()
	target, _ := r.SyncTarget()
	fmt.Println("caught up with", target)
	cancel()
	if err := <-done; err != nil {
		fmt.Println(err)
	}
	s := r.Stats()
	relists := s.Relists.Cold + s.Relists.Expired + s.Relists.TooLarge + s.Relists.TimeTravel + s.Relists.CatchUp + s.Relists.ScopeChange + s.Relists.Corrupt
	fmt.Printf("lists %d, resumes %d, relists %d\n", s.Lists, s.Resumes, relists)
	// Output:
	// add default/b at 2
	// add default/c at 3
	// caught up with 3
	// lists 1, resumes 1, relists 0
}
