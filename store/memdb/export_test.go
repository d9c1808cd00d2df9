package memdb

import "github.com/informerdb/informerdb/store"

// SnapshotForTest returns the keys, objects and resume point of s as one read
// transaction sees them, so tests can check that they agree.
func SnapshotForTest(s store.Store) (keys []string, objs []interface{}, rv string, ok bool) {
	ms, isMem := s.(*memStore)
	if !isMem {
		return nil, nil, "", false
	}
	txn, open := ms.readTxn()
	if !open {
		return nil, nil, "", false
	}
	forEachObject(txn, func(r *objectRow) {
		keys = append(keys, r.key)
		objs = append(objs, r.obj)
	})
	return keys, objs, metaOf(txn).rv, true
}
