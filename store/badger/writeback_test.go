package badger

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/internal/writeback"
)

// TestLogFilesNewest checks that logFiles finds the value-log file and the
// memtable log with the highest number, whatever the width of the number,
// ignores other files, and follows badger to newer ones.
func TestLogFilesNewest(t *testing.T) {
	dir := t.TempDir()
	touch := func(name string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"000001.vlog", "000002.vlog", "00001.mem", "00003.mem", "000009.sst", "MANIFEST", "x.vlog", "000004.vlog.tmp"} {
		touch(name)
	}
	l := &logFiles{dir: dir}
	defer l.close()
	want := func(vlog, mem string) {
		t.Helper()
		for i, name := range []string{vlog, mem} {
			got := ""
			if f := l.logs[i].f; f != nil {
				got = filepath.Base(f.Name())
			}
			if got != name {
				t.Errorf("open %s file: %q; want %q", logExts[i], got, name)
			}
		}
	}
	l.rescan()
	want("000002.vlog", "00003.mem")
	touch("1000000.vlog") // sorts first by name, but is the newest
	l.rescan()
	want("1000000.vlog", "00003.mem")
	l.close()
	want("", "")
}

// TestWritebackFindsBadgersLogs checks logFiles against the files badger
// really writes: after a durable commit, it finds a value-log file and a
// memtable log to write back. Badger naming them otherwise fails it.
func TestWritebackFindsBadgersLogs(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(t.Context(), dir, podOptions(t, "pods", 0))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	kicks, clearHook := writeback.WatchKicks()
	defer clearHook()
	if err := s.Commit(t.Context(), store.Batch{Ops: []store.Op{{Type: store.OpPut, Object: newPod(1, "2", "web")}}, ResourceVersion: "2"}); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	l := &logFiles{dir: dir}
	defer l.close()
	l.rescan()
	for i, lf := range l.logs {
		if lf.f == nil || (writeback.Supported && lf.conn == nil) {
			t.Errorf("no %s file found in %s (writeback handle: %v)", logExts[i], dir, lf.conn != nil)
		}
	}
	if !writeback.Supported {
		return
	}
	// A durable write kicks while it runs; stop ends it.
	sh, _, _ := registry.Lookup(dir)
	select {
	case <-kicks: // from the Commit's own writeback, over by now
	default:
	}
	stop := sh.startWriteback()
	select {
	case <-kicks:
	case <-time.After(10 * time.Second):
		t.Error("startWriteback: no kick within 10s")
	}
	stop()
	stop()
}
