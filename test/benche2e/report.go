package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

type report struct {
	Workload string    `json:"workload"`
	Date     string    `json:"date"`
	Host     string    `json:"host"`
	Runs     []*result `json:"runs"`
}

// write saves e2e.json, e2e.md and e2e.png under dir.
func (rep *report) write(dir string) error {
	data, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "e2e.json"), append(data, '\n'), 0o644); err != nil {
		return err
	}
	table := rep.markdown()
	if err := os.WriteFile(filepath.Join(dir, "e2e.md"), []byte(table), 0o644); err != nil {
		return err
	}
	return rep.plot(filepath.Join(dir, "e2e.png"))
}

// pairs is each size's binder and vc-scheduler runs, in size order.
func (rep *report) pairs() (sizes []int, binder, ours map[int]*result) {
	binder, ours = map[int]*result{}, map[int]*result{}
	for _, r := range rep.Runs {
		if r.Scheduler == "binder" {
			binder[r.Nodes] = r
		} else {
			ours[r.Nodes] = r
			sizes = append(sizes, r.Nodes)
		}
	}
	sort.Ints(sizes)
	return sizes, binder, ours
}

func (rep *report) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "End to end, workload %s, on %s (%s): the trivial binder, then vc-scheduler, on the same API server.\n\n", rep.Workload, rep.Host, rep.Date)
	b.WriteString("| nodes / pods | pods/s binder → ours (ratio) | p50 / p99 s binder | p50 / p99 s ours (p99 ratio) | gang complete → bound p50 / p99 s binder → ours | API writes / pod ours | API server CPU s binder → ours | scheduler CPU s, peak RSS MiB | nodes / GPUs used (optimum) | overbooked, unassigned |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|\n")
	sizes, binder, ours := rep.pairs()
	for _, n := range sizes {
		o, bi := ours[n], binder[n]
		if bi == nil {
			bi = &result{}
		}
		fmt.Fprintf(&b, "| %d / %d | %.0f → %.0f (%s) | %.2f / %.2f | %.2f / %.2f (%s) | %.2f / %.2f → %.2f / %.2f | %.2f | %.1f → %.1f | %.1f, %.0f | %d / %d (%d / %d) | %d, %d |\n",
			n, o.Pods, bi.PodsPerSecond, o.PodsPerSecond, ratio(o.PodsPerSecond, bi.PodsPerSecond),
			bi.P50Seconds, bi.P99Seconds, o.P50Seconds, o.P99Seconds, ratio(o.P99Seconds, bi.P99Seconds),
			bi.CompleteP50Seconds, bi.CompleteP99Seconds, o.CompleteP50Seconds, o.CompleteP99Seconds,
			o.WritesPerPod, bi.APIServerCPUSeconds, o.APIServerCPUSeconds, o.SchedulerCPUSeconds, o.SchedulerPeakRSSMiB,
			o.NodesUsed, o.GPUsUsed, o.OptimumNodes, o.OptimumGPUs, o.Overbooked, o.Unassigned)
	}
	b.WriteString("\nvc-scheduler's Scheduled Events, from a pod seen bound to its Event seen:\n\n")
	for _, n := range sizes {
		o := ours[n]
		fmt.Fprintf(&b, "- %d nodes: p50 %.2f s, p99 %.2f s, max %.2f s; %d bound pods without one\n",
			n, o.EventLagP50Seconds, o.EventLagP99Seconds, o.EventLagMaxSeconds, o.NoEvent)
	}
	b.WriteString("\nvc-scheduler's API writes by verb and resource (the binder's: one `create pods/binding` per pod):\n\n")
	for _, n := range sizes {
		o := ours[n]
		fmt.Fprintf(&b, "- %d nodes, %d bound: %s\n", n, o.Bound, writesList(o.Writes))
		for _, u := range o.Unbound {
			fmt.Fprintf(&b, "  - unbound: %s\n", u)
		}
	}
	return b.String()
}

// writesList is writes as markdown ("`verb resource` count", comma-separated), by name.
func writesList(writes map[string]int) string {
	var keys []string
	for k := range writes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("`%s` %d", k, writes[k]))
	}
	return strings.Join(parts, ", ")
}

// check fails on a vc-scheduler run that left pods unbound, bound a vGPU pod without its
// assignment, or overbooked a GPU.
func (rep *report) check() error {
	for _, r := range rep.Runs {
		if r.Scheduler == "binder" {
			continue
		}
		if r.Bound < r.Pods || r.Unassigned > 0 || r.Overbooked > 0 {
			return fmt.Errorf("%s on %d nodes: %d of %d pods bound, %d without an assignment, %d GPUs overbooked; unbound: %s",
				r.Scheduler, r.Nodes, r.Bound, r.Pods, r.Unassigned, r.Overbooked, strings.Join(r.Unbound, "; "))
		}
	}
	return nil
}

func ratio(a, b float64) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f×", a/b)
}

// plot draws pods/s and p99 against node count, ours and the binder's, side by side.
func (rep *report) plot(path string) error {
	sizes, binder, ours := rep.pairs()
	series := func(runs map[int]*result, value func(*result) float64) plotter.XYs {
		var xy plotter.XYs
		for _, n := range sizes {
			if r := runs[n]; r != nil {
				xy = append(xy, plotter.XY{X: float64(n), Y: value(r)})
			}
		}
		return xy
	}
	panel := func(title, ylabel string, value func(*result) float64) (*plot.Plot, error) {
		p := plot.New()
		p.Title.Text, p.X.Label.Text, p.Y.Label.Text = title, "kwok GPU nodes (10 pods per node)", ylabel
		p.Y.Min = 0
		err := plotutil.AddLinePoints(p, "vc-scheduler", series(ours, value), "trivial binder", series(binder, value))
		p.Legend.Top = true
		return p, err
	}
	rate, err := panel("Bound pods per second", "pods/s", func(r *result) float64 { return r.PodsPerSecond })
	if err != nil {
		return err
	}
	p99, err := panel("p99 create → bound", "seconds", func(r *result) float64 { return r.P99Seconds })
	if err != nil {
		return err
	}
	img := vgimg.New(12*vg.Inch, 4.5*vg.Inch)
	canvas := draw.New(img)
	tiles := draw.Tiles{Rows: 1, Cols: 2, PadX: vg.Inch / 4, PadTop: vg.Inch / 8, PadBottom: vg.Inch / 8, PadLeft: vg.Inch / 8, PadRight: vg.Inch / 8}
	cells := plot.Align([][]*plot.Plot{{rate, p99}}, tiles, canvas)
	rate.Draw(cells[0][0])
	p99.Draw(cells[0][1])
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = vgimg.PngCanvas{Canvas: img}.WriteTo(f)
	return err
}
