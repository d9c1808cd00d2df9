//go:build race

package indexer

// poisonReleased overwrites an encoding buffer given back for reuse, in
// race-detector builds (what `make test` runs): a persister that kept a
// reference to it, against BaseConfig.CopiesData's promise, then stores bytes
// that no longer decode, and the tests that read back what they wrote fail.
func poisonReleased(buf []byte) {
	for i := range buf {
		buf[i] = 0xa5
	}
}
