package bolt

import (
	"errors"
	"os"
	"syscall"
	"testing"
)

// bbolt formats some errors of growing the file with %s (v1.5.0: "file
// resize error: file too large"): the errno is recovered from the message,
// and the message left as it is.
func TestWithErrno(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want error
	}{
		// As bbolt formats them: the errno's text, not the errno.
		{errors.New("file resize error: " + syscall.EFBIG.Error()), syscall.EFBIG},
		{errors.New("file resize error: " + syscall.ENOSPC.Error()), syscall.ENOSPC},
		{errors.New("file sync error: " + syscall.EDQUOT.Error()), syscall.EDQUOT},
		{&os.PathError{Op: "write", Path: "f", Err: syscall.EFBIG}, syscall.EFBIG},
	} {
		got := withErrno(tc.err)
		if !errors.Is(got, tc.want) {
			t.Errorf("withErrno(%q) = %v; want it to wrap %v", tc.err, got, tc.want)
		}
		if !errors.Is(got, tc.err) || got.Error() != tc.err.Error() {
			t.Errorf("withErrno(%q) = %q; want the error itself, wrapped, with its message", tc.err, got)
		}
	}
	other := errors.New("file too large, said nobody")
	if got := withErrno(other); !errors.Is(got, other) || errors.Is(got, syscall.EFBIG) {
		t.Errorf("withErrno(%q) = %v; want it unchanged", other, got)
	}
}
