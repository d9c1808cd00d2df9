package bench

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"
)

// A tiny SVG writer for the plots next to BENCHMARKS.md, so the harness
// needs no plotting dependency.

// Series is one named line of a LineChart, or one named bar group member of
// a BarChart.
type Series struct {
	Name   string
	Points []Point
}

// Point is one x, y value; BarChart uses Label instead of X.
type Point struct {
	X, Y  float64
	Label string
}

// Chart is a line chart (X numeric) or a grouped bar chart (Points carry
// Labels, one group per label, one bar per series). Chart is not safe for
// concurrent mutation.
type Chart struct {
	Title, XLabel, YLabel string
	Series                []Series
	// Bars draws grouped bars by Point.Label instead of lines.
	Bars bool
}

var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"}

const (
	svgW, svgH                       = 720, 420
	padL, padR, padT, padB           = 70, 20, 40, 90
	plotW, plotH                     = svgW - padL - padR, svgH - padT - padB
	legendX, legendY, legendLineStep = padL + 10, padT + 10, 18
)

// WriteSVG writes c as a standalone SVG document.
func (c Chart) WriteSVG(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", svgW, svgH, svgW, svgH)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", svgW, svgH)
	fmt.Fprintf(&b, `<text x="%d" y="22" font-size="15" text-anchor="middle">%s</text>`+"\n", svgW/2, esc(c.Title))

	ymax := 0.0
	for _, s := range c.Series {
		for _, p := range s.Points {
			ymax = math.Max(ymax, p.Y)
		}
	}
	ymax = niceCeil(ymax)
	y := func(v float64) float64 { return padT + plotH - v/ymax*plotH }

	// Axes and horizontal grid with 5 ticks.
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", padL, padT, padL, padT+plotH)
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", padL, padT+plotH, padL+plotW, padT+plotH)
	for i := 0; i <= 5; i++ {
		v := ymax * float64(i) / 5
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>`+"\n", padL, y(v), padL+plotW, y(v))
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", padL-6, y(v)+4, fmtNum(v))
	}
	fmt.Fprintf(&b, `<text x="16" y="%d" transform="rotate(-90 16 %d)" text-anchor="middle">%s</text>`+"\n", padT+plotH/2, padT+plotH/2, esc(c.YLabel))
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">%s</text>`+"\n", padL+plotW/2, svgH-12, esc(c.XLabel))

	if c.Bars {
		c.bars(&b, y)
	} else {
		c.lines(&b, y)
	}
	for i, s := range c.Series {
		ly := legendY + i*legendLineStep
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="12" height="12" fill="%s"/>`+"\n", legendX, ly, color(i))
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`+"\n", legendX+18, ly+10, esc(s.Name))
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func (c Chart) lines(b *strings.Builder, y func(float64) float64) {
	xmax := 0.0
	for _, s := range c.Series {
		for _, p := range s.Points {
			xmax = math.Max(xmax, p.X)
		}
	}
	xmax = niceCeil(xmax)
	x := func(v float64) float64 { return padL + v/xmax*plotW }
	for i := 0; i <= 5; i++ {
		v := xmax * float64(i) / 5
		fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", x(v), padT+plotH+18, fmtNum(v))
	}
	for i, s := range c.Series {
		var pts []string
		for _, p := range s.Points {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(p.X), y(p.Y)))
			fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s"><title>%s: %s</title></circle>`+"\n", x(p.X), y(p.Y), color(i), esc(s.Name), fmtNum(p.Y))
		}
		fmt.Fprintf(b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", color(i), strings.Join(pts, " "))
	}
}

func (c Chart) bars(b *strings.Builder, y func(float64) float64) {
	var labels []string
	seen := map[string]bool{}
	for _, s := range c.Series {
		for _, p := range s.Points {
			if !seen[p.Label] {
				seen[p.Label] = true
				labels = append(labels, p.Label)
			}
		}
	}
	if len(labels) == 0 {
		return
	}
	group := float64(plotW) / float64(len(labels))
	bar := group * 0.8 / float64(max(1, len(c.Series)))
	for gi, label := range labels {
		gx := padL + group*float64(gi) + group*0.1
		fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="end" transform="rotate(-30 %.1f %d)">%s</text>`+"\n", gx+group*0.4, padT+plotH+16, gx+group*0.4, padT+plotH+16, esc(label))
		for si, s := range c.Series {
			for _, p := range s.Points {
				if p.Label != label {
					continue
				}
				fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s %s: %s</title></rect>`+"\n",
					gx+bar*float64(si), y(p.Y), bar, padT+plotH-y(p.Y), color(si), esc(label), esc(s.Name), fmtNum(p.Y))
			}
		}
	}
}

func color(i int) string { return palette[i%len(palette)] }

func esc(s string) string { return html.EscapeString(s) }

// niceCeil rounds v up to 1, 2 or 5 times a power of ten, so ticks are
// round numbers.
func niceCeil(v float64) float64 {
	if v <= 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

func fmtNum(v float64) string {
	switch {
	case v == math.Trunc(v) && math.Abs(v) < 1e15:
		return fmt.Sprintf("%.0f", v)
	case math.Abs(v) >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}
