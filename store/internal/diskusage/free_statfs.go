//go:build linux || darwin

package diskusage

import "syscall"

// Free returns the bytes an unprivileged process can still write on the
// file system holding path (statfs: available blocks times block size).
// ok is false where the platform does not tell.
func Free(path string) (free int64, ok bool, err error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return 0, false, err
	}
	return int64(st.Bavail) * int64(st.Bsize), true, nil //nolint:unconvert // the fields' types differ between platforms
}
