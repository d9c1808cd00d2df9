// Package binsize compares the size of one controller built on informerdb's
// Factory and on client-go's SharedInformerFactory (BENCHMARKS.md, "Binary
// size"): cmd/factory-controller and cmd/factory-controller-clientgo run
// the same controller (package controller) with three informers and
// listers, and differ only in the factory.
package binsize
