package app

// flower workers, flower worker --drain and flower runs prune as a person
// sees them (issue 35, points 1 and 6): the built binary on a terminal, in
// English and Chinese, 80 and 160 columns. The workers' rows are written
// as the workers write them; the team tests run real workers.

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/flowerrun/flower/internal/pgtest"
	"github.com/flowerrun/flower/internal/screen"
	"github.com/flowerrun/flower/team"
)

func TestWorkersDrainAndPruneOnATerminal(t *testing.T) {
	t.Parallel()
	for _, l := range locales {
		for _, cols := range []uint16{80, 160} {
			t.Run(fmt.Sprintf("%s/%d", l.name, cols), func(t *testing.T) {
				ctx := context.Background()
				t1 := func(k string) string { return texts[k][map[bool]int{false: 0, true: 1}[l.english]] }
				db := pgtest.Database(t)
				env := hermeticEnv(t, l.locale, "FLOWER_DATABASE_URL="+db)
				tm, err := team.Open(ctx, db)
				if err != nil {
					t.Fatal(err)
				}
				defer tm.Close()
				conn, err := pgx.Connect(ctx, db)
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close(ctx)
				exec := func(q string, args ...any) {
					t.Helper()
					if _, err := conn.Exec(ctx, q, args...); err != nil {
						t.Fatalf("%s: %v", q, err)
					}
				}

				p := startPTYCols(t, cols, env, "workers")
				if code := p.wait(t); code != 0 {
					t.Fatalf("workers: exit %d\n%s", code, p.screen())
				}
				p.expectFlat(t, fmt.Sprintf(t1("teamNoWorkers"), "flower"))

				// r1 is held by a worker (its job running), r2 waits.
				for _, req := range []string{"task one", "task two"} {
					if _, err := tm.Submit(ctx, team.Submission{Request: req, Repo: "/srv/repo.git"}); err != nil {
						t.Fatal(err)
					}
				}
				long := "machine-a-with-a-rather-long-host-name"
				exec(`update team_runs set state = 'running', host = $1 where id = 1`, long)
				exec(`update river_job set state = 'running', attempt = 1, attempted_at = now(), attempted_by = array[$1] where id = (select job_id from team_runs where id = 1)`, long)
				const version = "v0.9.0+0123456789ab-dirty"
				for _, w := range []struct {
					name, state string
					heardAgo    int // seconds
					drain, skew int
				}{
					{long, "working", 1, 0, 0},
					{"machine-b", "working", 2, 0, 0},
					{"machine-c", "working", 600, 0, 0},
					{"machine-d", "broken: its --dir /srv/flower cannot be written (read-only file system)", 3, 0, 0},
					{"machine-e", "stopped", 900, 1, 0},
					{"machine-f", "draining", 1, 1, 0},
					{"machine-g", "working", 2, 0, 300},
				} {
					var drain any
					if w.drain > 0 {
						drain = time.Now()
					}
					// What two workers pass their runs (--pass-env): the
					// live one's is noted, the gone one's is not.
					pass := []string{}
					if w.name == "machine-b" || w.name == "machine-e" {
						pass = []string{"GOPROXY", "NPM_CONFIG_REGISTRY"}
					}
					exec(`insert into team_workers (name, host, pid, version, rescue_seconds, concurrency, started, heartbeat, state, drain_requested_at, clock_skew_seconds, pass_env)
						values ($1, $1 || '.example.com', 4242, $2, 120, 2, now() - interval '3 hours', now() - make_interval(secs => $3), $4, $5, $6, $7)`,
						w.name, version, w.heardAgo, w.state, drain, w.skew, pass)
				}

				p = startPTYCols(t, cols, env, "workers")
				if code := p.wait(t); code != 0 {
					t.Fatalf("workers: exit %d\n%s", code, p.screen())
				}
				raw := p.screen()
				t.Logf("flower workers at %d columns:\n%s", cols, raw)
				var lines []string
				for _, line := range rawLines(raw) {
					if line != "" {
						lines = append(lines, line)
					}
				}
				// The header's first six columns at least (the version
				// gives way on a narrow terminal).
				header := strings.Split(t1("teamWorkersHeader"), "\t")
				if got := strings.Fields(lines[0]); len(lines) < 8 || len(got) < 6 || strings.Join(got[:6], " ") != strings.Join(header[:6], " ") {
					t.Fatalf("want the header and seven workers, one line each:\n%s", strings.Join(lines, "\n"))
				}
				if cols >= 160 && !strings.Contains(lines[1], version) {
					t.Errorf("a wide terminal shows the version:\n%s", lines[1])
				}
				starts := fieldStarts(lines[0])
				for i, line := range lines {
					if w := screen.Columns(line); w > int(cols) {
						t.Errorf("a line %d columns wide on a terminal of %d:\n%s", w, cols, line)
					}
					if i > 0 && i < 8 {
						if got := fieldStarts(line); len(got) < 5 || fmt.Sprint(got[:5]) != fmt.Sprint(starts[:5]) {
							t.Errorf("columns do not line up: the header's start at %v, line %d's at %v:\n%s\n%s", starts, i, got, lines[0], line)
						}
					}
				}
				// Live workers first, by name; the gone one last.
				want := []struct{ name, state, more string }{
					{long, t1("teamWorkerState_working"), "1/2 r1"},
					{"machine-b", t1("teamWorkerState_idle"), "0/2"},
					{"machine-c", t1("teamWorkerState_silent"), fmt.Sprintf(t1("teamAgo"), "10m")},
					{"machine-d", t1("teamWorkerState_broken"), "0/2"},
					{"machine-f", t1("teamWorkerState_draining"), "0/2"},
					{"machine-g", t1("teamWorkerState_idle"), "0/2"},
					{"machine-e", t1("teamWorkerState_drained"), fmt.Sprintf(t1("teamAgo"), "15m")},
				}
				for i, w := range want {
					line := lines[i+1]
					name := w.name
					if screen.Columns(name) > starts[1]-2 {
						name = name[:10] // cut to fit, the rest of the line whole
					}
					if !strings.HasPrefix(line, name) || !strings.Contains(line, w.state) || !strings.Contains(line, w.more) {
						t.Errorf("line %d is not %s %s %s:\n%s", i+1, w.name, w.state, w.more, line)
					}
				}
				notes := strings.Join(lines[8:], "\n")
				for _, s := range []string{
					fmt.Sprintf(t1("teamWorkerBrokenNote"), "machine-d", "its --dir /srv/flower"),
					fmt.Sprintf(t1("teamClockAhead"), "machine-g", "5m0s"),
					fmt.Sprintf(t1("teamWorkerPassesNote"), "machine-b", "GOPROXY, NPM_CONFIG_REGISTRY"),
				} {
					s = screen.Cut(s, int(cols)-1)
					s = strings.TrimSuffix(s, "…")
					if !strings.Contains(notes, s[:min(len(s), 40)]) {
						t.Errorf("the notes do not say %q:\n%s", s, notes)
					}
				}
				if strings.Contains(notes, fmt.Sprintf(t1("teamWorkerPassesNote"), "machine-e", "GOPROXY")[:20]) {
					t.Errorf("the notes say what a gone worker passed its runs:\n%s", notes)
				}
				if !strings.Contains(notes, "machine-c") {
					t.Errorf("the notes do not say machine-c is silent:\n%s", notes)
				}
				checkLanguage(t, l.english, raw)

				// A drain: an unknown name lists the names; a gone worker
				// is said to be gone; a live one is asked.
				p = startPTYCols(t, cols, env, "worker", "--drain", "machine-x")
				if code := p.wait(t); code != ExitFailure {
					t.Errorf("worker --drain machine-x: exit %d, want %d", code, ExitFailure)
				}
				p.expectFlat(t, fmt.Sprintf(t1("teamDrainUnknown"), "machine-x",
					strings.Join([]string{long, "machine-b", "machine-c", "machine-d", "machine-f", "machine-g", "machine-e"}, ", "), "flower"))
				p = startPTYCols(t, cols, env, "worker", "--drain", "machine-e")
				if code := p.wait(t); code != ExitFailure {
					t.Errorf("worker --drain machine-e: exit %d, want %d", code, ExitFailure)
				}
				gone := strings.SplitN(t1("teamDrainGone"), "%s", 3)
				p.expectFlat(t, fmt.Sprintf(gone[0]+"%s"+gone[1], "machine-e"))
				p.expectFlat(t, gone[2])
				p = startPTYCols(t, cols, env, "worker", "--drain", long)
				if code := p.wait(t); code != 0 {
					t.Fatalf("worker --drain: exit %d\n%s", code, p.screen())
				}
				p.expectFlat(t, fmt.Sprintf(t1("teamDrainAsked"), long, "r1", "30s", "flower"))
				checkLanguage(t, l.english, p.screen())
				ws, err := tm.Workers(ctx)
				if err != nil || ws[0].Name != long || ws[0].State != team.WorkerDraining || ws[0].DrainRequested.IsZero() {
					t.Errorf("after the drain request the worker is %+v (err %v)", ws[0], err)
				}

				// Prune: a bad age, a running run named, then the ended.
				p = startPTYCols(t, cols, env, "runs", "prune", "--ended-before", "3 weeks")
				if code := p.wait(t); code != ExitUsage {
					t.Errorf("prune --ended-before '3 weeks': exit %d, want %d", code, ExitUsage)
				}
				p.expectFlat(t, fmt.Sprintf(t1("teamPruneAge"), "3 weeks"))
				p = startPTYCols(t, cols, env, "runs", "prune", "r1")
				if code := p.wait(t); code != ExitFailure {
					t.Errorf("prune r1 (running): exit %d, want %d", code, ExitFailure)
				}
				p.expectFlat(t, fmt.Sprintf(t1("teamPruneLive"), "r1", t1("teamState_running"), "flower", "r1"))
				if _, err := tm.Cancel(ctx, 2); err != nil {
					t.Fatal(err)
				}
				p = startPTYCols(t, cols, env, "runs", "prune", "--ended-before", "0s")
				if code := p.wait(t); code != 0 {
					t.Fatalf("prune: exit %d\n%s", code, p.screen())
				}
				pruned, _, _ := strings.Cut(t1("teamPruned"), "%d 行")
				pruned, _, _ = strings.Cut(pruned, "%d rows")
				p.expectFlat(t, strings.TrimSpace(fmt.Sprintf(pruned, 1, "r2")))
				for _, line := range rawLines(p.screen()) {
					if w := screen.Columns(line); w > int(cols) {
						t.Errorf("a line %d columns wide on a terminal of %d:\n%s", w, cols, line)
					}
				}
				checkLanguage(t, l.english, p.screen())
				if runs, err := tm.Runs(ctx, team.RunFilter{}); err != nil || len(runs) != 1 || runs[0].ID != 1 {
					t.Errorf("after the prune the runs are %v (err %v), want r1 alone", runs, err)
				}
			})
		}
	}
}
