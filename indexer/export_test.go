package indexer

import "github.com/informerdb/informerdb/store"

// PrepareOne is Prepare for a single operation, without the slice.
func (p *Preparer) PrepareOne(op string, o store.Op) (Prepared, error) {
	var r Prepared
	err := p.prepareOne(op, 0, 1, &o, &r)
	return r, err
}
