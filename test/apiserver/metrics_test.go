package apiserver

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The parser runs without a server, so it is checked here against the text
// format kube-apiserver emits, including series it must ignore.
func TestParseMetrics(t *testing.T) {
	const text = `# HELP apiserver_request_total [STABLE] Counter of apiserver requests
# TYPE apiserver_request_total counter
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="configmaps",scope="namespace",subresource="",verb="LIST",version="v1"} 3
apiserver_request_total{code="410",component="apiserver",dry_run="",group="",resource="configmaps",scope="cluster",subresource="",verb="LIST",version="v1"} 2
apiserver_request_total{code="200",component="apiserver",dry_run="",group="apps",resource="deployments",scope="cluster",subresource="",verb="LIST",version="v1"} 1
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="configmaps",scope="namespace",subresource="",verb="WATCH",version="v1"} 4
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="configmaps",scope="namespace",subresource="",verb="POST",version="v1"} 51
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="namespace",subresource="log",verb="LIST",version="v1"} 9
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="",scope="",subresource="",verb="GET",version=""} 7
apiserver_response_sizes_bucket{component="apiserver",group="",resource="configmaps",scope="namespace",subresource="",verb="LIST",version="v1",le="1000"} 0
apiserver_response_sizes_sum{component="apiserver",group="",resource="configmaps",scope="namespace",subresource="",verb="LIST",version="v1"} 123456
apiserver_response_sizes_sum{component="apiserver",group="",resource="configmaps",scope="namespace",subresource="",verb="WATCH",version="v1"} 1.5e+06
apiserver_response_sizes_count{component="apiserver",group="",resource="configmaps",scope="namespace",subresource="",verb="LIST",version="v1"} 3
apiserver_watch_events_total{group="",resource="configmaps",version="v1"} 52
apiserver_watch_events_sizes_sum{group="",resource="configmaps",version="v1"} 40960
weird_metric{a="x\"y,z}",b="\\"} 1
`
	got, err := parseMetrics(strings.NewReader(text))
	if err != nil {
		t.Fatalf("parseMetrics: %v", err)
	}
	want := Metrics{
		Lists:           map[string]int64{"configmaps": 5, "deployments.apps": 1},
		ListBytes:       map[string]int64{"configmaps": 123456},
		Watches:         map[string]int64{"configmaps": 4},
		WatchBytes:      map[string]int64{"configmaps": 1500000},
		WatchEvents:     map[string]int64{"configmaps": 52},
		WatchEventBytes: map[string]int64{"configmaps": 40960},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("parseMetrics (-want +got):\n%s", diff)
	}

	delta := got.Sub(Metrics{Lists: map[string]int64{"configmaps": 5, "pods": 1}})
	wantDelta := Metrics{
		Lists:           map[string]int64{"deployments.apps": 1, "pods": -1},
		ListBytes:       want.ListBytes,
		Watches:         want.Watches,
		WatchBytes:      want.WatchBytes,
		WatchEvents:     want.WatchEvents,
		WatchEventBytes: want.WatchEventBytes,
	}
	if diff := cmp.Diff(wantDelta, delta); diff != "" {
		t.Errorf("Sub (-want +got):\n%s", diff)
	}
}

func TestParseMetricsRejectsGarbage(t *testing.T) {
	for _, line := range []string{"novalue", `x{a="b} 1`, `x{a} 1`, "x notanumber"} {
		if _, err := parseMetrics(strings.NewReader(line + "\n")); err == nil {
			t.Errorf("parseMetrics(%q) = nil error, want an error", line)
		}
	}
}
