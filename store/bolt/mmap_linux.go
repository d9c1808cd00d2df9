//go:build linux

package bolt

import "syscall"

// populate is switched off only by the benchmark that measures what it
// buys.
var populate = true

// mmapFlags returns the flags bbolt maps the file with. bbolt advises the
// kernel of random access, which turns off read-ahead: a store that reads
// every object at open then faults in one page at a time (measured in
// DESIGN.md: 7.5 s to load 100,000 Pods cold, 1.43 s with MAP_POPULATE).
// Bounded stores read only what they are asked for, and their files may
// exceed memory, so they do not populate.
func mmapFlags(readAll bool) int {
	if readAll && populate {
		return syscall.MAP_POPULATE
	}
	return 0
}
