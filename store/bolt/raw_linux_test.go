package bolt_test

import (
	"errors"
	"io/fs"
	"os"
	"runtime"
	"syscall"
	"testing"
	"unsafe"

	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/bolt"
)

// Linux capabilities that let a process open a file its mode forbids.
const (
	capDACOverride   = 1
	capDACReadSearch = 2
	capFowner        = 3
)

// withoutFileCaps runs fn on an OS thread of its own without the
// capabilities that let root ignore file modes, and reports whether it
// could drop them. Capabilities are per thread on Linux, and a goroutine
// that ends locked to its thread takes the thread with it, so the rest of
// the process keeps them. Without this, a test run as root could open a
// 0400 file for writing and prove nothing.
func withoutFileCaps(fn func()) error {
	var dropErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		hdr := struct {
			version uint32
			pid     int32
		}{version: 0x20080522} // _LINUX_CAPABILITY_VERSION_3, this thread
		var data [2]struct{ effective, permitted, inheritable uint32 }
		if _, _, e := syscall.RawSyscall(syscall.SYS_CAPGET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); e != 0 {
			dropErr = e
			return
		}
		data[0].effective &^= 1<<capDACOverride | 1<<capDACReadSearch | 1<<capFowner
		if _, _, e := syscall.RawSyscall(syscall.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); e != 0 {
			dropErr = e
			return
		}
		fn()
	}()
	<-done
	return dropErr
}

// TestRawReadsOfReadOnlyFile checks that a database file of mode 0400 can
// be listed, exported and its index entries read: the read-only operations
// open it read-only.
func TestRawReadsOfReadOnlyFile(t *testing.T) {
	rawURL := dbURL(t, "")
	path := pathOf(t, rawURL)
	writePods(t, rawURL, 20)
	if err := os.Chmod(path, 0o400); err != nil {
		t.Fatal(err)
	}
	before := readBytes(t, path)
	ctx, u, importOp := t.Context(), mustParse(t, rawURL), rawWrites(t)[0]
	var (
		writable, storesErr, exportErr, entriesErr, importErr error
		infos                                                 []store.Info
		exported, entries                                     int
	)
	err := withoutFileCaps(func() {
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err == nil {
			f.Close()
		}
		writable = err
		infos, storesErr = bolt.Raw().Stores(ctx, u)
		_, exportErr = bolt.Raw().Export(ctx, u, "pods", func(store.Record) error { exported++; return nil })
		entriesErr = bolt.IndexEntries(ctx, u, "pods", func(string, string, string) error { entries++; return nil })
		importErr = importOp.run(ctx, rawURL)
	})
	if err != nil {
		t.Skipf("cannot drop the capabilities that bypass file modes: %v", err)
	}
	if !errors.Is(writable, fs.ErrPermission) {
		t.Skipf("the test's thread can still open a 0400 file for writing (%v)", writable)
	}
	if storesErr != nil || len(infos) != 1 || infos[0].Name != "pods" || infos[0].ResourceVersion != "7" {
		t.Errorf("Stores: %+v, %v; want store pods at 7", infos, storesErr)
	}
	if exportErr != nil || exported != 20 {
		t.Errorf("Export: %d records, %v; want 20", exported, exportErr)
	}
	// Two indexes, one value each, per Pod.
	if entriesErr != nil || entries != 40 {
		t.Errorf("IndexEntries: %d entries, %v; want 40", entries, entriesErr)
	}
	// Writing it is refused by the system, with the file named.
	wantErr(t, "Import into a 0400 file", importErr, fs.ErrPermission, path)
	wantSameBytes(t, "reading a 0400 file", path, before)
}
