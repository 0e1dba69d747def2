package app

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/flowerrun/flower"
	"github.com/flowerrun/flower/internal/screen"
	"github.com/flowerrun/flower/runstate"
)

// openDatabase opens the run's database when $FLOWER_DATABASE_URL names
// one (nil, nil otherwise): the run is taken for this process and what the
// database holds of it is laid out here before anything reads the run
// directory, so a run started on another machine wakes here as it was.
// A run restored here may speak another language than the locale's: the
// screen follows it from here on.
func (m *Command) openDatabase(ctx context.Context, ui *UI, cfg *Config) (*flower.Database, error) {
	url := strings.TrimSpace(m.getenv(flower.DatabaseEnv))
	if url == "" {
		return nil, nil
	}
	var lease time.Duration
	if v := strings.TrimSpace(m.getenv(flower.LeaseEnv)); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Second {
			return nil, usageErrorf(ui.T("leaseBad"), flower.LeaseEnv, v)
		}
		lease = d
	}
	db, err := flower.OpenDatabase(ctx, url, flower.DatabaseOptions{
		Workspace: cfg.Workspace, RunDir: cfg.RunDir, Isolate: cfg.Isolate,
		Run: strings.TrimSpace(m.getenv(flower.RunNameEnv)), Lease: lease,
	})
	var busy *runstate.BusyError
	switch {
	case errors.As(err, &busy):
		return nil, &exitError{code: ExitFailure, err: busyError(ui, busy)}
	case err != nil:
		return nil, &exitError{code: ExitFailure, err: fmt.Errorf("%w\n%s", err, ui.T("databaseHint"))}
	}
	cfg.Lang = m.language(&m.flags, cfg.RunDir)
	ui.Lang = cfg.Lang
	ui.Screen.Line(screen.Dim, fmt.Sprintf(ui.T("databaseOpen"), db.Name(), db.URL()))
	return db, nil
}

// busyError says, in the person's language, where the run is busy and
// when it is free should that machine be gone.
func busyError(ui *UI, b *runstate.BusyError) error {
	h := b.Holder
	msg := fmt.Sprintf(ui.T("databaseBusy"), b.Run, h.Host, h.PID, h.Since.Local().Format("2006-01-02 15:04:05"))
	if !h.Beat.IsZero() && h.TTL > 0 {
		ago := max(time.Since(h.Beat), 0).Round(time.Second)
		free := max(h.TTL-time.Since(h.Beat), 0).Round(time.Second)
		msg += "\n" + fmt.Sprintf(ui.T("databaseBusyFree"), ago, free)
	}
	return errors.New(msg)
}
