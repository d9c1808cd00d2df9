//go:build linux

package bolt

import "syscall"

// populate is switched off only by the benchmark that measures what it
// buys.
var populate = true

// mmapFlags returns the flags bbolt maps the file with. bbolt advises the
// kernel of random access, which turns off read-ahead: a store that reads
// every object at open would fault in one page at a time (BENCHMARKS.md,
// section 6). Bounded stores, whose files may exceed memory, do not
// populate.
func mmapFlags(readAll bool) int {
	if readAll && populate {
		return syscall.MAP_POPULATE
	}
	return 0
}
