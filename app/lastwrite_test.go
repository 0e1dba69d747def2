package app

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/flowerrun/flower"
	"github.com/flowerrun/flower/internal/pgtest"
)

// A run whose last files cannot reach its database does not end as a
// success: `flower go` names the files that stayed on this machine, says
// to run again here, and exits 1. The database starts refusing the run's
// files once the run has started (a trigger that raises), so the last
// write-back fails for its whole bound.
func TestGoFailsWhenItsLastFilesDoNotReachTheDatabase(t *testing.T) {
	dbURL := pgtest.Database(t)
	ctx := context.Background()
	t.Setenv("ANTHROPIC_API_KEY", "sk-x")
	t.Setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:1") // the probe fails as a network problem: run anyway
	t.Setenv("FLOWER_CLAUDE", stubCLI(t))
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("CLAUDE_CONFIG_DIR", t.TempDir())
	for _, lang := range []flower.Lang{flower.English, flower.Chinese} {
		t.Run(string(lang), func(t *testing.T) {
			// Each language waits out the last write-back's bound: side by side.
			t.Parallel()
			ws := clones(t, 1)[0]
			run := "lastwrite-" + string(lang)
			refuse := "refuse_" + map[bool]string{true: "en", false: "zh"}[lang.IsEnglish()]
			var out bytes.Buffer
			m := &Command{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &out, Getenv: func(k string) string {
				switch k {
				case flower.DatabaseEnv:
					return dbURL
				case flower.RunNameEnv:
					return run
				}
				return os.Getenv(k)
			}}
			var late string
			m.Program = func(ctx context.Context, cfg Config, ui *UI) (*flower.Workflow, error) {
				conn, err := pgx.Connect(ctx, dbURL)
				if err != nil {
					return nil, err
				}
				defer conn.Close(ctx)
				_, err = conn.Exec(ctx, `create function `+refuse+`() returns trigger language plpgsql as $$
					begin
						if coalesce(new.run, old.run) = '`+run+`' then raise exception 'the disk is full'; end if;
						return coalesce(new, old);
					end $$;
					create trigger `+refuse+` before insert or update or delete on runstate_files for each row execute function `+refuse+`()`)
				if err != nil {
					return nil, err
				}
				late = filepath.Join(cfg.RunDir, "late-notes.md")
				if err := os.MkdirAll(cfg.RunDir, 0o700); err != nil {
					return nil, err
				}
				if err := os.WriteFile(late, []byte("written after the database stopped taking files\n"), 0o600); err != nil {
					return nil, err
				}
				return &flower.Workflow{}, nil
			}
			rctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
			defer cancel()
			code := m.Run(rctx, []string{"-w", ws, "--lang", string(lang), "build X"})
			screen := out.String()
			if code != ExitFailure {
				t.Fatalf("exit %d, want %d:\n%s", code, ExitFailure, screen)
			}
			t1 := func(k string) string { return text(lang, k) } // {flower} filled
			for _, want := range []string{strings.SplitN(t1("databaseNotWritten"), "%s", 2)[0] + run, late, "the disk is full",
				strings.SplitN(strings.SplitN(t1("databaseNotWritten"), "\n", 3)[2], "flower", 2)[0]} {
				if !strings.Contains(screen, want) {
					t.Errorf("the screen lacks %q:\n%s", want, screen)
				}
			}
			t.Logf("the screen's last lines:\n%s", lastLines(screen, 8))
			if _, err := os.Stat(late); err != nil {
				t.Errorf("the file that did not reach the database is gone here: %v", err)
			}
		})
	}
}
