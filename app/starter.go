package app

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/flowerrun/flower"
	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/human"
	"github.com/flowerrun/flower/internal/screen"
	"github.com/flowerrun/flower/store"
)

// StarterFlow is the program bare `flower` runs: the root's starter flow
// (clarify, goal, work rounds). A build that wants another default flow
// sets it before Main.
var StarterFlow Program = starterProgram

// StarterOptions maps go's command line onto the starter flow's options.
func (cfg Config) StarterOptions() flower.StarterOptions {
	o := flower.StarterOptions{
		Workspace: cfg.Workspace, RunDir: cfg.RunDir, New: cfg.New, Isolate: cfg.Isolate,
		ClarifyOnly: cfg.ClarifyOnly, NoGoal: cfg.NoGoal, Rounds: cfg.Rounds, JudgeCanRun: cfg.JudgeCanRun,
		Lang: cfg.Lang, NoBequest: cfg.NoBequest,
	}
	if cfg.MaxAsks >= 0 {
		n := cfg.MaxAsks
		o.MaxAsks = &n
	}
	switch {
	case cfg.AskTimeout <= 0:
		// --timeout 0: every question settled at once (the library's
		// zero means its default, so at once is spelled negative).
		o.Timeout = -1
	case cfg.AskTimeout == human.Forever:
		o.Timeout = human.Forever
	default:
		o.Timeout = cfg.AskTimeout
	}
	return o
}

// starterProgram is go's path: the wake state (waking unless --new); the
// request asked for when none was given (/new archives and asks again,
// Enter on a waking run continues); the wake banner; the starter flow.
func starterProgram(ctx context.Context, cfg Config, ui *UI) (*flower.Workflow, error) {
	o := cfg.StarterOptions()
	wake, err := flower.WakeState(o)
	if err != nil {
		return nil, err
	}
	waking := wake.Waking && !o.New
	if waking && o.ClarifyOnly {
		// The original ran clarify again as a silent no-op and counted a
		// wake; say that there is nothing to clarify, and how to start
		// another request (§13 #12).
		return nil, fmt.Errorf(ui.T("clarified"), wake.Brief)
	}
	ask := cfg.Request
	if ask == "" {
		req, err := ui.AskRequest(ctx, waking)
		if err != nil {
			return nil, err
		}
		if req.New {
			o.New, waking = true, false
			if req, err = ui.AskRequest(ctx, false); err != nil {
				return nil, err
			}
			if req.New {
				return nil, &exitError{code: ExitFailure, err: errorText(ui.Lang, "empty")}
			}
		}
		ask = req.Text
	}
	if waking {
		home, _ := os.UserHomeDir()
		ui.Screen.Line(screen.Cyan, WakeBanner(ui.Lang, cfg.Workspace, home, true, wake.Checks, workContext(ctx, wake, cfg.Workspace), wake.Woke+1))
	}
	return flower.StarterFlow(ask, o)
}

// workContext is the work session's last context size for the banner, 0
// when it is not known (no session yet, no database: one is never created
// just to look).
func workContext(ctx context.Context, wake flower.Wake, workspace string) int {
	id := wake.Steps[flower.StarterNamesFor(wake.Lang).Work]
	db := filepath.Join(wake.RunDir, "sessions.db")
	if _, err := os.Stat(db); err != nil || id == "" {
		return 0
	}
	s, err := store.Open(db)
	if err != nil {
		return 0
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	n, err := s.LastContext(ctx, claude.ProjectKey(workspace), id)
	if err != nil {
		return 0
	}
	return n
}
