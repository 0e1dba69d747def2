package app

// The status line, the heartbeat and the ending through the built binary,
// the pinned real CLI and the demo's scripted model.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/flowerrun/flower"
	"github.com/flowerrun/flower/claude/claudetest"
	"github.com/flowerrun/flower/internal/demo"
	"github.com/flowerrun/flower/internal/screen/screentest"
)

// statusRow is the status line among rows ("" when none), and how many
// rows look like one.
func statusRow(rows []string, step string) (string, int) {
	row, n := "", 0
	for _, r := range rows {
		if strings.HasPrefix(r, "- "+step+" · ") {
			row, n = r, n+1
		}
	}
	return row, n
}

// coderMarker opens the demo coordinator's task for the coder.
const coderMarker = "DEMO-CODER"

func TestTheStatusLineRefreshesAndLeavesNothingBehind(t *testing.T) {
	for _, lang := range []string{"en", "zh"} {
		for _, cols := range []uint16{160, 80} {
			t.Run(fmt.Sprintf("%s %d columns", lang, cols), func(t *testing.T) {
				t.Parallel()
				ws := t.TempDir()
				texts := demo.TextsFor(flower.Lang(lang))
				script := demo.Script(flower.Lang(lang), ws)
				release := make(chan struct{})
				srv := claudetest.NewServer(t, func(ctx context.Context, r *claudetest.Request) claudetest.Reply {
					if r.MaxTokens == 16 {
						return claudetest.Say("hi")
					}
					if r.HasText(coderMarker) && r.Turn() == 0 {
						// The slow model call: the coder's first turn waits
						// until the test has seen the screen twice.
						select {
						case <-release:
						case <-ctx.Done():
							return claudetest.Reply{Fault: &claudetest.Fault{Status: 500}}
						}
					}
					return script.Reply(r)
				})
				p := startPTYSize(t, flowerBin, binEnv(t, srv), &pty.Winsize{Rows: 40, Cols: cols}, "-w", ws, "--lang", lang, "--timeout", "0", "--rounds", "2", texts.Ask)
				waitFor(t, "the coder's request", func() bool {
					return hasRequest(srv, func(r *claudetest.Request) bool { return r.HasText(coderMarker) })
				})
				step := map[string]string{"en": "work", "zh": "干活"}[lang]
				worker := map[string]string{"en": "now: worker coder hello.txt (", "zh": "正在:派出的 coder hello.txt ("}[lang]
				idle := map[string]string{"en": "(type = add", "zh": "(直接说 = 加需求"}[lang]
				var first string
				deadline := time.Now().Add(30 * time.Second)
				for first == "" || !strings.Contains(first, worker) {
					if time.Now().After(deadline) {
						t.Fatalf("no status line naming the worker:\n%s", strings.Join(screentest.Render(p.screen(), int(cols), 40), "\n"))
					}
					time.Sleep(100 * time.Millisecond)
					first, _ = statusRow(screentest.Render(p.screen(), int(cols), 40), step)
				}
				time.Sleep(2100 * time.Millisecond)
				rows := screentest.Render(p.screen(), int(cols), 40)
				second, n := statusRow(rows, step)
				close(release)
				if n != 1 || !strings.Contains(second, worker) || second == first {
					t.Errorf("the status line did not refresh (%d on screen):\n first %q\nsecond %q", n, first, second)
				}
				wants := []string{map[string]string{"en": "- work · round 1/2 · ", "zh": "- 干活 · 第 1/2 轮 · "}[lang]}
				if cols == 160 {
					// The role, the model and the cost have room only here.
					wants = append(wants, map[string]string{"en": "coordinator", "zh": "协调者"}[lang], " · claude-", " · $0.")
				}
				for _, w := range wants {
					if !strings.Contains(second, w) {
						t.Errorf("the status line lacks %q: %q", w, second)
					}
				}
				// Rounds are the work's: the goal step's status line said
				// "goal · round 1/2" (its retry of a reply it could not
				// read counted as a round).
				if goal := map[string]string{"en": "- goal · round", "zh": "- 设定目标 · 第"}[lang]; strings.Contains(flat(p.screen()), flat(goal)) {
					t.Errorf("the goal step's status line names a round (%q):\n%s", goal, p.screen())
				}
				if c := screenColumnsMax(rows); c > int(cols) {
					t.Errorf("a row of %d columns on a %d-column terminal", c, cols)
				}
				prompts := 0
				for _, r := range rows {
					if strings.HasPrefix(r, idle) {
						prompts++
					}
				}
				if prompts != 1 || !strings.HasPrefix(rows[lastNonEmpty(rows)], idle) {
					t.Errorf("%d input hints on the screen, want 1 on the last row:\n%s", prompts, strings.Join(rows, "\n"))
				}
				// Both whole: at 80 columns the input hint was cut
				// mid-sentence ("start with ?...>").
				if hint := strings.TrimRight(rows[lastNonEmpty(rows)], " "); !strings.HasSuffix(hint, ">") || strings.Contains(hint, "...") {
					t.Errorf("the input hint is cut: %q", hint)
				}
				if strings.HasSuffix(second, "...") {
					t.Errorf("the status line is cut: %q", second)
				}
				if code := p.wait(t); code != 0 {
					t.Fatalf("exit %d:\n%s", code, p.screen())
				}
				end := screentest.Render(p.screen(), int(cols), 40)
				if _, n := statusRow(end, step); n != 0 {
					t.Errorf("a status line is left on the screen:\n%s", strings.Join(end, "\n"))
				}
				for _, r := range end {
					if strings.HasPrefix(r, idle) || strings.HasPrefix(r, "> ") {
						t.Errorf("a stale prompt %q is left on the screen:\n%s", r, strings.Join(end, "\n"))
					}
				}
				head := map[string]string{"en": "== How it ended", "zh": "== 结果"}[lang]
				if !strings.Contains(strings.Join(end, "\n"), head) {
					t.Errorf("no ending on the screen:\n%s", strings.Join(end, "\n"))
				}
			})
		}
	}
}

func screenColumnsMax(rows []string) int {
	n := 0
	for _, r := range rows {
		n = max(n, len([]rune(r)))
	}
	return n
}

func lastNonEmpty(rows []string) int {
	for i := len(rows) - 1; i >= 0; i-- {
		if rows[i] != "" {
			return i
		}
	}
	return 0
}

func TestAPipedRunThatStallsPrintsAHeartbeat(t *testing.T) {
	for _, lang := range []string{"en", "zh"} {
		t.Run(lang, func(t *testing.T) {
			t.Parallel()
			srv := claudetest.NewServer(t, func(ctx context.Context, r *claudetest.Request) claudetest.Reply {
				if r.MaxTokens == 16 {
					return claudetest.Say("hi")
				}
				// 70 s of silence, then the answer.
				select {
				case <-time.After(70 * time.Second):
				case <-ctx.Done():
				}
				return claudetest.Say("late but here")
			})
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, flowerBin, "-w", t.TempDir(), "--lang", lang, "once", "take your time")
			cmd.Env = binEnv(t, srv)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			want := map[string][]string{
				"en": {"- ad-hoc · ", "now: waiting for the model (", "(still running)", "late but here", "== How it ended"},
				"zh": {"- 临时一步 · ", "正在:等模型回复 (", "(还在跑)", "late but here", "== 结果"},
			}[lang]
			for _, w := range want {
				if !strings.Contains(string(out), w) {
					t.Errorf("the piped output lacks %q:\n%s", w, out)
				}
			}
			// At least one: a loaded machine starts the CLI slowly, so the
			// silence may be longer than the model's 70 s.
			if n := strings.Count(string(out), map[string]string{"en": "(still running)", "zh": "(还在跑)"}[lang]); n < 1 {
				t.Errorf("no heartbeat in 70 s of silence:\n%s", out)
			}
		})
	}
}

// gitStarterWorkspace is a git repository whose hello.txt the demo's coder
// will overwrite: the ending's diff --stat has a line to show.
func gitStarterWorkspace(t *testing.T) string {
	return gitRepo(t, map[string]string{"hello.txt": "old\n", "README": "r\n"})
}

// pipedStarter runs the starter flow from a pipe against handler and
// returns its output and exit code.
func pipedStarter(t *testing.T, ws, lang string, handler func(context.Context, *claudetest.Request) claudetest.Reply, args ...string) (string, int) {
	t.Helper()
	srv := claudetest.NewServer(t, handler)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, flowerBin, append([]string{"-w", ws, "--lang", lang, "--timeout", "0"}, args...)...)
	cmd.Env, cmd.Dir = binEnv(t, srv), t.TempDir()
	out, _ := cmd.CombinedOutput()
	return string(out), cmd.ProcessState.ExitCode()
}

// demoHandler plays the demo's script with extra rules; fault, when it
// returns true, answers with a 400 instead.
func demoHandler(ws, lang string, extra claudetest.Script, fault func(*claudetest.Request) bool) func(context.Context, *claudetest.Request) claudetest.Reply {
	script := demo.Script(flower.Lang(lang), ws)
	for k, v := range extra {
		script[k] = v
	}
	return func(ctx context.Context, r *claudetest.Request) claudetest.Reply {
		if r.MaxTokens == 16 {
			return claudetest.Say("hi")
		}
		if fault != nil && fault(r) {
			return claudetest.Reply{Fault: &claudetest.Fault{Status: 400, Type: "invalid_request_error", Message: "fake: prompt is malformed"}}
		}
		return script.Reply(r)
	}
}

func endingOutcome(t *testing.T, ws string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(ws, "runs", "ending.json"))
	if err != nil {
		t.Fatalf("no ending.json: %v", err)
	}
	var e Ending
	if err := json.Unmarshal(data, &e); err != nil {
		t.Fatal(err)
	}
	return e.Outcome
}

func TestTheEndingSaysHowEachRunEnded(t *testing.T) {
	en := demo.TextsFor("en")
	changed := "hello.txt | 2 +-"
	coderDone := "Conclusion: wrote hello.txt"
	for _, c := range []struct {
		name    string
		extra   claudetest.Script
		fault   func(*claudetest.Request) bool
		args    []string
		code    int
		outcome string
		want    []string
	}{
		{name: "achieved", args: []string{"--rounds", "2"}, outcome: OutcomeAchieved,
			want: []string{"! Round 1/2 verdict: not yet — nobody ran ls yet", "+ Round 2/2 verdict: achieved", "+ Goal achieved in round 2", "- rounds 2 of 2", changed, "- next: flower in "}},
		{name: "not achieved", args: []string{"--rounds", "1"}, code: ExitFailure, outcome: OutcomeNotAchieved,
			want: []string{"x Goal not achieved after 1 rounds: nobody ran ls yet", "--rounds N", changed, "- to continue: run flower again in "}},
		{name: "unreachable", extra: claudetest.Script{"Judge this round": {claudetest.StructuredOutput(map[string]any{"items": []map[string]string{
			{"id": "c1", "status": "passed", "evidence": "cat hello.txt", "reason": "ok"},
			{"id": "c2", "status": "not_run", "evidence": "uname -a: Linux", "reason": "build on macOS"}},
			"conclusion": "unreachable", "reason": "no macOS here", "missing": "a macOS machine", "why_no_work": "the work cannot change the platform"})}},
			code: ExitFailure, outcome: OutcomeUnreachable,
			want: []string{"x Round 1/3 verdict: unreachable — no macOS here", "x Goal ruled unreachable: no macOS here", changed}},
		{name: "failed step", fault: func(r *claudetest.Request) bool { return r.HasText(workMarker) && r.HasText(coderDone) },
			code: ExitFailure, outcome: OutcomeFailed,
			want: []string{"x Failed: stopped at step 'work': ", "What to do: fix the cause above", changed}},
		{name: "a brief with missing sections", extra: claudetest.Script{en.Ask: {claudetest.Say("## Goal\nsomething")}},
			code: ExitFailure, outcome: OutcomeFailed,
			want: []string{"x Failed: stopped at step 'clarify': the brief lacks these sections: Acceptance criteria, Boundaries, Unknowns and assumptions", "- files: nothing changed, no commits"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ws := gitStarterWorkspace(t)
			out, code := pipedStarter(t, ws, "en", demoHandler(ws, "en", c.extra, c.fault), append(c.args, en.Ask)...)
			if code != c.code {
				t.Errorf("exit %d, want %d:\n%s", code, c.code, out)
			}
			for _, w := range append(c.want, "== How it ended", "- time ", "- report: flower report ") {
				if !strings.Contains(out, w) {
					t.Errorf("the ending lacks %q:\n%s", w, out)
				}
			}
			if got := endingOutcome(t, ws); got != c.outcome {
				t.Errorf("ending.json outcome %q, want %q", got, c.outcome)
			}
			if c.outcome != OutcomeNotAchieved {
				return
			}
			// Bare flower there says what it would continue before it asks.
			srv := claudetest.NewServer(t, demoHandler(ws, "en", nil, nil))
			p := startPTY(t, binEnv(t, srv), "-w", ws)
			p.expect(t, "<- last request: "+en.Ask)
			p.expect(t, "   not achieved after 1 rounds: nobody ran ls yet · ended ")
			p.expect(t, "Continue where it stopped? Enter = continue")
			p.expect(t, "> ")
			p.tty.Write([]byte{3})
			if code := p.wait(t); code != ExitInterrupted {
				t.Errorf("Ctrl-C at the wake prompt: exit %d, want %d", code, ExitInterrupted)
			}
		})
	}
}

func TestCtrlCEndsWithTheStoppedBlockInChinese(t *testing.T) {
	t.Parallel()
	ws := gitStarterWorkspace(t)
	coderDone := "结论:写好了 hello.txt"
	srv := claudetest.NewServer(t, func(ctx context.Context, r *claudetest.Request) claudetest.Reply {
		if r.MaxTokens == 16 {
			return claudetest.Say("hi")
		}
		if r.HasText("照这份需求做") && r.HasText(coderDone) {
			<-ctx.Done() // held until flower goes
			return claudetest.Reply{Fault: &claudetest.Fault{Status: 500}}
		}
		return demo.Script("zh", ws).Reply(r)
	})
	p := startPTYSize(t, flowerBin, binEnv(t, srv), &pty.Winsize{Rows: 50, Cols: 100}, "-w", ws, "--lang", "zh", "--timeout", "0", demo.TextsFor("zh").Ask)
	waitFor(t, "the coordinator's request after the coder", func() bool {
		return hasRequest(srv, func(r *claudetest.Request) bool { return r.HasText("照这份需求做") && r.HasText(coderDone) })
	})
	p.cmd.Process.Signal(os.Interrupt)
	p.expect(t, "要说什么?")
	p.cmd.Process.Signal(os.Interrupt)
	if code := p.wait(t); code != ExitInterrupted {
		t.Fatalf("exit %d, want %d:\n%s", code, ExitInterrupted, p.screen())
	}
	out := strings.Join(screentest.Render(p.screen(), 100, 50), "\n")
	for _, w := range []string{"== 结果", "! 你按 Ctrl-C 停下了", "hello.txt | 2 +-", "- 接着做:在 ", "已退出。同一目录再跑一次 flower 会接着做。"} {
		if !strings.Contains(out, w) {
			t.Errorf("the screen lacks %q:\n%s", w, out)
		}
	}
	if got := endingOutcome(t, ws); got != OutcomeStopped {
		t.Errorf("ending.json outcome %q", got)
	}
}
