package bench

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"
)

// Machine describes where the numbers were measured.
type Machine struct {
	CPUs     int
	CPUModel string
	MemTotal string
	Go       string
	Date     time.Time
	// LoadAvg is /proc/loadavg at the start: these machines are shared.
	LoadAvg string
}

// ThisMachine reads the machine's description from /proc (Linux); fields
// it cannot read stay empty.
func ThisMachine() Machine {
	m := Machine{CPUs: runtime.NumCPU(), Go: runtime.Version(), Date: time.Now().UTC()}
	m.CPUModel = procField("/proc/cpuinfo", "model name")
	m.MemTotal = procField("/proc/meminfo", "MemTotal")
	if data, err := os.ReadFile("/proc/loadavg"); err == nil {
		f := strings.Fields(string(data))
		if len(f) >= 3 {
			m.LoadAvg = strings.Join(f[:3], " ")
		}
	}
	return m
}

func procField(path, key string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// Markdown renders the machine as a bullet list.
func (m Machine) Markdown() string {
	return fmt.Sprintf("- date: %s\n- CPU: %s, %d logical CPUs (nproc), load average at start %s (shared machine)\n- memory: %s\n- Go: %s, client-go v0.37.2, kube-apiserver v1.36.3, etcd v3.6.16\n",
		m.Date.Format("2006-01-02 15:04 UTC"), m.CPUModel, m.CPUs, m.LoadAvg, m.MemTotal, m.Go)
}

// RestartMarkdown renders restart results, one row per N, as a Markdown
// table with the ratios to client-go's cold start.
func RestartMarkdown(rs []*Result) string {
	var b strings.Builder
	b.WriteString("| ConfigMaps | changes while down | client-go cold start | informerdb cold start | informerdb restart | restart / client-go time | client-go bytes | restart bytes | restart / client-go bytes | restart LISTs | restart handler events (replayed + changes) |\n")
	b.WriteString("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rs {
		ev := r.Restart.Events
		fmt.Fprintf(&b, "| %d | %d | %s | %s | %s | **%s** | %s | %s | **%s** | %d | %d + %d |\n",
			r.N, r.Changes.Total(), dur(r.ClientGo.Synced), dur(r.Cold.Synced), dur(r.Restart.Synced),
			ratio(r.Restart.Synced.Seconds(), r.ClientGo.Synced.Seconds()),
			bytes(r.ClientGo.Cost.Bytes), bytes(r.Restart.Cost.Bytes), percent(r.Restart.Cost.Bytes, r.ClientGo.Cost.Bytes),
			r.Restart.Cost.Lists, ev.Initial, ev.Added+ev.Updated+ev.Deleted)
	}
	return b.String()
}

// MemMarkdown renders memory results as a Markdown table with the ratios to
// the client-go row.
func MemMarkdown(rs []MemResult) string {
	var base MemResult
	for _, r := range rs {
		if r.Impl == "client-go" {
			base = r
		}
	}
	var b strings.Builder
	b.WriteString("| implementation | objects | measured after | heap MiB | heap / client-go | RSS MiB | RSS / client-go |\n")
	b.WriteString("|---|---:|---|---:|---:|---:|---:|\n")
	for _, r := range rs {
		fmt.Fprintf(&b, "| %s | %d | %s | %.1f | %s | %.1f | %s |\n", r.Impl, r.N, r.How,
			mib(r.HeapBytes), ratio(float64(r.HeapBytes), float64(base.HeapBytes)),
			mib(r.RSSBytes), ratio(float64(r.RSSBytes), float64(base.RSSBytes)))
	}
	return b.String()
}

func mib(n uint64) float64 { return float64(n) / (1 << 20) }

// TimeChart plots time to synced against N.
func TimeChart(rs []*Result) Chart {
	c := Chart{Title: "Time to synced after a restart (real kube-apiserver, ConfigMaps of ~1 KiB)", XLabel: "ConfigMaps", YLabel: "seconds"}
	var cg, cold, rs2 Series
	cg.Name, cold.Name, rs2.Name = "client-go (every start is a cold start)", "informerdb cold start (bolt)", "informerdb restart (bolt)"
	for _, r := range rs {
		cg.Points = append(cg.Points, Point{X: float64(r.N), Y: r.ClientGo.Synced.Seconds()})
		cold.Points = append(cold.Points, Point{X: float64(r.N), Y: r.Cold.Synced.Seconds()})
		rs2.Points = append(rs2.Points, Point{X: float64(r.N), Y: r.Restart.Synced.Seconds()})
	}
	c.Series = []Series{cg, cold, rs2}
	return c
}

// BytesChart plots the bytes the API server sent against N.
func BytesChart(rs []*Result) Chart {
	c := Chart{Title: "Bytes the API server sent for one start", XLabel: "ConfigMaps", YLabel: "MB"}
	var cg, rs2 Series
	cg.Name, rs2.Name = "client-go cold start", "informerdb restart (bolt)"
	for _, r := range rs {
		cg.Points = append(cg.Points, Point{X: float64(r.N), Y: float64(r.ClientGo.Cost.Bytes) / 1e6})
		rs2.Points = append(rs2.Points, Point{X: float64(r.N), Y: float64(r.Restart.Cost.Bytes) / 1e6})
	}
	c.Series = []Series{cg, rs2}
	return c
}

// MemChart plots heap and RSS per implementation.
func MemChart(rs []MemResult) Chart {
	n := 0
	if len(rs) > 0 {
		n = rs[0].N
	}
	c := Chart{Bars: true, Title: fmt.Sprintf("Memory holding %d ConfigMaps (fresh process, after GC)", n), YLabel: "MiB"}
	heap, r := Series{Name: "Go heap"}, Series{Name: "RSS"}
	for _, m := range rs {
		heap.Points = append(heap.Points, Point{Label: m.Impl, Y: mib(m.HeapBytes)})
		r.Points = append(r.Points, Point{Label: m.Impl, Y: mib(m.RSSBytes)})
	}
	c.Series = []Series{heap, r}
	return c
}

// ReplaceSection replaces the text between the lines
// "<!-- begin NAME -->" and "<!-- end NAME -->" of doc with body.
func ReplaceSection(doc, name, body string) (string, error) {
	begin, end := "<!-- begin "+name+" -->\n", "<!-- end "+name+" -->"
	i := strings.Index(doc, begin)
	j := strings.Index(doc, end)
	if i < 0 || j < i {
		return "", fmt.Errorf("bench: section %s: no %q ... %q markers", name, strings.TrimSpace(begin), end)
	}
	return doc[:i+len(begin)] + body + doc[j:], nil
}
