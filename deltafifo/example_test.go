package deltafifo_test

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/deltafifo"
)

// pod is a plain Go struct, not a Kubernetes object: a DeltaFIFO only needs
// a key function for it.
type pod struct {
	Name  string
	Value int
}

func podKeyFunc(obj interface{}) (string, error) { return obj.(pod).Name, nil }

// A DeltaFIFO used standalone, as client-go's: deltas accumulate per key and
// one Pop hands out everything that happened to one key.
func ExampleDeltaFIFO() {
	df := deltafifo.NewDeltaFIFO(&deltafifo.Options{KeyFunction: podKeyFunc})
	pod1 := pod{Name: "pod1", Value: 1}
	_ = df.Add(pod1)
	_ = df.Add(pod{Name: "pod2", Value: 2})
	_ = df.Add(pod{Name: "pod3", Value: 3})
	pod1.Value = 11
	_ = df.Update(pod1)
	_ = df.Delete(pod1)
	fmt.Println(df.ListKeys())

	_ = df.Pop(context.Background(), func(_ context.Context, b deltafifo.Batch) error {
		for _, d := range b.Deltas {
			p := d.Object.(pod)
			switch d.Type {
			case cache.Added:
				fmt.Println("add", p.Name, p.Value)
			case cache.Updated:
				fmt.Println("update", p.Name, p.Value)
			case cache.Deleted:
				fmt.Println("delete", p.Name, p.Value)
			}
		}
		return nil
	})
	// Output:
	// [pod1 pod2 pod3]
	// add pod1 1
	// update pod1 11
	// delete pod1 11
}

// The in-order FIFO as an informer uses it: each batch comes with the
// resourceVersion to persist in the same commit as its deltas.
func ExampleFIFO() {
	q := deltafifo.New(nil)
	obj := func(name, rv string) *v1.ConfigMap {
		return &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv}}
	}
	_ = q.Replace([]interface{}{obj("a", "5"), obj("b", "6")}, "10")
	_ = q.Update(obj("a", "11"))
	_ = q.Bookmark("12")
	q.Close()

	for {
		err := q.Pop(context.Background(), func(_ context.Context, b deltafifo.Batch) error {
			fmt.Printf("replace=%v deltas=%d persist rv=%s\n", b.Replace, len(b.Deltas), b.ResourceVersion)
			return nil
		})
		if err != nil {
			fmt.Println(err)
			return
		}
	}
	// Output:
	// replace=true deltas=2 persist rv=10
	// replace=false deltas=2 persist rv=12
	// deltafifo: queue is closed
}

// What a persisting consumer of a DeltaFIFO records with each batch: the
// watermark (never past an event still queued) and whether a relist is only
// partly applied (then a restart must relist rather than resume).
func ExampleDeltaFIFO_resumePoint() {
	obj := func(name, rv string) *v1.ConfigMap {
		return &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv}}
	}
	q := deltafifo.NewDeltaFIFO(&deltafifo.Options{EmitDeltaTypeReplaced: true})
	_ = q.Add(obj("b", "11"))
	_ = q.Add(obj("a", "12"))
	_ = q.Update(obj("b", "13"))
	_ = q.Replace([]interface{}{obj("a", "14")}, "20") // b is gone
	_ = q.Add(obj("c", "21"))
	q.Close()

	for {
		err := q.Pop(context.Background(), func(_ context.Context, b deltafifo.Batch) error {
			var types []cache.DeltaType
			for _, d := range b.Deltas {
				types = append(types, d.Type)
			}
			fmt.Printf("%v persist rv=%q relist pending=%v\n", types, b.ResourceVersion, b.RelistPending)
			return nil
		})
		if err != nil {
			return
		}
	}
	// Output:
	// [Added Updated Deleted] persist rv="11" relist pending=true
	// [Added Replaced] persist rv="20" relist pending=false
	// [Added] persist rv="21" relist pending=false
}
