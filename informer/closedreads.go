package informer

import (
	"sync"
	"sync/atomic"

	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/informerdb/informerdb/store"
)

// closedReads is an informer's store as GetStore and GetIndexer hand it to
// listers: the store itself, which logs the first read that finds it
// closed by the factory that made the informer (see Factory.Shutdown).
//
// closedReads is safe for concurrent use.
type closedReads struct {
	cache.Indexer // the informer's store

	closed atomic.Bool // set before the factory closes the store
	once   sync.Once   // the log line
	logger klog.Logger
	name   string // the informer's
}

// read logs, once, that op read the store after the factory closed it, if
// its answer (empty, or an error) says it may have.
func (r *closedReads) read(op string, may bool) {
	if !may || !r.closed.Load() {
		return
	}
	r.once.Do(func() {
		r.logger.Error(store.ErrClosed, "Informer's store read after its factory shut down: reads find no objects (List) or fail; stop the informer's readers (workers, listers) before the factory's Shutdown",
			"informer", r.name, "read", op)
	})
}

func (r *closedReads) List() []interface{} {
	objs := r.Indexer.List()
	r.read("List", len(objs) == 0)
	return objs
}

func (r *closedReads) ListKeys() []string {
	keys := r.Indexer.ListKeys()
	r.read("ListKeys", len(keys) == 0)
	return keys
}

func (r *closedReads) ListIndexFuncValues(name string) []string {
	values := r.Indexer.ListIndexFuncValues(name)
	r.read("ListIndexFuncValues", len(values) == 0)
	return values
}

func (r *closedReads) Get(obj interface{}) (interface{}, bool, error) {
	item, exists, err := r.Indexer.Get(obj)
	r.read("Get", err != nil)
	return item, exists, err
}

func (r *closedReads) GetByKey(key string) (interface{}, bool, error) {
	item, exists, err := r.Indexer.GetByKey(key)
	r.read("GetByKey", err != nil)
	return item, exists, err
}

func (r *closedReads) Index(name string, obj interface{}) ([]interface{}, error) {
	objs, err := r.Indexer.Index(name, obj)
	r.read("Index", err != nil)
	return objs, err
}

func (r *closedReads) IndexKeys(name, value string) ([]string, error) {
	keys, err := r.Indexer.IndexKeys(name, value)
	r.read("IndexKeys", err != nil)
	return keys, err
}

func (r *closedReads) ByIndex(name, value string) ([]interface{}, error) {
	objs, err := r.Indexer.ByIndex(name, value)
	r.read("ByIndex", err != nil)
	return objs, err
}
