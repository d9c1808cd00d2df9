package badger

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/internal/writeback"
)

// startWriteback starts the writeback of badger's logs while a durable write
// runs (package writeback), and returns the function, idempotent, that
// stops it. With SyncWrites badger copies transactions into its newest
// memory-mapped value-log file and memtable log and waits in msync; the
// files are found by their names (logFiles); one not found is only not
// written back early.
func (sh *sharedDB) startWriteback() (stop func()) {
	if !writeback.Supported || sh.cfg.durability != store.DurabilitySync {
		return func() {}
	}
	l := &logFiles{dir: sh.dir}
	stopKicks := writeback.Every(l.kick)
	var once sync.Once
	return func() {
		once.Do(func() {
			stopKicks()
			l.close()
		})
	}
}

// rescanEvery is every how many kicks logFiles looks for newer logs (badger
// rotates them every 64 or 16 MiB).
const rescanEvery = 16

// logFiles holds the newest value-log file and memtable log of a directory
// open, for the goroutine of writeback.Every.
type logFiles struct {
	dir   string
	kicks int
	logs  [2]logFile // the newest .vlog and .mem
}

// logFile is one of logFiles' files; the zero value is none.
type logFile struct {
	fid  uint64
	f    *os.File
	conn syscall.RawConn
}

// logExts are the extensions of logFiles.logs.
var logExts = [2]string{".vlog", ".mem"}

func (l *logFiles) kick() {
	if l.kicks%rescanEvery == 0 {
		l.rescan()
	}
	l.kicks++
	for _, lf := range l.logs {
		if lf.conn != nil {
			writeback.Start(lf.conn)
		}
	}
}

// rescan opens the log of each kind with the highest number, the one badger
// writes, unless it is open.
func (l *logFiles) rescan() {
	entries, err := os.ReadDir(l.dir)
	if err != nil {
		return
	}
	var newest [2]struct {
		fid  uint64
		name string // "": none
	}
	for _, e := range entries {
		for i, ext := range logExts {
			num, ok := strings.CutSuffix(e.Name(), ext)
			if !ok {
				continue
			}
			fid, err := strconv.ParseUint(num, 10, 64)
			if err == nil && (newest[i].name == "" || fid > newest[i].fid) {
				newest[i].fid, newest[i].name = fid, e.Name()
			}
		}
	}
	for i := range l.logs {
		lf, n := &l.logs[i], newest[i]
		if n.name == "" || lf.f != nil && lf.fid == n.fid {
			continue
		}
		lf.close()
		f, err := os.Open(filepath.Join(l.dir, n.name))
		if err != nil {
			continue // deleted meanwhile
		}
		*lf = logFile{fid: n.fid, f: f, conn: writeback.Conn(f)}
	}
}

func (l *logFiles) close() {
	for i := range l.logs {
		l.logs[i].close()
	}
}

func (lf *logFile) close() {
	if lf.f != nil {
		_ = lf.f.Close()
	}
	*lf = logFile{}
}
