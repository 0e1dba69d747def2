package team

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/runstate"
	"github.com/flowerrun/flower/runstate/pgrun"
	"github.com/flowerrun/flower/store"
	"github.com/flowerrun/flower/store/postgres"
	"github.com/flowerrun/flower/store/sqlite"
)

// StateName is the name of run id's state in the database (see
// flower.DatabaseOptions.Run): what its worker gives the run's process.
func StateName(id int64) string { return "team:" + RunName(id) }

// LayOut writes what the database holds of a run's run directory into
// runDir and of its workbench into workbench, for a reader (the report)
// on any machine; it takes nothing from the worker that holds the run.
func (t *Team) LayOut(ctx context.Context, id int64, runDir, workbench string) error {
	if _, err := t.Run(ctx, id); err != nil {
		return err
	}
	backend, err := pgrun.New(ctx, t.pool)
	if err != nil {
		return err
	}
	places := map[runstate.Root]string{runstate.RunDir: runDir, runstate.Workbench: workbench}
	n := 0
	err = backend.Files(ctx, StateName(id), func(f runstate.File) error {
		base, ok := places[f.Root]
		if !ok {
			return nil
		}
		// A stored path is the run's own writing: it stays under base.
		path := filepath.Join(base, filepath.FromSlash(f.Path))
		if rel, err := filepath.Rel(base, path); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(f.Path) {
			return fmt.Errorf("the run's stored file %q is outside its folder", f.Path)
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return err
		}
		n++
		return os.WriteFile(path, f.Data, 0o600)
	})
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("%s has no state in the database yet: no worker has started it (flower runs %s)", RunName(id), RunName(id))
	}
	return t.copySessions(ctx, id, filepath.Join(runDir, "sessions.db"))
}

// copySessions writes the run's transcripts, which its processes kept in
// the database's session store, into a SQLite store at path: the run
// directory's own store, as a run without a database has it, so that a
// reader of run directories (the report: the request, tokens, models,
// answers) sees the whole run.
func (t *Team) copySessions(ctx context.Context, id int64, path string) error {
	pg, err := postgres.Open(ctx, t.raw)
	if err != nil {
		return err
	}
	defer pg.Close()
	dst, err := sqlite.Open(path)
	if err != nil {
		return err
	}
	defer dst.Close()
	src := store.OneProject{Base: pg, Project: "run:" + StateName(id)}
	sessions, err := src.ListSessions(ctx, "")
	if err != nil {
		return err
	}
	for _, s := range sessions {
		subs, err := src.ListSubkeys(ctx, "", s.SessionID)
		if err != nil {
			return err
		}
		for _, sub := range append([]string{""}, subs...) {
			key := claude.SessionKey{ProjectKey: "run", SessionID: s.SessionID, Subpath: sub}
			entries, err := src.Load(ctx, key)
			if err != nil {
				return err
			}
			if err := dst.Append(ctx, key, entries); err != nil {
				return err
			}
		}
	}
	return nil
}
