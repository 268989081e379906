package main

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/gomomento/valkey-operator/bench/record"
)

var (
	okColor     = color.RGBA{R: 31, G: 119, B: 180, A: 255}
	failColor   = color.RGBA{R: 214, G: 39, B: 40, A: 255}
	markerColor = color.RGBA{R: 120, G: 120, B: 120, A: 255}
	// shardColors are blue, green, orange and purple: never the failures' red.
	shardColors = []color.Color{okColor, color.RGBA{R: 44, G: 160, B: 44, A: 255},
		color.RGBA{R: 255, G: 127, B: 14, A: 255}, color.RGBA{R: 148, G: 103, B: 189, A: 255}}
	bucketSecond = 0.25 // the load's timeline resolution, in seconds
)

// plotAvailability draws one tile per disruption: what the client load
// saw over time, from the throughput or the latency side.
func plotAvailability(path, kind string, as []record.Availability) error {
	if len(as) == 0 {
		return nil
	}
	cols := 2
	rows := (len(as) + cols - 1) / cols
	plots := make([][]*plot.Plot, rows)
	for i := range plots {
		plots[i] = make([]*plot.Plot, cols)
	}
	for i, a := range as {
		var p *plot.Plot
		var err error
		if kind == "latency" {
			p, err = latencyTile(a)
		} else {
			p, err = throughputTile(a)
		}
		if err != nil {
			return fmt.Errorf("%s plot of %s: %w", kind, a.Scenario, err)
		}
		plots[i/cols][i%cols] = p
	}
	for i := len(as); i < rows*cols; i++ {
		empty := plot.New()
		empty.HideAxes()
		plots[i/cols][i%cols] = empty
	}
	w, h := 28*vg.Centimeter, vg.Length(rows)*7*vg.Centimeter
	img := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(96), vgimg.UseBackgroundColor(color.White))
	tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Centimeter, PadY: vg.Centimeter,
		PadTop: 2 * vg.Millimeter, PadBottom: 2 * vg.Millimeter, PadLeft: 2 * vg.Millimeter, PadRight: 4 * vg.Millimeter}
	canvases := plot.Align(plots, tiles, draw.New(img))
	for r := range plots {
		for c := range plots[r] {
			plots[r][c].Draw(canvases[r][c])
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func tile(a record.Availability) *plot.Plot {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s (%s)", a.Scenario, a.Cluster)
	p.X.Label.Text = "seconds from the disruption"
	p.X.Tick.Marker = plainTicks{}
	p.Y.Tick.Marker = plainTicks{}
	p.Add(plotter.NewGrid())
	return p
}

// markPhases draws the disruption's start and the convergence as dashed
// vertical lines over the y range lo..hi.
func markPhases(p *plot.Plot, a record.Availability, lo, hi float64) error {
	for _, x := range []float64{0, a.Seconds} {
		l, err := plotter.NewLine(plotter.XYs{{X: x, Y: lo}, {X: x, Y: hi}})
		if err != nil {
			return err
		}
		l.Color, l.Dashes = markerColor, []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(l)
	}
	return nil
}

func throughputTile(a record.Availability) (*plot.Plot, error) {
	p := tile(a)
	p.Y.Label.Text = "per second"
	shards := 0
	for _, b := range a.Timeline {
		shards = max(shards, len(b.ShardWrites))
	}
	writes := make([]plotter.XYs, shards)
	var failed plotter.XYs
	hi := 1.0
	for _, b := range a.Timeline {
		x := b.T + bucketSecond/2
		for i := range shards {
			y := 0.0
			if i < len(b.ShardWrites) {
				y = float64(b.ShardWrites[i]) / bucketSecond
			}
			writes[i] = append(writes[i], plotter.XY{X: x, Y: y})
			hi = max(hi, y)
		}
		failed = append(failed, plotter.XY{X: x, Y: float64(b.Failed) / bucketSecond})
		hi = max(hi, float64(b.Failed)/bucketSecond)
	}
	p.Y.Min, p.Y.Max = 0, hi*1.1
	if err := markPhases(p, a, 0, hi*1.1); err != nil {
		return nil, err
	}
	for i, xys := range append(writes, failed) {
		l, err := plotter.NewLine(xys)
		if err != nil {
			return nil, err
		}
		l.Color = failColor
		if i < shards {
			l.Color = shardColors[i%len(shardColors)]
		}
		p.Add(l)
	}
	return p, nil
}

func latencyTile(a record.Availability) (*plot.Plot, error) {
	p := tile(a)
	p.Y.Label.Text = "p99, ms"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	var all, failing plotter.XYs
	lo, hi := math.Inf(1), 0.0
	for _, b := range a.Timeline {
		if b.P99Ms <= 0 {
			continue
		}
		xy := plotter.XY{X: b.T + bucketSecond/2, Y: b.P99Ms}
		all = append(all, xy)
		if b.Failed > 0 {
			failing = append(failing, xy)
		}
		lo, hi = min(lo, b.P99Ms), max(hi, b.P99Ms)
	}
	if len(all) == 0 {
		return p, nil
	}
	// A log axis needs a range above zero that spans at least a decade.
	p.Y.Min, p.Y.Max = math.Pow(10, math.Floor(math.Log10(lo))), math.Pow(10, math.Ceil(math.Log10(hi*1.01)))
	if err := markPhases(p, a, p.Y.Min, p.Y.Max); err != nil {
		return nil, err
	}
	line, err := plotter.NewLine(all)
	if err != nil {
		return nil, err
	}
	line.Color = okColor
	p.Add(line)
	if len(failing) > 0 {
		s, err := plotter.NewScatter(failing)
		if err != nil {
			return nil, err
		}
		s.Color, s.Shape, s.Radius = failColor, draw.CrossGlyph{}, vg.Points(3)
		p.Add(s)
	}
	return p, nil
}

// plainTicks are the default ticks labelled without trailing zeros.
type plainTicks struct{}

func (plainTicks) Ticks(lo, hi float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(lo, hi)
	for i := range ticks {
		if ticks[i].Label != "" {
			ticks[i].Label = strconv.FormatFloat(ticks[i].Value, 'f', -1, 64)
		}
	}
	return ticks
}
