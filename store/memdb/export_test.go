package memdb

import "github.com/informerdb/informerdb/store"

// SnapshotForTest returns the keys, objects, resume point and recorded
// object count of s as one read transaction sees them, so tests can check
// that they agree.
func SnapshotForTest(s store.Store) (keys []string, objs []interface{}, rv string, count int, ok bool) {
	ms, isMem := s.(*memStore)
	if !isMem {
		return nil, nil, "", 0, false
	}
	txn, open := ms.readTxn()
	if !open {
		return nil, nil, "", 0, false
	}
	for r := range objects(txn) {
		keys = append(keys, r.key)
		objs = append(objs, r.obj)
	}
	m := metaOf(txn)
	return keys, objs, m.rv, m.count, true
}
