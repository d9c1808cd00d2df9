//go:build !linux

package bolt

// mmapFlags returns no flags: MAP_POPULATE is Linux only.
func mmapFlags(bool) int { return 0 }
