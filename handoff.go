package flower

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/doc"
	"github.com/flowerrun/flower/event"
	"github.com/flowerrun/flower/workbench"
)

// writeHandoff has the session write its handoff document (forced: the
// context cannot even hold that turn, so a degraded one is built at once;
// one that lost a required section keeps the others, see doc.Handoff.Mend),
// keeps it in the workbench's notes and reports whether it is degraded.
func (s *stepRun) writeHandoff(ctx context.Context, forced bool) (*doc.Handoff, bool) {
	rt, r := s.rt, s.r
	h := rt.handoff
	s.emit(event.New(event.Handoff, fmt.Sprintf(s.texts().writing, kilo(s.watermark), kilo(h.Window)),
		map[string]any{"phase": "writing", "step": s.step, "context": s.watermark, "window": h.Window}))
	var hd *doc.Handoff
	why := ""
	if forced {
		why = s.texts().tooFull
	} else {
		hd, why = s.handoffTurn(ctx)
	}
	if why != "" {
		if hd == nil {
			hd = doc.Degraded(rt.lang, s.step, s.prompt, why)
		}
		r.Errors = append(r.Errors, fmt.Sprintf(s.texts().degraded, why))
	}
	hd.Step = s.step
	path := ""
	if wb := rt.workbench; wb != nil {
		path = s.keepHandoff(wb, hd)
	}
	s.emit(event.New(event.Handoff, fmt.Sprintf(s.texts().done, s.step), map[string]any{
		"phase": "done", "step": s.step, "context": s.watermark, "window": h.Window,
		"degraded": why != "", "path": path,
		"sections": map[string]any{"doing": hd.Doing, "decided": hd.Decided, "deadends": hd.Deadends, "next": hd.Next},
	}))
	return hd, why != ""
}

// handoffTurn asks the session itself for its handoff: one more turn on the
// same session, with no budget cap (the document must get written; its
// cost still counts), no UI events and no threshold. It returns the parsed
// document, or why it could not be had, or both: a document that lost a
// required section, mended, and what it lost.
func (s *stepRun) handoffTurn(ctx context.Context) (*doc.Handoff, string) {
	rt, r := s.rt, s.r
	spec := s.spec
	spec.MaxBudgetUSD = 0
	opts, err := s.options(spec, r.SessionID, false, "")
	if err != nil {
		return nil, errorType(err)
	}
	scratch := NewStepResult(s.step)
	a := scratch.BeginAttempt()
	a.Lang = rt.lang
	prompt := rt.prompts.HandoffPrompt(kilo(s.watermark), kilo(rt.handoff.Window))
	err = s.session(ctx, opts, prompt, nil, func(m claude.Message) bool {
		a.Observe(m)
		return false
	})
	a.Finish(err)
	r.CostUSD += scratch.CostUSD
	r.NumTurns += scratch.NumTurns
	if !scratch.OK {
		if err != nil {
			return nil, errorType(err)
		}
		return nil, s.texts().errorResult
	}
	hd := doc.ParseHandoff(scratch.Text)
	if missing := hd.Missing(rt.lang); len(missing) > 0 {
		why := s.texts().missing + strings.Join(missing, "/")
		if hd.Empty() {
			return nil, why
		}
		// Keep what the session did write; fill only what it lost.
		hd.Mend(rt.lang, s.step, s.prompt, why)
		return hd, why
	}
	return hd, ""
}

// keepHandoff writes the document to notes/, moving an earlier one of the
// same step to the archive first. It returns the path, or "" on failure
// (the successor still gets the document through its prompt).
func (s *stepRun) keepHandoff(wb *workbench.Workbench, hd *doc.Handoff) string {
	t := s.texts()
	name := safeStepName(s.step)
	path := filepath.Join(wb.Notes(), t.handoffFile+"-"+name+".md")
	if _, err := os.Stat(path); err == nil {
		archive := filepath.Join(wb.Notes(), "archive", t.handoffFile)
		if err := os.MkdirAll(archive, 0o755); err == nil {
			dst := uniquePath(filepath.Join(archive, name+"-"+time.Now().Format("20060102-150405")), ".md")
			if err := os.Rename(path, dst); err != nil {
				slog.Warn("flower: earlier handoff not archived", "path", path, "err", err)
			}
		}
	}
	if err := hd.Write(s.rt.lang, path); err != nil {
		slog.Warn("flower: handoff not written to the workbench", "path", path, "err", err)
		return ""
	}
	return path
}

// uniquePath is base+ext, or base-2+ext, base-3+ext… the first that does
// not exist: two handoffs in one second must not overwrite each other.
func uniquePath(base, ext string) string {
	p := base + ext
	for i := 2; ; i++ {
		if _, err := os.Lstat(p); errors.Is(err, os.ErrNotExist) {
			return p
		}
		p = fmt.Sprintf("%s-%d%s", base, i, ext)
	}
}

// safeStepName makes a step label usable as a file name.
func safeStepName(step string) string {
	s := strings.Map(func(r rune) rune {
		if strings.ContainsRune(`/\:*?"<>|`, r) {
			return -1
		}
		return r
	}, step)
	if strings.TrimSpace(s) == "" {
		return "step"
	}
	return s
}

// errorType names an error's type, the degraded handoff's "why".
func errorType(err error) string {
	t := errorText(err)
	if name, _, ok := strings.Cut(t, ": "); ok && name != "" && !strings.Contains(name, " ") {
		return name
	}
	return t
}

// kilo renders a token count as 152.0K (window sizes as 200K).
func kilo(n int) string {
	if n%1000 == 0 && n >= 100_000 {
		return fmt.Sprintf("%dK", n/1000)
	}
	return fmt.Sprintf("%.1fK", float64(n)/1000)
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
