//go:build !race

package indexer

// poisonReleased does nothing outside race-detector builds (see
// poison_race.go).
func poisonReleased([]byte) {}
