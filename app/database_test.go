package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/flowerrun/flower"
	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/doc"
	"github.com/flowerrun/flower/internal/pgmigrate"
	"github.com/flowerrun/flower/internal/pgtest"
	"github.com/flowerrun/flower/workbench"
)

// clones makes a repository with one commit and n clones of it: the
// checkouts of a team's machines.
func clones(t *testing.T, n int) []string {
	t.Helper()
	git := func(dir string, args ...string) {
		t.Helper()
		if dir != "" {
			args = append([]string{"-C", dir}, args...)
		}
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	root := shortTempDir(t)
	seed := filepath.Join(root, "seed")
	git("", "init", "-q", seed)
	if err := os.WriteFile(filepath.Join(seed, "README.md"), []byte("# tool\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(seed, "add", "README.md")
	git(seed, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "first")
	var out []string
	for i := range n {
		ws := filepath.Join(root, fmt.Sprintf("m%d", i))
		git("", "clone", "-q", seed, ws)
		out = append(out, ws)
	}
	return out
}

// A run kept in PostgreSQL by one machine wakes on another machine, in
// its own clone and HOME, as it was: the last request and how it ended,
// then (Enter) the banner with the brief, the goal's checks, the work
// session's context from the database's transcript, and the wake count.
func TestAnotherMachineWakesTheRunFromTheDatabase(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.Database(t)
	for _, l := range locales {
		for _, cols := range []uint16{80, 160} {
			t.Run(fmt.Sprintf("%s/%d", l.name, cols), func(t *testing.T) {
				ws := clones(t, 2)
				a, b := ws[0], ws[1]
				run := fmt.Sprintf("wake-%s-%d", l.name, cols)
				lang := flower.English
				if !l.english {
					lang = flower.Chinese
				}
				machineA(t, dbURL, run, a, lang)

				env := hermeticEnv(t, l.locale, "FLOWER_CLAUDE="+stubCLI(t), "ANTHROPIC_API_KEY=sk-test",
					"ANTHROPIC_BASE_URL=http://127.0.0.1:1", flower.DatabaseEnv+"="+dbURL, flower.RunNameEnv+"="+run)
				p := startPTYCols(t, cols, env, "-w", b)
				t1 := func(k string) string { return texts[k][map[bool]int{false: 0, true: 1}[l.english]] }
				p.expectFlat(t, strings.SplitN(t1("databaseOpen"), "%s", 2)[0]+run)
				p.expectFlat(t, fmt.Sprintf(t1("lastRequest"), "add a --json flag"))
				p.expect(t, "> ")
				p.tty.Write([]byte("\r"))
				p.expectFlat(t, strings.SplitN(t1("wakeBanner"), "%s", 2)[0]+b)
				for _, want := range []string{t1("briefDone"), fmt.Sprintf(t1("goalN"), 3), fmt.Sprintf(t1("workContext"), Tokens(42_000)), fmt.Sprintf(t1("wakeN"), 3)} {
					p.expectFlat(t, want)
				}
				p.tty.Write([]byte{3})
				time.Sleep(200 * time.Millisecond)
				p.tty.Write([]byte{3})
				p.wait(t)
				screen := p.screen()
				checkLanguage(t, l.english, screen)
				if strings.Contains(screen, "xxxxx") == false {
					t.Errorf("the database line does not show the URL with its password masked:\n%s", screen)
				}
			})
		}
	}
}

// machineA leaves a run in the database as a killed first machine would:
// its brief and goal, the lineage of two wakes, an ending, and the work
// session's transcript with its last context.
func machineA(t *testing.T, dbURL, run, ws string, lang flower.Lang) {
	t.Helper()
	ctx := context.Background()
	db, err := flower.OpenDatabase(ctx, dbURL, flower.DatabaseOptions{Workspace: ws, Run: run, ConfigDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	names := flower.StarterNamesFor(lang)
	notes := filepath.Join(workbench.Location(ws, false), "notes")
	if err := os.MkdirAll(notes, 0o700); err != nil {
		t.Fatal(err)
	}
	brief := &doc.Brief{Goal: "add a --json flag", Accept: "- `tool --json` prints JSON", Bounds: "only the CLI", Unknowns: "none"}
	if err := brief.Write(lang, filepath.Join(notes, names.Brief)); err != nil {
		t.Fatal(err)
	}
	goal := &doc.Goal{Statement: "a --json flag", Checks: []string{"it parses", "it prints JSON", "tests pass"}}
	if err := goal.Write(lang, filepath.Join(notes, names.GoalFile)); err != nil {
		t.Fatal(err)
	}
	runDir := filepath.Join(ws, "runs")
	if err := os.MkdirAll(runDir, 0o700); err != nil {
		t.Fatal(err)
	}
	info, _ := json.Marshal(map[string]string{"language": string(lang.Canonical())})
	if err := os.WriteFile(filepath.Join(runDir, flower.RunInfoName), append(info, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	lin := flower.OpenLineage(runDir, ws)
	for range 2 {
		if _, err := lin.Bump(); err != nil {
			t.Fatal(err)
		}
	}
	sid := "0b6e6a0e-4d1c-4c3f-9a55-0f6f7c1b2a31"
	if err := lin.Remember(names.Work, sid); err != nil {
		t.Fatal(err)
	}
	end, _ := json.Marshal(Ending{Request: "add a --json flag", Outcome: OutcomeFailed, Reason: "killed", Started: time.Now().Add(-time.Hour), Ended: time.Now().Add(-30 * time.Minute)})
	if err := os.WriteFile(filepath.Join(runDir, endingFile), end, 0o600); err != nil {
		t.Fatal(err)
	}
	entry := `{"type":"assistant","uuid":"5d7c3f4e-1a2b-4c3d-8e9f-0a1b2c3d4e5f","sessionId":"` + sid + `","message":{"role":"assistant","model":"m","content":[{"type":"text","text":"working"}],"usage":{"input_tokens":2000,"cache_read_input_tokens":40000,"output_tokens":10}}}`
	key := claude.SessionKey{ProjectKey: claude.ProjectKey(ws), SessionID: sid}
	if err := db.Sessions().Append(ctx, key, []json.RawMessage{json.RawMessage(entry)}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

var ansi = regexp.MustCompile(`\x1b\[[0-9;?]*[A-Za-z]`)

// flat is s without colours and without any white space: a line the
// screen wrapped reads as one.
func flat(s string) string {
	return strings.Join(strings.Fields(ansi.ReplaceAllString(s, "")), "")
}

// expectFlat waits until the screen, flattened, holds want, flattened.
func (p *ptyRun) expectFlat(t *testing.T, want string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if strings.Contains(flat(p.screen()), flat(want)) {
			return
		}
	}
	t.Fatalf("never saw %q in:\n%s", want, p.screen())
}

// A database that cannot be used says so in one message, in the
// person's language, with the URL's password masked, and writes nothing:
// no run directory appears, and the run's files stay where they are.
func TestADatabaseThatCannotBeUsedSaysWhyAndWritesNothing(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.Database(t)
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	wrong := *u
	wrong.User = url.UserPassword("postgres", "wrong-pass-4711")
	held := clones(t, 1)[0]
	ctx := context.Background()
	holder, err := flower.OpenDatabase(ctx, dbURL, flower.DatabaseOptions{Workspace: held, Run: "held", ConfigDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close(ctx)
	host, _ := os.Hostname()
	cases := []struct {
		name, url, run string
		secret         string
		want           func(t1 func(string) string) []string
	}{
		{"unparsable", "postgres://u:s3cret-pw@db.example:notaport/x", "", "s3cret-pw",
			func(t1 func(string) string) []string { return []string{"xxxxx", t1("databaseHint")[:12]} }},
		{"wrong password", wrong.String(), "", "wrong-pass-4711",
			func(t1 func(string) string) []string {
				return []string{"xxxxx", "password authentication failed", t1("databaseHint")[:12]}
			}},
		{"busy", dbURL, "held", u.User.String(),
			func(t1 func(string) string) []string {
				return []string{strings.SplitN(t1("databaseBusy"), "%s", 2)[0] + "held", host, strings.SplitN(t1("databaseBusyFree"), "%s", 2)[0]}
			}},
	}
	for _, c := range cases {
		for i, l := range locales {
			cols := []uint16{80, 160}[i]
			t.Run(fmt.Sprintf("%s/%s/%d", c.name, l.name, cols), func(t *testing.T) {
				ws := clones(t, 1)[0]
				env := hermeticEnv(t, l.locale, "FLOWER_CLAUDE="+stubCLI(t), "ANTHROPIC_API_KEY=sk-test",
					"ANTHROPIC_BASE_URL=http://127.0.0.1:1", flower.DatabaseEnv+"="+c.url, flower.RunNameEnv+"="+c.run)
				p := startPTYCols(t, cols, env, "-w", ws, "build X")
				if code := p.wait(t); code != ExitFailure {
					t.Errorf("exit %d, want %d", code, ExitFailure)
				}
				t1 := func(k string) string { return texts[k][map[bool]int{false: 0, true: 1}[l.english]] }
				for _, want := range c.want(t1) {
					p.expectFlat(t, want)
				}
				screen := p.screen()
				if strings.Contains(screen, c.secret) {
					t.Errorf("the screen shows the password %q:\n%s", c.secret, screen)
				}
				if strings.Contains(screen, "goroutine") || strings.Contains(screen, "panic") {
					t.Errorf("a panic:\n%s", screen)
				}
				if _, err := os.Stat(filepath.Join(ws, "runs")); err == nil {
					t.Errorf("a run directory was made:\n%s", screen)
				}
				t.Logf("%s", lastLines(screen, 3))
			})
		}
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(ansi.ReplaceAllString(s, "")), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// A database whose run-state tables a newer flower made is refused with
// an error a caller can tell apart, its URL's password masked.
func TestANewerRunStateSchemaIsRefusedAndNamed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL := pgtest.Database(t)
	ws := clones(t, 1)[0]
	db, err := flower.OpenDatabase(ctx, dbURL, flower.DatabaseOptions{Workspace: ws, Run: "newer", ConfigDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	db.Close(ctx)
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "update flower_schema set version = 99 where component = 'runstate'"); err != nil {
		t.Fatal(err)
	}
	_, err = flower.OpenDatabase(ctx, dbURL, flower.DatabaseOptions{Workspace: ws, Run: "newer", ConfigDir: t.TempDir()})
	if !errors.Is(err, pgmigrate.ErrNewerSchema) || !errors.Is(err, flower.ErrDatabase) {
		t.Fatalf("open: %v, want ErrNewerSchema inside ErrDatabase", err)
	}
	u, _ := url.Parse(dbURL)
	pw, _ := u.User.Password()
	if strings.Contains(err.Error(), pw) || !strings.Contains(err.Error(), "xxxxx") {
		t.Fatalf("the message shows the password or no URL: %v", err)
	}
	t.Log(err)
}
