// Package diskusage tells the bytes a file takes on disk, which is what the
// stores' store.DiskSizer reports.
package diskusage

import "io/fs"

// Of returns the bytes fi's file takes on disk: its allocated blocks where
// the platform tells them, else its size. bbolt and badger grow their files
// ahead of use (truncate, then mmap), so a file's size can be far above what
// it occupies: a new badger value log is sized for twice its maximum.
func Of(fi fs.FileInfo) int64 {
	if n, ok := allocated(fi); ok {
		return n
	}
	return fi.Size()
}
