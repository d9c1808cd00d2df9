package bench_test

import (
	"io"
	"testing"

	"go.uber.org/goleak"
	"k8s.io/klog/v2"
)

func TestMain(m *testing.M) {
	// The informers' logs would bury benchmark results and test failures.
	klog.SetOutput(io.Discard)
	klog.LogToStderr(false)
	goleak.VerifyTestMain(m,
		// klog's flush daemon is started by the package and never stopped.
		goleak.IgnoreTopFunction("k8s.io/klog/v2.(*flushDaemon).run.func1"),
		// The clientsets keep idle HTTP/2 connections to API servers of
		// finished tests; they die with the process.
		goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreAnyFunction("golang.org/x/net/http2.(*ClientConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http.(*http2ClientConn).readLoop"),
	)
}
