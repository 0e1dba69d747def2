package report

import (
	"fmt"
	"html"
	"html/template"
	"slices"
	"strings"
	"time"

	"github.com/flowerrun/flower"
)

// The charts' colors. The context line's is used nowhere else on the page,
// so a screenshot can tell the line is drawn.
const (
	ContextLineColor = "#c2185b"
	thresholdColor   = "#ef6c00"
	windowColor      = "#757575"
	handoffColor     = "#6a1b9a"
	okColor          = "#2e7d32"
	failColor        = "#c62828"
	judgeColor       = "#1565c0"
)

// Chart geometry, in CSS pixels.
const (
	chartW, chartH = 1000, 260
	padL, padR     = 70, 20
	padT, padB     = 16, 34
	// legendH is the band above a chart that holds its legend.
	legendH = 22
)

// dotsUpTo is the most turns the context chart marks with a dot each;
// beyond it the dots would merge into a band, and the line alone is read.
const dotsUpTo = 80

// scaleTop is the context chart's top: the largest turn, and the handoff
// threshold and the window when they are within twice of it, so that the
// line fills the chart instead of lying flat under a far-off window.
func scaleTop(r *Report) int {
	top := 0
	for _, t := range r.Context {
		top = max(top, t.Tokens)
	}
	for _, v := range []int{r.HandoffAt, r.Window} {
		if v > 0 && (top == 0 || v <= 2*top) {
			top = max(top, v)
		}
	}
	return max(top, 1)
}

// legend draws a row of swatches and their labels at y.
func legend(b *strings.Builder, x, y int, items [][2]string) {
	for _, it := range items {
		fmt.Fprintf(b, `<rect class="swatch" x="%d" y="%d" width="14" height="10" fill="%s"/>`, x, y-9, it[0])
		fmt.Fprintf(b, `<text x="%d" y="%d" font-size="12" fill="#333">%s</text>`, x+18, y, html.EscapeString(it[1]))
		x += 30 + 7*len([]rune(it[1]))
	}
}

// contextChart draws the main thread's context per turn against the
// handoff threshold and the window, handoffs marked, with a legend.
func contextChart(r *Report, l string) template.HTML {
	var b strings.Builder
	fmt.Fprintf(&b, `<svg id="context-chart" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="%s">`,
		chartW, chartH+legendH, chartW, chartH+legendH, html.EscapeString(tr(l, "context")))
	b.WriteString(`<rect x="0" y="0" width="100%" height="100%" fill="#ffffff"/>`)
	items := [][2]string{{ContextLineColor, tr(l, "legend_context")}}
	top := scaleTop(r)
	if r.HandoffAt > 0 && r.HandoffAt <= top {
		items = append(items, [2]string{thresholdColor, tr(l, "legend_threshold")})
	}
	if r.Window > 0 && r.Window <= top {
		items = append(items, [2]string{windowColor, tr(l, "legend_window")})
	}
	handoffs := 0
	for _, t := range r.Context {
		if t.Handoff {
			handoffs++
		}
	}
	if handoffs > 0 {
		items = append(items, [2]string{handoffColor, tr(l, "legend_handoff")})
	}
	legend(&b, padL, 14, items)
	fmt.Fprintf(&b, `<g transform="translate(0,%d)">`, legendH)
	tick := niceStep(max(1, (top+3)/4))
	ymax := float64(tick * ((top + tick - 1) / tick))
	if ymax < float64(top)*1.05 {
		ymax += float64(tick)
	}
	n := len(r.Context)
	pw, ph := float64(chartW-padL-padR), float64(chartH-padT-padB)
	x := func(i int) float64 {
		if n <= 1 {
			return padL + pw/2
		}
		return padL + pw*float64(i)/float64(n-1)
	}
	y := func(v int) float64 { return padT + ph - ph*float64(v)/ymax }
	// axes and grid
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%.1f" stroke="#999"/>`, padL, padT, padL, padT+ph)
	fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#999"/>`, padL, padT+ph, padL+pw, padT+ph)
	for v := 0; float64(v) <= ymax; v += tick {
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#eee"/>`, padL+1, y(v), padL+pw, y(v))
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" font-size="11" text-anchor="end" fill="#555">%s</text>`, padL-6, y(v)+4, kilo(v))
	}
	limit := func(v int, color, label string) {
		if v <= 0 || v > top {
			return
		}
		fmt.Fprintf(&b, `<line class="limit" x1="%d" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-dasharray="6 4" stroke-width="1.5"/>`, padL, y(v), padL+pw, y(v), color)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="11" text-anchor="end" fill="%s">%s %s</text>`, padL+pw-4, y(v)-4, color, html.EscapeString(label), kilo(v))
	}
	limit(r.Window, windowColor, tr(l, "window"))
	limit(r.HandoffAt, thresholdColor, tr(l, "threshold"))
	for i, t := range r.Context {
		if t.Handoff {
			fmt.Fprintf(&b, `<line class="handoff" x1="%.1f" y1="%d" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2"/>`, x(i), padT, x(i), padT+ph, handoffColor)
		}
	}
	if n > 0 {
		var pts []string
		for i, t := range r.Context {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(i), y(t.Tokens)))
		}
		width := 3
		if n > dotsUpTo {
			width = 2
		}
		fmt.Fprintf(&b, `<polyline class="watermark" fill="none" stroke="%s" stroke-width="%d" stroke-linejoin="round" points="%s"/>`, ContextLineColor, width, strings.Join(pts, " "))
		if n <= dotsUpTo {
			for i, t := range r.Context {
				fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="4" fill="%s"><title>%s %d · %s · %d tokens</title></circle>`, x(i), y(t.Tokens), ContextLineColor, html.EscapeString(tr(l, "turn")), t.N, html.EscapeString(t.Step), t.Tokens)
			}
		}
		// x ticks: about ten, on round turn numbers
		step := max(1, niceStep(n/10))
		for i := 0; i < n; i += step {
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="11" text-anchor="middle" fill="#555">%d</text>`, x(i), padT+ph+14, i+1)
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" font-size="11" text-anchor="middle" fill="#555">%s (1–%d)</text>`, padL+pw/2, chartH-4, html.EscapeString(tr(l, "turns")), n)
	}
	b.WriteString(`</g></svg>`)
	return template.HTML(b.String()) // every text in it is escaped above
}

// niceStep rounds n up to 1, 2 or 5 times a power of ten.
func niceStep(n int) int {
	p := 1
	for {
		for _, m := range []int{1, 2, 5} {
			if m*p >= n {
				return m * p
			}
		}
		p *= 10
	}
}

// lane is a row of the timeline chart: one step name and role (its
// rounds, retries and judges' rows side by side).
type lane struct {
	name  string
	steps []Step
}

// timelineChart draws each step as a bar over wall-clock time, rows by
// step and role, one column per wake (each with its own time scale: the
// days between wakes are not drawn), the waits and handoffs as ticks.
func timelineChart(r *Report, l string) template.HTML {
	var lanes []*lane
	at := map[string]*lane{}
	type span struct{ t0, t1 time.Time }
	spans := map[int]*span{}
	var wakes []int
	for _, s := range r.Steps {
		if s.StartedAt.IsZero() {
			continue
		}
		end := s.EndedAt
		if end.IsZero() {
			end = r.Generated
		}
		name := labelRE.FindStringSubmatch(s.Label)[1]
		if s.Role == "judge" && s.Round > 0 {
			name += " · " + tr(l, "role_judge")
		}
		ln := at[name]
		if ln == nil {
			ln = &lane{name: name}
			at[name] = ln
			lanes = append(lanes, ln)
		}
		ln.steps = append(ln.steps, s)
		w := s.Wake
		if s.Aside {
			w = wakeAt(r, s.StartedAt)
		}
		sp := spans[w]
		if sp == nil {
			sp = &span{s.StartedAt, end}
			spans[w] = sp
			wakes = append(wakes, w)
		}
		if s.StartedAt.Before(sp.t0) {
			sp.t0 = s.StartedAt
		}
		if end.After(sp.t1) {
			sp.t1 = end
		}
	}
	slices.Sort(wakes)
	rowH, head := 20, legendH+22
	h := head + padB + rowH*max(1, len(lanes))
	var b strings.Builder
	fmt.Fprintf(&b, `<svg id="timeline-chart" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="%s">`, chartW, h, chartW, h, html.EscapeString(tr(l, "timeline")))
	b.WriteString(`<rect x="0" y="0" width="100%" height="100%" fill="#ffffff"/>`)
	if len(lanes) == 0 {
		b.WriteString(`</svg>`)
		return template.HTML(b.String()) // constant text
	}
	legend(&b, padL, 14, [][2]string{{okColor, tr(l, "legend_ok")}, {failColor, tr(l, "legend_fail")}, {judgeColor, tr(l, "legend_judge")},
		{thresholdColor, tr(l, "legend_wait")}, {handoffColor, tr(l, "legend_handoff")}})
	left, gap := 170, 14
	pw := float64(chartW-left-padR-gap*(len(wakes)-1)) / float64(len(wakes))
	col := map[int]int{}
	for i, w := range wakes {
		col[w] = i
		x0 := float64(left) + float64(i)*(pw+float64(gap))
		sp := spans[w]
		fmt.Fprintf(&b, `<rect class="wake-column" x="%.1f" y="%d" width="%.1f" height="%d" fill="#f7f7f5"/>`, x0, head, pw, rowH*len(lanes))
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" font-size="12" font-weight="600" fill="#333">%s</text>`, x0+2, head-6, html.EscapeString(trf(l, "wake_n", w)+" · "+duration(sp.t1.Sub(sp.t0).Seconds())))
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" font-size="11" fill="#555">%s</text>`, x0, h-10, sp.t0.Local().Format("01-02 15:04"))
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" font-size="11" text-anchor="end" fill="#555">%s</text>`, x0+pw, h-10, sp.t1.Local().Format("15:04"))
	}
	x := func(w int, t time.Time) float64 {
		sp := spans[w]
		total := sp.t1.Sub(sp.t0).Seconds()
		if total <= 0 {
			total = 1
		}
		return float64(left) + float64(col[w])*(pw+float64(gap)) + pw*t.Sub(sp.t0).Seconds()/total
	}
	for i, ln := range lanes {
		yy := head + i*rowH
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="12" text-anchor="end" fill="#333">%s</text>`, left-6, yy+14, html.EscapeString(ln.name))
		for _, s := range ln.steps {
			end := s.EndedAt
			if end.IsZero() {
				end = r.Generated
			}
			w := s.Wake
			if s.Aside {
				w = wakeAt(r, s.StartedAt)
			}
			color := okColor
			switch {
			case !s.OK:
				color = failColor
			case s.Role == "judge":
				color = judgeColor
			}
			bw := max(2, x(w, end)-x(w, s.StartedAt))
			fmt.Fprintf(&b, `<rect class="bar" x="%.1f" y="%d" width="%.1f" height="%d" fill="%s"><title>%s · %s · %s</title></rect>`,
				x(w, s.StartedAt), yy+3, bw, rowH-6, color, html.EscapeString(s.Label), duration(s.DurationS), flower.USD(s.CostUSD))
		}
	}
	for _, m := range r.Timeline {
		sp := spans[m.Wake]
		if m.Kind == "step" || m.Kind == "session" || m.Kind == "verdict" || m.Time.IsZero() || sp == nil || m.Time.Before(sp.t0) || m.Time.After(sp.t1) {
			continue
		}
		color := thresholdColor
		if m.Kind == "handoff" {
			color = handoffColor
		}
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s" stroke-width="1.5"><title>%s: %s</title></line>`,
			x(m.Wake, m.Time), head, x(m.Wake, m.Time), head+rowH*len(lanes), color, html.EscapeString(tr(l, "kind_"+m.Kind)), html.EscapeString(m.Text))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) // every text in it is escaped above
}

// wakeAt is the wake whose steps' time holds t (a side question's), the
// last one that started before it.
func wakeAt(r *Report, t time.Time) int {
	w := 0
	for _, s := range r.Steps {
		if !s.Aside && !s.StartedAt.IsZero() && !s.StartedAt.After(t) && s.Wake > w {
			w = s.Wake
		}
	}
	return max(w, 1)
}

// kilo writes tokens as 12k / 1.2M.
func kilo(n int) string {
	switch {
	case n >= 1_000_000:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n >= 1000:
		return fmt.Sprintf("%dk", n/1000)
	}
	return fmt.Sprint(n)
}
