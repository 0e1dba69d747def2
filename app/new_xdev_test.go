package app

import (
	"fmt"
	"github.com/flowerrun/flower/internal/testenv"
	"os"
	"path/filepath"
	"testing"

	"github.com/creack/pty"
	"github.com/flowerrun/flower"
	"github.com/flowerrun/flower/claude/claudetest"
	"github.com/flowerrun/flower/internal/demo"
)

// flower --new with the run directory on another file system than the
// workbench: the old lineage and brief are archived and a new request
// starts, on a terminal, in English and Chinese, at 80 and 160 columns.
func TestNewArchivesAcrossFileSystemsThroughTheBinary(t *testing.T) {
	t.Parallel()
	for _, lang := range []string{"en", "zh"} {
		for _, cols := range []uint16{80, 160} {
			t.Run(fmt.Sprintf("%s/%d", lang, cols), func(t *testing.T) {
				ws, runDir := t.TempDir(), testenv.OtherFileSystemDir(t)
				names := flower.StarterNamesFor(flower.Lang(lang))
				notes := filepath.Join(ws, ".flower", "notes")
				if err := os.MkdirAll(notes, 0o755); err != nil {
					t.Fatal(err)
				}
				brief := "## Goal\nold\n\n## Acceptance criteria\n- ls\n\n## Boundaries\nnone\n\n## Unknowns and assumptions\nnone\n"
				if err := os.WriteFile(filepath.Join(notes, names.Brief), []byte(brief), 0o644); err != nil {
					t.Fatal(err)
				}
				if err := flower.OpenLineage(runDir, ws).Remember(names.Work, "aaaaaaaa-bbbb-cccc-dddd-000000000001"); err != nil {
					t.Fatal(err)
				}
				srv := starterServer(t, ws, claudetest.Script{}, nil)
				p := startPTYSize(t, flowerBin, binEnv(t, srv), &pty.Winsize{Rows: 40, Cols: cols},
					"-w", ws, "-r", runDir, "--lang", lang, "--timeout", "0", "--new", demo.TextsFor(flower.Lang(lang)).Ask)
				// The clarify step's rule: the archive is done and the new
				// request has started.
				p.expect(t, "== "+names.Clarify+" ")
				dirs, _ := filepath.Glob(filepath.Join(notes, "archive", "*"))
				if len(dirs) != 1 {
					t.Fatalf("archive folders %v:\n%s", dirs, p.screen())
				}
				for _, name := range []string{flower.LineageName, names.Brief} {
					if _, err := os.Stat(filepath.Join(dirs[0], name)); err != nil {
						t.Errorf("%s not archived: %v\n%s", name, err, p.screen())
					}
				}
				// The run directory's lineage, if the new run wrote one
				// already, is the new run's.
				if sid := flower.OpenLineage(runDir, ws).Steps()[names.Work]; sid != "" {
					t.Errorf("the old lineage is still in the run directory: work %s", sid)
				}
				if got := flower.OpenLineage(dirs[0], ws).Steps()[names.Work]; got != "aaaaaaaa-bbbb-cccc-dddd-000000000001" {
					t.Errorf("the archived lineage holds %q", got)
				}
			})
		}
	}
}
