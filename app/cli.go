package app

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/internal/cliinstall"
	"github.com/flowerrun/flower/internal/screen"
)

// findCLI is the one lookup of the Claude Code CLI that go, run, once and
// demo pass before anything is written: FLOWER_CLAUDE, flower's pinned
// copy in the user's cache, claude on PATH (a warning outside the tested
// range); with none, the pinned version is installed with npm into the
// cache, after one question on a terminal (yes installs without asking;
// off a terminal without it the error says to add --yes).
func (m *Command) findCLI(ctx context.Context, ui *UI, yes bool) (string, error) {
	env := cliinstall.Env{Getenv: m.getenv}
	f, err := env.Find(ctx)
	var none *cliinstall.NotFoundError
	if errors.As(err, &none) {
		ui.Printf(ui.T("cliNone"), none.Dir)
		if !yes {
			if !ui.Interactive {
				return "", fmt.Errorf(ui.T("cliNoTTY"), cliinstall.Version, none.Dir)
			}
			yes, rerr := ui.askYesNo(ctx, fmt.Sprintf(ui.T("cliAsk"), cliinstall.Version, cliinstall.DownloadMB, cliinstall.InstalledMB), true)
			if rerr != nil && ctx.Err() != nil {
				return "", rerr
			}
			if rerr != nil || !yes {
				return "", errors.New(ui.T("cliDeclined"))
			}
		}
		f, err = env.Install(ctx, func(s string) { ui.Screen.Line(screen.Dim, "- "+s) })
	}
	if err != nil {
		return "", err
	}
	if f.Untested {
		ui.Screen.Line(screen.Yellow, fmt.Sprintf(ui.T("cliUntested"), f.Path, f.Version,
			claude.OldestTestedCLIVersion, claude.NewestTestedCLIVersion))
	}
	return f.Path, nil
}

// isYes reads an answer to a yes/no question whose default is yes.
func isYes(line string) bool {
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "", "y", "yes", "是", "好", "嗯":
		return true
	}
	return false
}

// isExplicitYes reads an answer to a yes/no question whose default is no.
func isExplicitYes(line string) bool { return strings.TrimSpace(line) != "" && isYes(line) }
