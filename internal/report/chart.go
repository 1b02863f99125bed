package report

import (
	"fmt"
	"html"
	"math"
	"strings"
	"time"

	"github.com/ragcanary/ragcanary/internal/format"
	"github.com/ragcanary/ragcanary/internal/scoring"
)

// Chart colours. Tests look for them in a browser's screenshot, so they are
// solid fills of a known value.
const (
	colorInterval   = "#2b6cb0" // an established [lower, upper] interval
	colorCensored   = "#dd6b20" // right-censored: still visible at the lower bound
	colorSLO        = "#c53030" // the SLO line
	colorUtility    = "#2f855a"
	colorDisclosure = "#9b2c2c"
	colorAxis       = "#4a5568"
	colorGrid       = "#e2e8f0"
)

// exclusionChart draws each surface's time-to-exclusion interval on a time
// axis starting at the revocation request, with each surface's SLO.
type exclusionChart struct {
	surfaces []SurfaceEvidence
	ack      *Seconds
}

const (
	chartWidth  = 960
	labelWidth  = 110
	plotRight   = 920
	rowHeight   = 56
	chartTop    = 34
	chartBottom = 40
)

func (c exclusionChart) svg() string {
	if len(c.surfaces) == 0 {
		return ""
	}
	span := c.span()
	x := func(d time.Duration) float64 {
		return labelWidth + float64(d)/float64(span)*(plotRight-labelWidth)
	}
	height := chartTop + rowHeight*len(c.surfaces) + chartBottom
	plotBottom := chartTop + rowHeight*len(c.surfaces)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" id="exclusion-chart" viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-label="Time to exclusion per surface">`,
		chartWidth, height, chartWidth, height)
	b.WriteString(`<title>Time to exclusion per surface, from the revocation request</title>`)
	for _, tick := range ticks(span) {
		tx := x(tick)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s" stroke-width="1"/>`, tx, chartTop, tx, plotBottom, colorGrid)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle" font-size="12" fill="%s">%s</text>`,
			tx, plotBottom+18, colorAxis, esc(format.HumanDuration(tick)))
	}
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s" stroke-width="2"/>`, x(0), chartTop-8, x(0), plotBottom, colorAxis)
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" font-size="12" fill="%s">revocation requested (0)</text>`, x(0)+4, chartTop-14, colorAxis)
	if c.ack != nil && c.ack.Duration() > 0 {
		ax := x(c.ack.Duration())
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s" stroke-width="1" stroke-dasharray="2 3"/>`, ax, chartTop, ax, plotBottom, colorAxis)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" font-size="11" fill="%s">acknowledged %s</text>`,
			ax+4, plotBottom+32, colorAxis, esc(humanOffset(c.ack)))
	}
	for i, s := range c.surfaces {
		c.row(&b, s, chartTop+rowHeight*i, x)
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="12" fill="%s">time after revocation</text>`, plotRight-130, height-4, colorAxis)
	b.WriteString(`</svg>`)
	return b.String()
}

// row draws one surface: its interval (or right-censored bar) and its SLO.
func (c exclusionChart) row(b *strings.Builder, s SurfaceEvidence, top int, x func(time.Duration) float64) {
	mid := float64(top) + rowHeight/2
	fmt.Fprintf(b, `<text x="8" y="%.1f" font-size="14" font-weight="600" fill="#1a202c">%s</text>`, mid+5, esc(s.Surface))
	barTop := mid - 9
	label := humanInterval(s.Lower, s.Upper)
	switch {
	case s.Upper != nil:
		lo := time.Duration(0)
		if s.Lower != nil {
			lo = s.Lower.Duration()
		}
		x0, x1 := x(lo), x(s.Upper.Duration())
		// A point interval still shows as a visible bar.
		w := math.Max(x1-x0, 4)
		fmt.Fprintf(b, `<rect class="interval" x="%.1f" y="%.1f" width="%.1f" height="18" fill="%s"><title>%s: excluded within %s</title></rect>`,
			x0, barTop, w, colorInterval, esc(s.Surface), esc(label))
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" font-size="12" fill="#1a202c">%s</text>`, x0+w+6, barTop+14, esc(label))
	case s.Lower != nil:
		x0 := x(s.Lower.Duration())
		fmt.Fprintf(b, `<rect class="censored" x="%.1f" y="%.1f" width="%.1f" height="18" fill="%s"><title>%s: still visible after %s</title></rect>`,
			x0, barTop, math.Max(plotRight-x0, 4), colorCensored, esc(s.Surface), esc(label))
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" font-size="12" fill="#1a202c" text-anchor="end">%s (not excluded)</text>`, float64(plotRight)-4, barTop-4, esc(label))
	default:
		fmt.Fprintf(b, `<text x="%d" y="%.1f" font-size="12" fill="%s">no bounds established</text>`, labelWidth+8, barTop+14, colorAxis)
	}
	sx := x(s.SLO.Duration())
	fmt.Fprintf(b, `<line class="slo" x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s" stroke-width="3"><title>SLO %s</title></line>`,
		sx, top+6, sx, top+rowHeight-6, colorSLO, esc(format.HumanDuration(s.SLO.Duration())))
	fmt.Fprintf(b, `<text x="%.1f" y="%d" font-size="11" fill="%s" text-anchor="middle">SLO %s</text>`,
		sx, top+4, colorSLO, esc(format.HumanDuration(s.SLO.Duration())))
}

// span is the axis length: the largest value drawn, with room for labels.
func (c exclusionChart) span() time.Duration {
	var m time.Duration
	if c.ack != nil {
		m = c.ack.Duration()
	}
	for _, s := range c.surfaces {
		m = max(m, s.SLO.Duration())
		if s.Lower != nil {
			m = max(m, s.Lower.Duration())
		}
		if s.Upper != nil {
			m = max(m, s.Upper.Duration())
		}
	}
	if m <= 0 {
		return time.Second
	}
	return m * 5 / 4
}

// ticks are round values from 0 up to span, about six of them.
func ticks(span time.Duration) []time.Duration {
	step := niceStep(span / 6)
	var out []time.Duration
	for t := time.Duration(0); t <= span; t += step {
		out = append(out, t)
	}
	return out
}

// niceStep rounds d up to 1, 2 or 5 times a power of ten of milliseconds,
// or to a whole number of minutes people read easily.
func niceStep(d time.Duration) time.Duration {
	if d >= time.Minute {
		for _, m := range []time.Duration{1, 2, 5, 10, 15, 30, 60, 120, 240, 480} {
			if step := m * time.Minute; step >= d {
				return step
			}
		}
		return d.Round(time.Hour)
	}
	for p := time.Millisecond; ; p *= 10 {
		for _, f := range []time.Duration{1, 2, 5} {
			if step := f * p; step >= d {
				return step
			}
		}
	}
}

// ratioChart draws each persona's utility and disclosure rate on [0, 1];
// an undefined ratio is an empty outline saying so, never a zero bar.
type ratioChart struct{ rows []PersonaRow }

func (c ratioChart) svg() string {
	if len(c.rows) == 0 {
		return ""
	}
	const left, right, row, top = 180, 900, 52, 24
	height := top + row*len(c.rows) + 30
	x := func(v float64) float64 { return left + v*(right-left) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" id="persona-chart" viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-label="Utility and disclosure rate per persona">`,
		chartWidth, height, chartWidth, height)
	b.WriteString(`<title>Utility and disclosure rate per persona</title>`)
	for _, v := range []float64{0, 0.25, 0.5, 0.75, 1} {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s"/>`, x(v), top, x(v), top+row*len(c.rows), colorGrid)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" font-size="12" text-anchor="middle" fill="%s">%g</text>`, x(v), height-10, colorAxis, v)
	}
	fmt.Fprintf(&b, `<rect x="%d" y="4" width="12" height="12" fill="%s"/><text x="%d" y="14" font-size="12" fill="%s">utility</text>`,
		left, colorUtility, left+16, colorAxis)
	fmt.Fprintf(&b, `<rect x="%d" y="4" width="12" height="12" fill="%s"/><text x="%d" y="14" font-size="12" fill="%s">disclosure rate</text>`,
		left+90, colorDisclosure, left+106, colorAxis)
	for i, p := range c.rows {
		y := top + row*i
		fmt.Fprintf(&b, `<text x="8" y="%d" font-size="13" font-weight="600" fill="#1a202c">%s</text>`, y+28, esc(orNone(p.Persona)))
		ratioBar(&b, p.ratio(scoring.FigureUtility), float64(y+8), x, colorUtility)
		ratioBar(&b, p.ratio(scoring.FigureDisclosureRate), float64(y+28), x, colorDisclosure)
	}
	b.WriteString(`</svg>`)
	return b.String()
}

func ratioBar(b *strings.Builder, r Ratio, y float64, x func(float64) float64, color string) {
	var v float64
	if r.Value != nil {
		_, err := fmt.Sscan(*r.Value, &v)
		if err != nil {
			r.Value = nil
		}
	}
	if r.Value == nil {
		fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="60" height="14" fill="none" stroke="%s" stroke-dasharray="3 2"/>`, x(0), y, colorAxis)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" font-size="11" fill="%s">%s</text>`, x(0)+66, y+11, colorAxis, esc(humanRatio(r)))
		return
	}
	w := math.Max(x(v)-x(0), 1)
	fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="14" fill="%s"/>`, x(0), y, w, color)
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" font-size="11" fill="#1a202c">%s</text>`, x(0)+w+6, y+11, esc(humanRatio(r)))
}

func esc(s string) string { return html.EscapeString(s) }
