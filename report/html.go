package report

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/flowerrun/flower"
)

//go:embed page.html.tmpl
var pageText string

// funcs are the page's functions; T, Tf, outcome, name and why are set
// per page, in its language (see Render).
var funcs = template.FuncMap{
	"usd": flower.USD,
	"pct": pct,
	// barWidth is a share as a CSS width.
	"barWidth": func(v float64) string { return fmt.Sprintf("%.1f%%", 100*min(max(v, 0), 1)) },
	"join":     strings.Join,
	"add":      func(a, b int) int { return a + b },
	// The hrefs are built by href from url.URL: a relative path or file:.
	"safeURL": func(s string) template.URL { return template.URL(s) },
	"kilo":    kilo,
	"tokens":  flower.TokenCount, // as the terminal writes them
	"dur":     duration,
	"share": func(part, whole float64) string {
		if whole <= 0 {
			return "0"
		}
		return fmt.Sprintf("%.1f", 100*part/whole)
	},
	"T":       func(string) string { return "" },
	"outcome": func(Outcome) string { return "" },
	"Tf":      func(string, ...any) string { return "" },
	"name":    func(string) string { return "" },
	"why":     func(string) string { return "" },
}

var page = template.Must(template.New("page").Funcs(funcs).Parse(pageText))

// Sections are the page's section ids, in order: a test (or a tool)
// finds each part of the report by its id. A section with nothing to show
// is left out of the page.
var Sections = []string{"summary", "problems", "context", "timeline", "cost", "threads", "cache",
	"verdicts", "questions", "inbox", "tools", "workbench", "steps", "documents"}

// Render writes the page for r to w, in the run's language. pageDir is
// the folder the page will be in: the links to the documents are relative
// to it. Every text of r is shown without its control and bidirectional
// characters (see forPage).
func Render(w io.Writer, r *Report, pageDir string) error {
	r = forPage(r)
	l := pageLang(r.Language)
	docs := make([]Document, len(r.Documents))
	anyDoc := false
	for i, d := range r.Documents {
		d.Href = href(pageDir, d.Path)
		docs[i] = d
		anyDoc = anyDoc || d.Exists
	}
	drivers := r.Cost.Drivers[:min(3, len(r.Cost.Drivers))]
	t, err := page.Clone()
	if err != nil {
		return fmt.Errorf("report: render the page: %w", err)
	}
	t.Funcs(template.FuncMap{
		"T":  func(key string) string { return tr(l, key) },
		"Tf": func(key string, a ...any) string { return trf(l, key, a...) },
		"outcome": func(o Outcome) string {
			key := "out_" + o.State
			switch {
			case o.State == StoppedByHuman && o.Budget:
				key = "out_budget"
			case o.State == Running && o.Step == "":
				// A wake whose first step has not ended: no step to name.
				key = "out_running_nostep"
			}
			s := trf(l, key, o.Step)
			switch {
			case o.Rounds == 1:
				s += trf(l, "rounds_ran", tr(l, "rounds_1"))
			case o.Rounds > 1:
				s += trf(l, "rounds_ran", trf(l, "rounds_n", o.Rounds))
			}
			return s
		},
		// why is an outcome's reason, the runtime's markers said in words.
		"why": func(reason string) string {
			switch reason {
			case flower.KilledBySignal:
				return tr(l, "why_killed")
			case flower.ErrInterrupted:
				return tr(l, "why_interrupted")
			}
			return reason
		},
		// name is a value of the data in the page's language: a role, a
		// kind, a verdict's state, a cost table's catch-all or round.
		"name": func(key string) string {
			if n, ok := strings.CutPrefix(key, "round "); ok {
				return trf(l, "round_n", atoi(n))
			}
			switch key {
			case OutsideRounds:
				return tr(l, "outside_rounds")
			case UnknownModel:
				return tr(l, "unknown_model")
			}
			return tr(l, key)
		},
	})
	view := struct {
		*Report
		Lang                 string
		Docs                 []Document
		AnyDoc               bool
		Drivers              []Driver
		ContextSVG, StepsSVG template.HTML
		ScaleTop             int
		HasOutside           bool
		HasUnknown           bool
		Sections             []string
	}{Report: r, Lang: l, Docs: docs, AnyDoc: anyDoc, Drivers: drivers, ContextSVG: contextChart(r, l), StepsSVG: timelineChart(r, l),
		ScaleTop: scaleTop(r), Sections: Sections}
	for _, a := range r.Cost.ByRound {
		view.HasOutside = view.HasOutside || a.Name == OutsideRounds
	}
	for _, a := range r.Cost.ByModel {
		view.HasUnknown = view.HasUnknown || a.Name == UnknownModel
	}
	if err := t.Execute(w, view); err != nil {
		return fmt.Errorf("report: render the page: %w", err)
	}
	return nil
}

// pct writes a share as a whole percentage; a share too small to round
// to 1% but not nothing is "<1%".
func pct(v float64) string {
	if v > 0 && v < 0.005 {
		return "<1%"
	}
	return fmt.Sprintf("%.0f%%", v*100)
}

// duration writes seconds as 45s, 3m 20s, 2h 05m.
func duration(s float64) string {
	d := time.Duration(s * float64(time.Second)).Round(time.Second)
	switch {
	case d >= time.Hour:
		return fmt.Sprintf("%dh %02dm", int(d.Hours()), int(d.Minutes())%60)
	case d >= time.Minute:
		return fmt.Sprintf("%dm %02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%ds", int(d.Seconds()))
}

// href is path relative to dir, as a URL path; the absolute file: URL when
// it has no relative form.
func href(dir, path string) string {
	if dir != "" {
		if rel, err := filepath.Rel(dir, path); err == nil {
			p := (&url.URL{Path: filepath.ToSlash(rel)}).EscapedPath()
			if first, _, _ := strings.Cut(p, "/"); strings.Contains(first, ":") {
				p = "./" + p // not a scheme
			}
			return p
		}
	}
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(path)}).String()
}
