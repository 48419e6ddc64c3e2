package report

import (
	"fmt"
	"hash/fnv"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/pvlock/pvlock/bench"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// PlotFormats are the file formats WritePlots writes each plot in.
var PlotFormats = []string{"png", "svg"}

// Plot size: 9×5 inches (864×480 pixels in PNG), of which the right
// legendWidth holds the legend, outside the data.
const (
	plotWidth   = 9 * vg.Inch
	plotHeight  = 5 * vg.Inch
	legendWidth = 1.9 * vg.Inch
)

// palette tells up to ten locks apart (Tableau 10); glyph shapes repeat
// with a different period, so even more locks stay distinguishable.
var palette = []color.Color{
	color.RGBA{31, 119, 180, 255}, color.RGBA{255, 127, 14, 255}, color.RGBA{44, 160, 44, 255},
	color.RGBA{214, 39, 40, 255}, color.RGBA{148, 103, 189, 255}, color.RGBA{140, 86, 75, 255},
	color.RGBA{227, 119, 194, 255}, color.RGBA{127, 127, 127, 255}, color.RGBA{188, 189, 34, 255},
	color.RGBA{23, 190, 207, 255},
}

// lockStyles fixes each lab lock's colour and glyph (an index into
// palette and plotutil's shapes), so that a lock looks the same in every
// plot whatever other locks share it.
var lockStyles = map[string]int{
	"native-ticket": 0, "pv-ticket": 1, "native-qspin": 2, "pv-qspin": 3, "pv-qspin-nosteal": 4,
	"tas": 5, "ple-yield": 6, "preemptable-ticket": 7, "sync.Mutex": 8,
}

// lockStyle is the style index of a lock: fixed for the lab's locks, a
// hash of the name for any other.
func lockStyle(name string) int {
	if i, ok := lockStyles[name]; ok {
		return i
	}
	h := fnv.New32a()
	h.Write([]byte(name))
	return int(h.Sum32() % 1024)
}

func lockColor(name string) color.Color { return palette[lockStyle(name)%len(palette)] }

func lockShape(name string) draw.GlyphDrawer { return plotutil.Shape(lockStyle(name)) }

// WritePlots draws rows into dir (created if missing), for every workload
// in rows: <workload>-throughput (throughput against overcommit, one line
// per lock, stdev error bars), <workload>-fairness (Jain's index per lock
// and overcommit, grouped bars) and <workload>-latency (p99 acquisition
// latency against overcommit, log scale), each in every PlotFormats
// format. It returns the files written.
func WritePlots(dir string, rows []bench.Row) ([]string, error) {
	return writePlots(dir, rows, "throughput", "fairness", "latency")
}

// WriteThroughputPlots is WritePlots with the throughput plots only.
func WriteThroughputPlots(dir string, rows []bench.Row) ([]string, error) {
	return writePlots(dir, rows, "throughput")
}

func writePlots(dir string, rows []bench.Row, kinds ...string) ([]string, error) {
	if len(rows) == 0 {
		return nil, fmt.Errorf("bench: no rows to plot")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("bench: plot directory: %w", err)
	}
	var files []string
	for _, wl := range distinct(rows, func(r bench.Row) string { return r.Workload }) {
		sub := slices.DeleteFunc(slices.Clone(rows), func(r bench.Row) bool { return r.Workload != wl })
		plots := []struct {
			name string
			make func([]bench.Row) (*plot.Plot, error)
		}{
			{"throughput", throughputPlot},
			{"fairness", fairnessPlot},
			{"latency", latencyPlot},
		}
		for _, pl := range plots {
			if !slices.Contains(kinds, pl.name) {
				continue
			}
			p, err := pl.make(sub)
			if err != nil {
				return files, fmt.Errorf("bench: %s %s plot: %w", wl, pl.name, err)
			}
			for _, ext := range PlotFormats {
				path := filepath.Join(dir, fmt.Sprintf("%s-%s.%s", wl, pl.name, ext))
				if err := savePlot(p, path, ext); err != nil {
					return files, fmt.Errorf("bench: write %s: %w", path, err)
				}
				files = append(files, path)
			}
		}
	}
	return files, nil
}

// savePlot writes p to path in the given format, with its legend in a
// column to the right of the plot so that it never hides data.
func savePlot(p *plot.Plot, path, format string) (err error) {
	cw, err := draw.NewFormattedCanvas(plotWidth, plotHeight, format)
	if err != nil {
		return err
	}
	dc := draw.New(cw)
	dc.FillPolygon(color.White, []vg.Point{{X: 0, Y: 0}, {X: 0, Y: plotHeight}, {X: plotWidth, Y: plotHeight}, {X: plotWidth, Y: 0}})
	legend := p.Legend
	p.Legend = plot.NewLegend()
	p.Draw(draw.Crop(dc, 0, -legendWidth, 0, 0))
	p.Legend = legend
	legend.Top, legend.Left = true, true
	legend.Draw(draw.Crop(dc, plotWidth-legendWidth+vg.Points(6), 0, 0, -vg.Points(28)))
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	_, err = cw.WriteTo(f)
	return err
}

// setup labels the plot: what it shows, then the run's configuration on
// the x axis.
func setup(p *plot.Plot, rows []bench.Row, what, x string) {
	r := rows[0]
	p.Title.Text = r.Workload + ": " + what
	p.X.Label.Text = fmt.Sprintf("%s   [%d pCPUs, %d VM(s), %d runs per point]", x, r.PCPUs, max(r.VMs, 1), r.Runs)
	p.Add(plotter.NewGrid())
}

// xyErrs is one lock's throughput points with their stdev.
type xyErrs struct {
	plotter.XYs
	plotter.YErrors
}

func throughputPlot(rows []bench.Row) (*plot.Plot, error) {
	p := plot.New()
	setup(p, rows, "throughput vs overcommit, mean ± stdev (higher is better)", "overcommit (vCPUs per pCPU)")
	p.Y.Label.Text = unit(rows) + "/s"
	p.Y.Min = 0
	p.Y.Tick.Marker = siTicks{}
	for _, lock := range lockOrder(rows) {
		var d xyErrs
		for _, oc := range factors(rows) {
			if r, ok := find(rows, lock, oc); ok {
				d.XYs = append(d.XYs, plotter.XY{X: oc, Y: r.OpsPerSec})
				d.YErrors = append(d.YErrors, struct{ Low, High float64 }{r.Stdev, r.Stdev})
			}
		}
		line, points, err := plotter.NewLinePoints(d.XYs)
		if err != nil {
			return nil, err
		}
		line.Color, line.Width = lockColor(lock), vg.Points(1.5)
		points.Color, points.Shape = lockColor(lock), lockShape(lock)
		bars, err := plotter.NewYErrorBars(d)
		if err != nil {
			return nil, err
		}
		bars.Color = lockColor(lock)
		p.Add(line, points, bars)
		p.Legend.Add(lock, line, points)
	}
	p.X.Tick.Marker = factorTicks(rows)
	return p, nil
}

func fairnessPlot(rows []bench.Row) (*plot.Plot, error) {
	p := plot.New()
	setup(p, rows, "fairness of per-vCPU lock acquisitions (1 = fair)", "overcommit")
	p.Y.Label.Text = "Jain's index"
	p.Y.Min, p.Y.Max = 0, 1
	locks, ocs := lockOrder(rows), factors(rows)
	w := vg.Points(min(60.0/float64(len(locks)), 14))
	for i, lock := range locks {
		vals := make(plotter.Values, len(ocs))
		for j, oc := range ocs {
			if r, ok := find(rows, lock, oc); ok {
				vals[j] = r.Jain
			}
		}
		bars, err := plotter.NewBarChart(vals, w)
		if err != nil {
			return nil, err
		}
		bars.Color = lockColor(lock)
		bars.LineStyle.Width = 0
		bars.Offset = w * vg.Length(float64(i)-float64(len(locks)-1)/2)
		p.Add(bars)
		p.Legend.Add(lock, bars)
	}
	names := make([]string, len(ocs))
	for j, oc := range ocs {
		names[j] = fmt.Sprintf("%gx", oc)
	}
	p.NominalX(names...)
	return p, nil
}

func latencyPlot(rows []bench.Row) (*plot.Plot, error) {
	p := plot.New()
	setup(p, rows, "p99 time from Lock to owning the lock (lower is better)", "overcommit (vCPUs per pCPU)")
	p.Y.Label.Text = "p99 latency" // a long rotated label shrinks a log axis
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = nanoTicks{}
	lo, hi := math.Inf(1), 1.0
	for _, lock := range lockOrder(rows) {
		var xys plotter.XYs
		for _, oc := range factors(rows) {
			if r, ok := find(rows, lock, oc); ok {
				y := float64(max(r.LatP99, 1)) // log scale: no zeros
				lo, hi = min(lo, y), max(hi, y)
				xys = append(xys, plotter.XY{X: oc, Y: y})
			}
		}
		line, points, err := plotter.NewLinePoints(xys)
		if err != nil {
			return nil, err
		}
		line.Color, line.Width = lockColor(lock), vg.Points(1.5)
		points.Color, points.Shape = lockColor(lock), lockShape(lock)
		p.Add(line, points)
		p.Legend.Add(lock, line, points)
	}
	// Set explicitly: the log axis must not be padded down to zero when
	// all points are equal.
	p.Y.Min, p.Y.Max = max(lo/2, 1), hi*2
	p.X.Tick.Marker = factorTicks(rows)
	return p, nil
}

// factorTicks labels the x axis at the measured overcommit factors.
func factorTicks(rows []bench.Row) plot.Ticker {
	var ticks plot.ConstantTicks
	for _, oc := range factors(rows) {
		ticks = append(ticks, plot.Tick{Value: oc, Label: fmt.Sprintf("%gx", oc)})
	}
	return ticks
}

// nanoTicks marks a log axis of nanoseconds at every power of ten, with
// readable units, and unlabelled minor ticks in between.
type nanoTicks struct{}

func (nanoTicks) Ticks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	for dec := math.Pow(10, math.Floor(math.Log10(max(lo, 1)))); dec <= hi; dec *= 10 {
		for k := 1.0; k < 10; k++ {
			v := k * dec
			if v < lo || v > hi {
				continue
			}
			t := plot.Tick{Value: v}
			if k == 1 {
				t.Label = axisNanos(v)
			}
			ticks = append(ticks, t)
		}
	}
	return ticks
}

// axisNanos labels an axis tick of ns compactly: 100ms, 1.5ms, 20µs,
// 1s, without the trailing zeros of the tables' FormatNanos.
func axisNanos(ns float64) string {
	unit, suffix := 1.0, "ns"
	switch a := math.Abs(ns); {
	case a >= 1e9:
		unit, suffix = 1e9, "s"
	case a >= 1e6:
		unit, suffix = 1e6, "ms"
	case a >= 1e3:
		unit, suffix = 1e3, "µs"
	}
	return strconv.FormatFloat(ns/unit, 'g', 3, 64) + suffix
}

// siTicks are gonum's default ticks labelled with k and M, so that large
// throughputs stay readable.
type siTicks struct{}

func (siTicks) Ticks(lo, hi float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(lo, hi)
	for i := range ticks {
		if ticks[i].Label != "" {
			ticks[i].Label = siLabel(ticks[i].Value)
		}
	}
	return ticks
}

func siLabel(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1e6:
		return strconv.FormatFloat(v/1e6, 'g', 4, 64) + "M"
	case a >= 1e3:
		return strconv.FormatFloat(v/1e3, 'g', 4, 64) + "k"
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// SweepPlotRows turns sweep rows into Rows that WritePlots draws as one
// throughput plot per workload and lock, with a line per setting: the
// workload is renamed "sweep-<workload>-<lock>" and the lock "<setting>".
// The confirmation rounds are left out.
func SweepPlotRows(rows []bench.SweepRow) []bench.Row {
	out := make([]bench.Row, 0, len(rows))
	for _, r := range rows {
		if r.Confirm > 0 {
			continue
		}
		row := r.Row
		row.Workload = fmt.Sprintf("sweep-%s-%s", r.Workload, r.Lock)
		row.Lock = r.Setting()
		out = append(out, row)
	}
	return out
}
