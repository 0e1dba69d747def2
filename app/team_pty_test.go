package app

// The team's commands as a person sees them: the built binary on a
// terminal, in English and Chinese, 80 and 160 columns wide.

import (
	"context"
	"fmt"
	"io"
	"net"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/flowerrun/flower/internal/pgtest"
	"github.com/flowerrun/flower/internal/screen"
	"github.com/flowerrun/flower/team"
)

// rawLines are the lines the program wrote, colours dropped.
func rawLines(s string) []string {
	var out []string
	for _, l := range strings.Split(ansi.ReplaceAllString(s, ""), "\n") {
		out = append(out, strings.TrimRight(l, "\r "))
	}
	return out
}

// fieldStarts are the display columns where each field of a table line
// starts (fields are two or more spaces apart).
func fieldStarts(line string) []int {
	var starts []int
	col, spaces := 0, 2
	for _, r := range line {
		if r == ' ' {
			spaces++
		} else {
			if spaces >= 2 {
				starts = append(starts, col)
			}
			spaces = 0
		}
		col += screen.RuneWidth(r)
	}
	return starts
}

// A submit, the listing, a run's detail and an unusable database on a
// terminal: the run's name and how to follow it, every run in one line
// with its state in the person's language, columns that line up in
// Chinese too, nothing wider than the terminal, the password masked.
func TestTeamCommandsOnATerminal(t *testing.T) {
	t.Parallel()
	for _, l := range locales {
		for _, cols := range []uint16{80, 160} {
			t.Run(fmt.Sprintf("%s/%d", l.name, cols), func(t *testing.T) {
				ctx := context.Background()
				t1 := func(k string) string { return texts[k][map[bool]int{false: 0, true: 1}[l.english]] }
				db := pgtest.Database(t)
				repo := clones(t, 1)[0]
				env := hermeticEnv(t, l.locale, "FLOWER_DATABASE_URL="+db)
				request := "add a --json flag to the listing"
				if !l.english {
					request = "给列表加一个 --json 参数"
				}

				p := startPTYCols(t, cols, env, "submit", "--repo", repo, request)
				if code := p.wait(t); code != 0 {
					t.Fatalf("submit: exit %d\n%s", code, p.screen())
				}
				p.expectFlat(t, fmt.Sprintf(t1("teamSubmitted"), "r1", "flower/r1"))
				p.expectFlat(t, fmt.Sprintf(t1("teamFollow"), "flower", "r1", "flower", "r1", "flower", "r1"))
				checkLanguage(t, l.english, p.screen())

				// More runs, moved to other states as workers would.
				tm, err := team.Open(ctx, db)
				if err != nil {
					t.Fatal(err)
				}
				defer tm.Close()
				long := "rewrite the README's team setup section: the three commands, the database URL, and what happens when a machine dies mid-run"
				if !l.english {
					long = "重写 README 里团队设置那一节:三个命令、数据库地址,还有一台机器在运行中途挂掉时会发生什么,每一步都写清楚"
				}
				for _, req := range []string{long, "fix it \x1b]0;owned\x07\x1b[2J now", "task four", "task five"} {
					if _, err := tm.Submit(ctx, team.Submission{Request: req, Repo: repo, Budget: 5}); err != nil {
						t.Fatal(err)
					}
				}
				conn, err := pgx.Connect(ctx, db)
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close(ctx)
				parked := "failed 2 times on 2 workers:\nmachine-a: gitwork: the repository cannot be reached: " + repo + "-gone: no such repository; check the address and that this machine can read it\nmachine-b: the same"
				for _, q := range []string{
					`update team_runs set state = 'running', host = 'machine-a-4242', step = 'build', round = 2, cost_usd = 0.42 where id = 2`,
					`update team_runs set state = 'failed', host = 'machine-b-7', reason = $1, ended_at = now() where id = 3`,
					`update team_runs set state = 'waiting', host = 'machine-b-7', step = 'plan', round = 1, question = 'Which name?' where id = 5`,
				} {
					args := []any{}
					if strings.Contains(q, "$1") {
						args = append(args, parked)
					}
					if _, err := conn.Exec(ctx, q, args...); err != nil {
						t.Fatal(err)
					}
				}
				if _, err := tm.Cancel(ctx, 4); err != nil {
					t.Fatal(err)
				}

				p = startPTYCols(t, cols, env, "runs")
				if code := p.wait(t); code != 0 {
					t.Fatalf("runs: exit %d\n%s", code, p.screen())
				}
				raw := p.screen()
				t.Logf("flower runs at %d columns:\n%s", cols, raw)
				if strings.Contains(raw, "\x1b]0;") || strings.Contains(raw, "\x1b[2J") {
					t.Errorf("an escape in a request reached the terminal: %q", raw)
				}
				var table []string
				for _, line := range rawLines(raw) {
					if line != "" {
						table = append(table, line)
					}
				}
				header := strings.Join(strings.Fields(strings.ReplaceAll(t1("teamRunsHeader"), "\t", " ")), " ")
				if len(table) != 6 || strings.Join(strings.Fields(table[0]), " ") != header {
					t.Fatalf("want the header and five runs, one line each:\n%s", strings.Join(table, "\n"))
				}
				want := map[string]string{
					"r5": t1("teamState_waiting"), "r4": t1("teamState_cancelled"), "r3": t1("teamState_failed"),
					"r2": t1("teamState_running"), "r1": t1("teamState_queued"),
				}
				if cols >= 160 {
					// Room for the host; on a narrow terminal the states
					// stay whole without it.
					want["r2"] += fmt.Sprintf(t1("teamOnHost"), "machine-a-4242")
					want["r5"] += fmt.Sprintf(t1("teamOnHost"), "machine-b-7")
				}
				starts := fieldStarts(table[0])
				for i, line := range table {
					if w := screen.Columns(line); w > int(cols) {
						t.Errorf("a line %d columns wide on a terminal of %d:\n%s", w, cols, line)
					}
					if got := fieldStarts(line); len(got) < 6 || fmt.Sprint(got[:6]) != fmt.Sprint(starts[:6]) {
						t.Errorf("columns do not line up: the header's start at %v, line %d's at %v:\n%s\n%s", starts, i, got, table[0], line)
					}
					if i == 0 {
						continue
					}
					name := fmt.Sprintf("r%d", 6-i)
					if !strings.HasPrefix(line, name+" ") || !strings.Contains(line, want[name]) {
						t.Errorf("line %d is not %s %s:\n%s", i, name, want[name], line)
					}
				}
				if !strings.Contains(table[4], "build #2") || !regexp.MustCompile(`\$0\.42\d*/\$5\.00\d*`).MatchString(table[4]) {
					t.Errorf("the running run's step and cost:\n%s", table[4])
				}
				if !strings.Contains(table[3], "failed 2 times on 2 workers") && cols == 160 {
					t.Errorf("the parked run's reason:\n%s", table[3])
				}
				if !strings.Contains(table[3], "fail") {
					t.Errorf("the parked run does not say why:\n%s", table[3])
				}
				checkLanguage(t, l.english, raw)

				p = startPTYCols(t, cols, env, "runs", "r3")
				if code := p.wait(t); code != 0 {
					t.Fatalf("runs r3: exit %d\n%s", code, p.screen())
				}
				for _, s := range []string{"r3", t1("teamState_failed"), "flower/r3", repo, "failed 2 times on 2 workers:",
					"machine-a: gitwork: the repository cannot be reached", "machine-b: the same", t1("teamRecent")} {
					p.expectFlat(t, s)
				}
				var detail []string
				for _, line := range rawLines(p.screen()) {
					if line == "" {
						break
					}
					detail = append(detail, line)
				}
				valueAt := -1
				for _, line := range detail {
					starts := fieldStarts(line)
					if line[0] == ' ' {
						continue // a reason's further line, under the first
					}
					if len(starts) < 2 {
						t.Errorf("a detail line without a value:\n%s", line)
						continue
					}
					if valueAt < 0 {
						valueAt = starts[1]
					}
					if starts[1] != valueAt {
						t.Errorf("the detail's values do not line up (%d, want %d):\n%s", starts[1], valueAt, strings.Join(detail, "\n"))
						break
					}
				}
				for _, line := range detail {
					if strings.Contains(line, "machine-b: the same") && fieldStarts(line)[0] != valueAt {
						t.Errorf("the reason's further line is not under its first:\n%s", strings.Join(detail, "\n"))
					}
				}

				bad := "postgres://flower:s3cret-pw@127.0.0.1:1/team"
				// On the command line, the password is refused before
				// anything is tried, in the person's language, masked.
				p = startPTYCols(t, cols, env, "runs", "--db", bad)
				if code := p.wait(t); code != ExitUsage {
					t.Errorf("runs --db with a password: exit %d, want %d", code, ExitUsage)
				}
				refused := p.screen()
				p.expectFlat(t, fmt.Sprintf(t1("teamDBPassword"), "postgres://flower:xxxxx@127.0.0.1:1/team", "FLOWER_DATABASE_URL"))
				if strings.Contains(refused, "s3cret-pw") {
					t.Errorf("the refusal shows the password:\n%s", refused)
				}
				checkLanguage(t, l.english, refused)
				p = startPTYCols(t, cols, hermeticEnv(t, l.locale, "FLOWER_DATABASE_URL="+bad), "runs")
				if code := p.wait(t); code != ExitFailure {
					t.Errorf("runs with a database nothing listens on: exit %d, want %d", code, ExitFailure)
				}
				screenText := p.screen()
				if strings.Contains(screenText, "s3cret-pw") || !strings.Contains(screenText, "postgres://flower:xxxxx@127.0.0.1:1/team") {
					t.Errorf("the password is not masked:\n%s", screenText)
				}
				var said []string
				for _, line := range rawLines(screenText) {
					if line != "" {
						said = append(said, line)
					}
				}
				// What failed is said in the person's language, pgx's own
				// words after it (it was English on a Chinese machine).
				at, _, _ := strings.Cut(t1("teamDBAt"), "%w")
				at = fmt.Sprintf(at, "postgres://flower:xxxxx@127.0.0.1:1/team")
				if len(said) != 2 || !strings.Contains(said[0], at) || !strings.Contains(said[0], "connection refused") || said[1] != t1("teamDBHint") {
					t.Errorf("want one line of what failed and one of what to check:\n%s", strings.Join(said, "\n"))
				}
			})
		}
	}
}

// A worker's log format it does not know, and a metrics address another
// program holds, are refused before the worker starts (no database is
// needed to say so), each with what to give, in the person's language.
func TestWorkerRefusesABadLogFormatAReadablePathAPassEnvAndAMetricsAddressInUse(t *testing.T) {
	t.Parallel()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	addr := busy.Addr().String()
	for _, l := range locales {
		for _, cols := range []uint16{80, 160} {
			t.Run(fmt.Sprintf("%s/%d", l.name, cols), func(t *testing.T) {
				t1 := func(k string) string { return texts[k][map[bool]int{false: 0, true: 1}[l.english]] }
				env := hermeticEnv(t, l.locale)
				p := startPTYCols(t, cols, env, "worker", "--log-format", "yaml")
				if code := p.wait(t); code != ExitUsage {
					t.Errorf("--log-format yaml: exit %d, want %d\n%s", code, ExitUsage, p.screen())
				}
				p.expectFlat(t, fmt.Sprintf(t1("teamLogFormat"), "yaml"))
				checkLanguage(t, l.english, p.screen())

				for _, path := range []string{"opt/claude", "/no/such/folder"} {
					p = startPTYCols(t, cols, env, "worker", "--readable", path)
					if code := p.wait(t); code != ExitUsage {
						t.Errorf("--readable %s: exit %d, want %d\n%s", path, code, ExitUsage, p.screen())
					}
					p.expectFlat(t, fmt.Sprintf(t1("workerReadable"), path))
					checkLanguage(t, l.english, p.screen())
				}

				for _, name := range []string{"NOT A NAME", "PGPASSWORD", "FLOWER_DATABASE_URL"} {
					p = startPTYCols(t, cols, env, "worker", "--pass-env", name)
					if code := p.wait(t); code != ExitUsage {
						t.Errorf("--pass-env %s: exit %d, want %d\n%s", name, code, ExitUsage, p.screen())
					}
					p.expectFlat(t, fmt.Sprintf(t1("workerPassEnv"), name))
					checkLanguage(t, l.english, p.screen())
				}

				p = startPTYCols(t, cols, env, "worker", "--metrics", addr)
				if code := p.wait(t); code != ExitFailure {
					t.Errorf("--metrics %s in use: exit %d, want %d\n%s", addr, code, ExitFailure, p.screen())
				}
				p.expectFlat(t, fmt.Sprintf(t1("teamMetricsInUse"), addr))
				checkLanguage(t, l.english, p.screen())
			})
		}
	}
}

// The help names the team's commands and each command's flags, in either
// locale and width.
func TestTeamHelpNamesTheCommandsAndFlags(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args []string
		want []string
	}{
		{[]string{"--help"}, []string{"flower submit --repo REPO", "flower worker", "flower runs [RUN]",
			"flower reply RUN", "flower cancel RUN", "flower report RUN", "--db-file F", "--db URL"}},
		{[]string{"submit", "--help"}, []string{"Usage: flower submit [--db-file FILE] --repo REPO", "--branch B", "--budget USD", "--no-check",
			"$FLOWER_DATABASE_URL", "mode 0600", "~/.pgpass", "a password in --db is refused"}},
		{[]string{"worker", "--help"}, []string{"Usage: flower worker [--db-file FILE]", "--concurrency N", "--dir DIR", "--name NAME", "--rescue D",
			"--team-budget USD", "--max-failures N", "--unconfined", "--readable PATH", "--pass-env NAME", "--log-format F", "--metrics ADDR", "default none", "$FLOWER_DATABASE_URL"}},
		{[]string{"runs", "--help"}, []string{"Usage: flower runs [--db-file FILE] [--state S[,S]] [--limit N] [RUN]"}},
		{[]string{"retry", "--help"}, []string{"Usage: flower retry [--db-file FILE] RUN"}},
		{[]string{"cancel", "--help"}, []string{"Usage: flower cancel [--db-file FILE] RUN"}},
		{[]string{"reply", "--help"}, []string{"--db-file F", "flower reply r12"}},
		{[]string{"report", "--help"}, []string{"--db-file F RUN"}},
	}
	for _, c := range cases {
		for i, l := range locales {
			cols := []uint16{80, 160}[i]
			t.Run(fmt.Sprintf("%s/%s/%d", strings.Join(c.args, " "), l.name, cols), func(t *testing.T) {
				p := startPTYCols(t, cols, hermeticEnv(t, l.locale), c.args...)
				if code := p.wait(t); code != 0 {
					t.Fatalf("exit %d\n%s", code, p.screen())
				}
				for _, want := range c.want {
					if !l.english {
						// The Chinese help names the same flags and
						// commands in its own prose.
						if rest, ok := strings.CutPrefix(want, "Usage: "); ok {
							want = "用法:" + rest
						} else if !strings.HasPrefix(want, "-") && !strings.HasPrefix(want, "$") && !strings.HasPrefix(want, "~") && !strings.HasPrefix(want, "flower ") {
							continue
						}
					}
					p.expectFlat(t, want)
				}
				// No documented form puts a password on a command line.
				if m := regexp.MustCompile(`--db[ =]\S*://[^@\s/]*:[^@\s/]*@`).FindString(p.screen()); m != "" {
					t.Errorf("the help shows a password in --db: %s", m)
				}
				if regexp.MustCompile(`panic|goroutine \d`).MatchString(p.screen()) {
					t.Errorf("a panic:\n%s", p.screen())
				}
			})
		}
	}
}

// A request over 20 KB is asked about where a person submits it (the
// worker that runs it has nobody to ask): on a terminal a question whose
// no queues nothing, from a script a usage error naming --yes, with which
// it is queued.
func TestASubmittedLongRequestIsAskedAboutFirst(t *testing.T) {
	t.Parallel()
	for i, l := range locales {
		cols := []uint16{80, 160}[i]
		t.Run(fmt.Sprintf("%s/%d", l.name, cols), func(t *testing.T) {
			t.Parallel()
			t1 := func(k string) string { return texts[k][map[bool]int{false: 0, true: 1}[l.english]] }
			db := pgtest.Database(t)
			repo := clones(t, 1)[0]
			env := hermeticEnv(t, l.locale, "FLOWER_DATABASE_URL="+db)
			long := "tidy the docs\n\n" + strings.Repeat("lorem ipsum dolor sit amet 0123456789\n", 800) // ~30 KB
			cmd := exec.Command(flowerBin, "submit", "--repo", repo, long)
			cmd.Env, cmd.Dir = env, t.TempDir()
			out, _ := cmd.CombinedOutput()
			if want := fmt.Sprintf(t1("requestLargeNoTTY"), "30 KB"); cmd.ProcessState.ExitCode() != ExitUsage || !strings.Contains(flat(string(out)), flat(want)) {
				t.Errorf("from a script: exit %d, want %d and %q:\n%s", cmd.ProcessState.ExitCode(), ExitUsage, want, out)
			}
			p := startPTYCols(t, cols, env, "submit", "--repo", repo, long)
			p.expectFlat(t, strings.SplitN(fmt.Sprintf(t1("requestLargeAsk"), "30 KB"), "[", 2)[0])
			io.WriteString(p.tty, "n\r")
			if code := p.wait(t); code != ExitFailure {
				t.Fatalf("no: exit %d, want %d:\n%s", code, ExitFailure, p.screen())
			}
			if !strings.Contains(flat(p.screen()), flat(t1("requestNotSent"))) {
				t.Errorf("the screen does not say it was not sent:\n%s", p.screen())
			}
			checkLanguage(t, l.english, p.screen())
			tm, err := team.Open(context.Background(), db)
			if err != nil {
				t.Fatal(err)
			}
			defer tm.Close()
			if runs, err := tm.Runs(context.Background(), team.RunFilter{}); err != nil || len(runs) != 0 {
				t.Fatalf("the queue holds %d runs (%v) before anyone said to send", len(runs), err)
			}
			// --yes queues it whole.
			cmd = exec.Command(flowerBin, "submit", "--yes", "--repo", repo, long)
			cmd.Env, cmd.Dir = env, t.TempDir()
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("--yes: %v\n%s", err, out)
			}
			runs, err := tm.Runs(context.Background(), team.RunFilter{})
			if err != nil || len(runs) != 1 || runs[0].Request != strings.TrimSpace(long) {
				t.Fatalf("after --yes the queue holds %d runs (%v), want the whole request", len(runs), err)
			}
		})
	}
}
