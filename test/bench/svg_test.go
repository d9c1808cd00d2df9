package bench_test

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/informerdb/informerdb/test/bench"
)

// TestChartSVG checks that charts are well-formed XML holding one mark per
// point and the legend, including names that need escaping.
func TestChartSVG(t *testing.T) {
	for _, tc := range []struct {
		name      string
		chart     bench.Chart
		wantMarks map[string]int // element name -> count
	}{
		{
			name: "lines",
			chart: bench.Chart{Title: "time <to> synced", XLabel: "N", YLabel: "s", Series: []bench.Series{
				{Name: "client-go & co", Points: []bench.Point{{X: 10000, Y: 1.5}, {X: 50000, Y: 7}}},
				{Name: "informerdb", Points: []bench.Point{{X: 10000, Y: 0.3}, {X: 50000, Y: 1.1}}},
			}},
			wantMarks: map[string]int{"circle": 4, "polyline": 2},
		},
		{
			name: "bars",
			chart: bench.Chart{Bars: true, Title: "heap", YLabel: "MiB", Series: []bench.Series{
				{Name: "heap", Points: []bench.Point{{Label: "client-go", Y: 300}, {Label: "bolt", Y: 310}, {Label: "bolt?cache=1000", Y: 20}}},
				{Name: "rss", Points: []bench.Point{{Label: "client-go", Y: 400}, {Label: "bolt", Y: 420}}},
			}},
			// The background, two legend squares and one bar per point.
			wantMarks: map[string]int{"rect": 1 + 2 + 5},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := tc.chart.WriteSVG(&buf); err != nil {
				t.Fatalf("WriteSVG: %v", err)
			}
			counts := map[string]int{}
			var texts []string
			dec := xml.NewDecoder(&buf)
			for {
				tok, err := dec.Token()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatalf("SVG is not well-formed XML: %v", err)
				}
				switch tok := tok.(type) {
				case xml.StartElement:
					counts[tok.Name.Local]++
				case xml.CharData:
					if s := strings.TrimSpace(string(tok)); s != "" {
						texts = append(texts, s)
					}
				}
			}
			got := map[string]int{}
			for name := range tc.wantMarks {
				got[name] = counts[name]
			}
			if diff := cmp.Diff(tc.wantMarks, got); diff != "" {
				t.Errorf("marks (-want +got):\n%s", diff)
			}
			all := strings.Join(texts, "\n")
			for _, want := range append([]string{tc.chart.Title}, seriesNames(tc.chart)...) {
				if !strings.Contains(all, want) {
					t.Errorf("SVG text has no %q:\n%s", want, all)
				}
			}
		})
	}
}

func seriesNames(c bench.Chart) []string {
	var names []string
	for _, s := range c.Series {
		names = append(names, s.Name)
	}
	return names
}
