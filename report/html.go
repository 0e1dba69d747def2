package report

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"net/url"
	"path/filepath"
	"strings"
)

//go:embed page.html.tmpl
var pageText string

var page = template.Must(template.New("page").Funcs(template.FuncMap{
	"usd":  func(v float64) string { return fmt.Sprintf("$%.4f", v) },
	"pct":  func(v float64) string { return fmt.Sprintf("%.0f%%", v*100) },
	"join": strings.Join,
	"add":  func(a, b int) int { return a + b },
	// The hrefs are built by href from url.URL: a relative path or file:.
	"safeURL": func(s string) template.URL { return template.URL(s) },
	"kilo":    kilo,
	"share": func(part, whole float64) string {
		if whole <= 0 {
			return "0"
		}
		return fmt.Sprintf("%.1f", 100*part/whole)
	},
}).Parse(pageText))

// Sections are the page's section ids, in order: a test (or a tool)
// finds each part of the report by its id.
var Sections = []string{"summary", "problems", "context", "timeline", "cost", "threads", "cache",
	"verdicts", "questions", "inbox", "tools", "workbench", "steps", "documents"}

// Render writes the page for r to w. pageDir is the folder the page will
// be in: the links to the documents are relative to it.
func Render(w io.Writer, r *Report, pageDir string) error {
	docs := make([]Document, len(r.Documents))
	for i, d := range r.Documents {
		d.Href = href(pageDir, d.Path)
		docs[i] = d
	}
	view := struct {
		*Report
		Docs                 []Document
		ContextSVG, StepsSVG template.HTML
		Sections             []string
	}{r, docs, contextChart(r), timelineChart(r), Sections}
	if err := page.Execute(w, view); err != nil {
		return fmt.Errorf("report: render the page: %w", err)
	}
	return nil
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
