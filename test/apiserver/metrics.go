package apiserver

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// Metrics is what the API server reports it has served, per resource. Keys
// are the resource as kubectl names it: "configmaps" for the core group,
// "deployments.apps" otherwise. All values are cumulative since the API
// server (re)started; subtract two scrapes with Sub to see what a test step
// cost.
//
// Which metric shows an informer's start depends on the client: a plain
// LIST shows in Lists and ListBytes; client-go's streaming watch-list
// (WatchListClient, on by default since client-go v0.35) shows as a WATCH
// whose initial objects arrive as watch events, so it shows in Watches and
// WatchEventBytes instead.
type Metrics struct {
	// Lists counts LIST requests (apiserver_request_total{verb="LIST"}),
	// whatever their response code.
	Lists map[string]int64
	// ListBytes is the bytes sent in LIST responses
	// (apiserver_response_sizes_sum{verb="LIST"}).
	ListBytes map[string]int64
	// Watches counts WATCH requests that have finished
	// (apiserver_request_total{verb="WATCH"}): the API server records a
	// request when it ends, so a watch still open is not counted yet.
	Watches map[string]int64
	// WatchBytes is the bytes sent by finished WATCH requests
	// (apiserver_response_sizes_sum{verb="WATCH"}); same caveat as Watches.
	WatchBytes map[string]int64
	// WatchEvents counts events sent to watchers, open or finished
	// (apiserver_watch_events_total).
	WatchEvents map[string]int64
	// WatchEventBytes is the encoded size of those events
	// (apiserver_watch_events_sizes_sum), recorded as they are sent.
	WatchEventBytes map[string]int64
}

// Sub returns m minus before, dropping resources whose difference is zero.
func (m Metrics) Sub(before Metrics) Metrics {
	sub := func(a, b map[string]int64) map[string]int64 {
		out := map[string]int64{}
		for k, v := range a {
			if d := v - b[k]; d != 0 {
				out[k] = d
			}
		}
		for k, v := range b {
			if _, ok := a[k]; !ok && v != 0 {
				out[k] = -v
			}
		}
		return out
	}
	return Metrics{
		Lists:           sub(m.Lists, before.Lists),
		ListBytes:       sub(m.ListBytes, before.ListBytes),
		Watches:         sub(m.Watches, before.Watches),
		WatchBytes:      sub(m.WatchBytes, before.WatchBytes),
		WatchEvents:     sub(m.WatchEvents, before.WatchEvents),
		WatchEventBytes: sub(m.WatchEventBytes, before.WatchEventBytes),
	}
}

// Metrics scrapes the API server's /metrics, failing the test on error.
func (s *Server) Metrics(t testing.TB) Metrics {
	t.Helper()
	m, err := s.Scrape(t.Context())
	if err != nil {
		t.Fatalf("%v", err)
	}
	return m
}

// Scrape is Metrics for programs that are not tests: it scrapes the API
// server's /metrics and returns an error instead of failing a test.
func (s *Server) Scrape(ctx context.Context) (Metrics, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL()+"/metrics", nil)
	if err != nil {
		return Metrics{}, fmt.Errorf("apiserver: metrics: %w", err)
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return Metrics{}, fmt.Errorf("apiserver: metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		return Metrics{}, fmt.Errorf("apiserver: metrics: %s: %s", resp.Status, body)
	}
	return parseMetrics(resp.Body)
}

// parseMetrics reads the Prometheus text format, keeping the few series
// Metrics reports. It is a small parser rather than prometheus/common so
// that this package needs only the standard library and client-go.
func parseMetrics(r io.Reader) (Metrics, error) {
	m := Metrics{
		Lists:           map[string]int64{},
		ListBytes:       map[string]int64{},
		Watches:         map[string]int64{},
		WatchBytes:      map[string]int64{},
		WatchEvents:     map[string]int64{},
		WatchEventBytes: map[string]int64{},
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		name, labels, value, err := parseSample(line)
		if err != nil {
			return Metrics{}, fmt.Errorf("apiserver: metrics: %w", err)
		}
		var dst map[string]int64
		switch name {
		case "apiserver_request_total":
			switch labels["verb"] {
			case "LIST":
				dst = m.Lists
			case "WATCH":
				dst = m.Watches
			}
		case "apiserver_response_sizes_sum":
			switch labels["verb"] {
			case "LIST":
				dst = m.ListBytes
			case "WATCH":
				dst = m.WatchBytes
			}
		case "apiserver_watch_events_total":
			dst = m.WatchEvents
		case "apiserver_watch_events_sizes_sum":
			dst = m.WatchEventBytes
		}
		if dst == nil || labels["resource"] == "" || labels["subresource"] != "" {
			continue
		}
		key := labels["resource"]
		if g := labels["group"]; g != "" {
			key += "." + g
		}
		// Counters and sums of byte sizes are integers; float64 holds them
		// exactly up to 2^53.
		dst[key] += int64(value)
	}
	if err := sc.Err(); err != nil {
		return Metrics{}, fmt.Errorf("apiserver: metrics: read: %w", err)
	}
	return m, nil
}

// parseSample splits `name{k="v",...} value [timestamp]`.
func parseSample(line string) (name string, labels map[string]string, value float64, err error) {
	labels = map[string]string{}
	rest := line
	if i := strings.IndexAny(line, "{ "); i < 0 {
		return "", nil, 0, fmt.Errorf("parse %q: no value", line)
	} else {
		name, rest = line[:i], line[i:]
	}
	if strings.HasPrefix(rest, "{") {
		rest = rest[1:]
		for {
			rest = strings.TrimLeft(rest, " ,")
			if strings.HasPrefix(rest, "}") {
				rest = rest[1:]
				break
			}
			eq := strings.Index(rest, `="`)
			if eq < 0 {
				return "", nil, 0, fmt.Errorf("parse %q: bad label", line)
			}
			key := rest[:eq]
			rest = rest[eq+2:]
			var val strings.Builder
			closed := false
			for i := 0; i < len(rest); i++ {
				c := rest[i]
				if c == '\\' && i+1 < len(rest) {
					i++
					switch rest[i] {
					case 'n':
						val.WriteByte('\n')
					default:
						val.WriteByte(rest[i])
					}
					continue
				}
				if c == '"' {
					rest = rest[i+1:]
					closed = true
					break
				}
				val.WriteByte(c)
			}
			if !closed {
				return "", nil, 0, fmt.Errorf("parse %q: unterminated label value", line)
			}
			labels[key] = val.String()
		}
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		return "", nil, 0, fmt.Errorf("parse %q: no value", line)
	}
	value, err = strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return "", nil, 0, fmt.Errorf("parse %q: %w", line, err)
	}
	return name, labels, value, nil
}
