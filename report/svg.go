package report

import (
	"fmt"
	"html"
	"html/template"
	"strings"
	"time"
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
)

// contextChart draws the main thread's context per turn against the
// handoff threshold and the window, handoffs marked.
func contextChart(r *Report) template.HTML {
	var b strings.Builder
	fmt.Fprintf(&b, `<svg id="context-chart" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="context per turn">`, chartW, chartH, chartW, chartH)
	b.WriteString(`<rect x="0" y="0" width="100%" height="100%" fill="#ffffff"/>`)
	top := r.HandoffAt
	for _, t := range r.Context {
		top = max(top, t.Tokens)
	}
	top = max(top, r.Window)
	if top == 0 {
		top = 1
	}
	ymax := float64(top) * 1.05
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
	for _, f := range []float64{0, 0.25, 0.5, 0.75, 1} {
		v := int(ymax * f)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" font-size="11" text-anchor="end" fill="#555">%s</text>`, padL-6, y(v)+4, kilo(v))
	}
	line := func(v int, color, label string) {
		if v <= 0 {
			return
		}
		fmt.Fprintf(&b, `<line class="limit" x1="%d" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-dasharray="6 4" stroke-width="1.5"/>`, padL, y(v), padL+pw, y(v), color)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="11" text-anchor="end" fill="%s">%s %s</text>`, padL+pw-4, y(v)-4, color, html.EscapeString(label), kilo(v))
	}
	line(r.Window, windowColor, "window")
	line(r.HandoffAt, thresholdColor, "handoff at")
	for i, t := range r.Context {
		if t.Handoff {
			fmt.Fprintf(&b, `<line class="handoff" x1="%.1f" y1="%d" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2"/>`, x(i), padT, x(i), padT+ph, handoffColor)
			fmt.Fprintf(&b, `<text x="%.1f" y="%d" font-size="11" fill="%s">handoff</text>`, x(i)+3, padT+10, handoffColor)
		}
	}
	if n > 0 {
		var pts []string
		for i, t := range r.Context {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(i), y(t.Tokens)))
		}
		fmt.Fprintf(&b, `<polyline class="watermark" fill="none" stroke="%s" stroke-width="3" points="%s"/>`, ContextLineColor, strings.Join(pts, " "))
		for i, t := range r.Context {
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="4" fill="%s"><title>turn %d · %s · %d tokens</title></circle>`, x(i), y(t.Tokens), ContextLineColor, t.N, html.EscapeString(t.Step), t.Tokens)
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" font-size="11" text-anchor="middle" fill="#555">main-thread turns (1–%d)</text>`, padL+pw/2, chartH-8, n)
	} else {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="13" text-anchor="middle" fill="#555">no main-thread turns in the session store</text>`, padL+pw/2, padT+ph/2)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) // every text in it is escaped above
}

// timelineChart draws each step as a bar over wall-clock time.
func timelineChart(r *Report) template.HTML {
	var steps []Step
	var t0, t1 time.Time
	for _, s := range r.Steps {
		if s.StartedAt.IsZero() {
			continue
		}
		end := s.EndedAt
		if end.IsZero() {
			end = r.Generated
		}
		if t0.IsZero() || s.StartedAt.Before(t0) {
			t0 = s.StartedAt
		}
		if end.After(t1) {
			t1 = end
		}
		steps = append(steps, s)
	}
	rowH := 18
	h := padT + padB + rowH*max(1, len(steps))
	var b strings.Builder
	fmt.Fprintf(&b, `<svg id="timeline-chart" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="steps over time">`, chartW, h, chartW, h)
	b.WriteString(`<rect x="0" y="0" width="100%" height="100%" fill="#ffffff"/>`)
	if len(steps) == 0 {
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="13" fill="#555">no timed steps in the manifest</text>`, padL, padT+14)
		b.WriteString(`</svg>`)
		return template.HTML(b.String()) // constant text
	}
	left := 160
	pw := float64(chartW - left - padR)
	span := t1.Sub(t0).Seconds()
	if span <= 0 {
		span = 1
	}
	x := func(t time.Time) float64 { return float64(left) + pw*t.Sub(t0).Seconds()/span }
	for i, s := range steps {
		end := s.EndedAt
		if end.IsZero() {
			end = r.Generated
		}
		yy := padT + i*rowH
		color := okColor
		switch {
		case !s.OK:
			color = failColor
		case s.Role == "judge":
			color = judgeColor
		}
		w := max(2, x(end)-x(s.StartedAt))
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="11" text-anchor="end" fill="#333">%s</text>`, left-6, yy+12, html.EscapeString(s.Label))
		fmt.Fprintf(&b, `<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s"><title>%s · %.2fs · $%.4f</title></rect>`, x(s.StartedAt), yy+2, w, rowH-5, color, html.EscapeString(s.Label), s.DurationS, s.CostUSD)
	}
	for _, m := range r.Timeline {
		if m.Kind == "step" || m.Kind == "session" || m.Time.IsZero() || m.Time.Before(t0) || m.Time.After(t1) {
			continue
		}
		color := thresholdColor
		if m.Kind == "handoff" {
			color = handoffColor
		}
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s" stroke-width="1.5"><title>%s: %s</title></line>`, x(m.Time), padT, x(m.Time), h-padB, color, html.EscapeString(m.Kind), html.EscapeString(m.Text))
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="11" fill="#555">%s</text>`, left, h-10, t0.Local().Format("2006-01-02 15:04:05"))
	fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="11" text-anchor="end" fill="#555">%s</text>`, chartW-padR, h-10, t1.Local().Format("15:04:05"))
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) // every text in it is escaped above
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
