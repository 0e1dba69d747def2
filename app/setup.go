package app

import (
	"context"
	"fmt"
	"github.com/flowerrun/flower/internal/screen"
	"os"

	"github.com/flowerrun/flower"
)

// runSetup is `flower setup`: the interactive configuration, probed before
// it is saved.
func (m *Command) runSetup(ctx context.Context, args []string) error {
	var g globals
	fs := newFlagSet("setup")
	g.register(fs)
	pos, err := m.parse(fs, m.setupUsage(m.argLang(args)), args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageErrorf(text(m.argLang(args), "setupArgs"), m.name(), pos[0])
	}
	if err := g.checkLang(); err != nil {
		return err
	}
	ui := m.newUI(m.language(&g, ""))
	defer ui.Screen.Close()
	path := flower.UserEnvPath()
	ui.Screen.Line(screen.Dim, protectionLine(ui))
	if !ui.Interactive {
		return fmt.Errorf(ui.T("setupNoTTY"), path)
	}
	reason := ui.T("setupNone")
	if _, err := os.Stat(path); err == nil {
		reason = ui.T("setupAgain")
	}
	if err := wizard(ctx, ui, reason, true); err != nil {
		return err
	}
	ui.Screen.Line(screen.Plain, ui.T("setupReady"))
	return nil
}
