package app

// One outcome per run, on every surface: the terminal's ending, ending.json
// (what bare flower and a team's queue read), the bequest flower hands on
// in CLAUDE.md, and the report (its data and its page). Through the built
// binary under a pty, the real CLI against internal/demo's scripted model,
// in English and Chinese, at 80 and 160 columns.

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/flowerrun/flower"
	"github.com/flowerrun/flower/claude/claudetest"
	"github.com/flowerrun/flower/internal/demo"
	"github.com/flowerrun/flower/internal/screen/screentest"
)

// tr is a text of the command in lang ("en" or "zh").
func tr(lang, key string) string {
	if lang == "en" {
		return texts[key][1]
	}
	return texts[key][0]
}

// judgeMarker opens the goal guard's judge prompt in each language.
var judgeMarker = map[string]string{"en": "Judge this round", "zh": "判定这一轮"}

// unreachableVerdict is a judge's structured answer: the goal cannot be
// reached here.
var unreachableVerdict = map[string]any{"items": []map[string]string{
	{"id": "c1", "status": "passed", "evidence": "cat hello.txt", "reason": "ok"},
	{"id": "c2", "status": "not_run", "evidence": "uname -a: Linux", "reason": "build on macOS"}},
	"conclusion": "unreachable", "reason": "no macOS here", "missing": "a macOS machine", "why_no_work": "the work cannot change the platform"}

// bequestWords is what the bequest says of each outcome (the library's
// texts: the model's hand-over prompt and the mechanical hand-over carry
// them).
var bequestWords = map[string]map[string]string{
	"en": {OutcomeAchieved: "the goal was achieved", OutcomeAchievedUnmeasured: "the goal was achieved, not measured", OutcomeAccepted: "the person accepted the result as it stands",
		OutcomeAchievedExcept: "the goal was achieved, except the checklist items that cannot be verified", OutcomeNeedsLook: "it needs the person's look",
		OutcomeStopped: "the person stopped the run before the goal was achieved", OutcomeFailed: "the run failed before the goal was achieved"},
	"zh": {OutcomeAchieved: "目标已达成", OutcomeAchievedUnmeasured: "目标已达成,但没有测量", OutcomeAccepted: "人接受了现在的结果",
		OutcomeAchievedExcept: "目标已达成,除了在这台机器上无法验证的判定项", OutcomeNeedsLook: "需要人看一眼",
		OutcomeStopped: "人在目标达成之前停下了这次运行", OutcomeFailed: "目标达成之前运行失败了"},
}

// reportView is what `flower report` says of a run directory: its data
// (--json) and its page.
type reportView struct {
	state, pageState    string
	tokensIn, tokensOut int
	cost                float64
	page                string
}

// reportOf runs `flower report --json` and `flower report -o` on runDir.
func reportOf(t *testing.T, env []string, runDir string) reportView {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, flowerBin, "report", "--json", runDir)
	cmd.Env, cmd.Dir = env, t.TempDir()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("flower report --json: %v\n%s", err, out)
	}
	var rep struct {
		Outcome struct {
			State string `json:"state"`
		} `json:"outcome"`
		TokensIn  int `json:"tokens_in"`
		TokensOut int `json:"tokens_out"`
		Cost      struct {
			Total float64 `json:"total"`
		} `json:"cost"`
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("flower report --json: %v\n%s", err, out)
	}
	html := filepath.Join(t.TempDir(), "report.html")
	cmd = exec.CommandContext(ctx, flowerBin, "report", "-o", html, runDir)
	cmd.Env, cmd.Dir = env, t.TempDir()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("flower report: %v\n%s", err, out)
	}
	body, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`<p id="outcome" class="o-([a-z_]+)"`).FindSubmatch(body)
	if m == nil {
		t.Fatalf("the page shows no outcome:\n%s", body)
	}
	return reportView{state: rep.Outcome.State, pageState: string(m[1]), tokensIn: rep.TokensIn, tokensOut: rep.TokensOut,
		cost: rep.Cost.Total, page: string(body)}
}

// checkOneCount fails unless the terminal's ending, ending.json and the
// report give the same tokens and cost, written the same way.
func checkOneCount(t *testing.T, lang, screen string, e Ending, rep reportView) {
	t.Helper()
	if e.TokensIn == 0 || e.TokensOut == 0 {
		t.Errorf("ending.json counts no tokens: %+v", e)
	}
	if rep.tokensIn != e.TokensIn || rep.tokensOut != e.TokensOut || flower.USD(rep.cost) != flower.USD(e.CostUSD) {
		t.Errorf("the report counts %d in / %d out, %s; the ending %d in / %d out, %s",
			rep.tokensIn, rep.tokensOut, flower.USD(rep.cost), e.TokensIn, e.TokensOut, flower.USD(e.CostUSD))
	}
	numbers := fmt.Sprintf(tr(lang, "endNumbers"), "", Tokens(e.TokensIn), Tokens(e.TokensOut), flower.USD(e.CostUSD))
	numbers = numbers[strings.Index(numbers, "·"):]
	if !strings.Contains(flat(screen), flat(numbers)) {
		t.Errorf("the terminal's ending lacks %q:\n%s", numbers, screen)
	}
	headline := Tokens(e.TokensIn) + " " + map[string]string{"en": "in", "zh": "输入"}[lang]
	if !strings.Contains(rep.page, headline) {
		t.Errorf("the report's page lacks the tokens %q", headline)
	}
}

func TestOneOutcomeOnEverySurface(t *testing.T) {
	coderDone := map[string]string{"en": "Conclusion: wrote hello.txt", "zh": "结论:写好了 hello.txt"}
	for _, c := range []struct {
		name    string
		outcome string
		// unreachable: the judge rules the goal unreachable and the
		// person accepts it; stop: Ctrl-C twice while the coordinator
		// works; fail: the coordinator's call after the coder's gets a
		// 400; noSandbox: no bubblewrap on PATH, so flower measures none
		// of the goal's commands; gamed: while the coordinator works, a
		// check script that silences its failure appears (the judge
		// passes it all the same); except: the goal has a third item,
		// marked unverifiable on this machine, which the judge leaves
		// not run.
		unreachable, stop, fail, noSandbox, gamed, except bool
		code                                              int
		ending                                            func(lang string) string
	}{
		{name: "achieved", outcome: OutcomeAchieved, code: 0,
			ending: func(l string) string { return strings.SplitN(tr(l, "endAchievedRound"), "%", 2)[0] }},
		{name: "achieved-unmeasured", outcome: OutcomeAchievedUnmeasured, noSandbox: true, code: 0,
			ending: func(l string) string { return strings.SplitN(tr(l, "endAchievedUnmeasured"), "%", 2)[0] }},
		{name: "achieved-except", outcome: OutcomeAchievedExcept, except: true, code: 0,
			ending: func(l string) string { return strings.SplitN(tr(l, "endAchievedExcept"), "%", 2)[0] }},
		{name: "needs-look", outcome: OutcomeNeedsLook, gamed: true, code: ExitFailure,
			ending: func(l string) string { return strings.SplitN(tr(l, "endNeedsLook"), "%", 2)[0] }},
		{name: "accepted", outcome: OutcomeAccepted, unreachable: true, code: 0,
			ending: func(l string) string { return strings.Replace(tr(l, "endAccepted"), "%s", "no macOS here", 1) }},
		{name: "stopped", outcome: OutcomeStopped, stop: true, code: ExitInterrupted,
			ending: func(l string) string { return tr(l, "endStopped") }},
		{name: "failed", outcome: OutcomeFailed, fail: true, code: ExitFailure,
			ending: func(l string) string { return strings.SplitN(tr(l, "endFailed"), "%", 2)[0] }},
	} {
		for i, lang := range []string{"en", "zh"} {
			// Each outcome in both languages, one at 80 columns and one
			// at 160, the widths swapped from one outcome to the next.
			cols := []uint16{80, 160}[(i+len(c.name))%2]
			t.Run(c.name+"/"+lang, func(t *testing.T) {
				t.Parallel()
				ws := gitStarterWorkspace(t)
				words := demo.TextsFor(flower.Lang(lang))
				var extra claudetest.Script
				if c.unreachable {
					extra = claudetest.Script{judgeMarker[lang]: {claudetest.StructuredOutput(unreachableVerdict)}}
				}
				var fault func(*claudetest.Request) bool
				if c.fail {
					fault = func(r *claudetest.Request) bool { return r.HasText(workMarkers[lang]) && r.HasText(coderDone[lang]) }
				}
				handler := demoHandler(ws, lang, extra, fault)
				if c.stop {
					inner := handler
					handler = func(ctx context.Context, r *claudetest.Request) claudetest.Reply {
						if r.HasText(workMarkers[lang]) && r.HasText(coderDone[lang]) {
							<-ctx.Done() // held until flower goes
							return claudetest.Reply{Fault: &claudetest.Fault{Status: 500}}
						}
						return inner(ctx, r)
					}
				}
				if c.gamed {
					inner := handler
					var once sync.Once
					handler = func(ctx context.Context, r *claudetest.Request) claudetest.Reply {
						if r.HasText(workMarkers[lang]) && r.HasText(coderDone[lang]) {
							once.Do(func() {
								os.WriteFile(filepath.Join(ws, "check.sh"), []byte("#!/bin/sh\ngrep -q hello hello.txt || true\n"), 0o755)
							})
						}
						return inner(ctx, r)
					}
				}
				if c.except {
					handler = withUnverifiableItem(handler, lang)
				}
				srv := claudetest.NewServer(t, handler)
				env := binEnv(t, srv)
				if c.noSandbox {
					env = append(env, "PATH="+binPathWithout(t, "bwrap"))
				}
				p := startPTYSize(t, flowerBin, env, &pty.Winsize{Rows: 50, Cols: cols}, "-w", ws, "--lang", lang, "--rounds", "2", words.Ask)
				p.expect(t, words.Question)
				p.expect(t, tr(lang, "answerPrompt")[:8])
				io.WriteString(p.tty, "1\r")
				switch {
				case c.unreachable:
					// The goal guard asks what now; the first choice
					// accepts the result as it stands.
					p.expect(t, "no macOS here")
					p.expectWithin(t, tr(lang, "answerPrompt")[:8], 3*time.Minute)
					waitFor(t, "the unreachable question", func() bool {
						return strings.Count(p.screen(), tr(lang, "answerPrompt")[:8]) >= 2
					})
					io.WriteString(p.tty, "1\r")
				case c.stop:
					waitFor(t, "the coordinator's request after the coder", func() bool {
						return hasRequest(srv, func(r *claudetest.Request) bool { return r.HasText(workMarkers[lang]) && r.HasText(coderDone[lang]) })
					})
					p.cmd.Process.Signal(os.Interrupt)
					p.expect(t, strings.TrimSpace(tr(lang, "interruptAsk"))[:6])
					p.cmd.Process.Signal(os.Interrupt)
				}
				if code := p.wait(t); code != c.code {
					t.Fatalf("exit %d, want %d:\n%s", code, c.code, p.screen())
				}
				screen := strings.Join(screentest.Render(p.screen(), int(cols), 50), "\n")
				// Flattened: at 80 columns a long ending line wraps.
				if want := c.ending(lang); !strings.Contains(flat(screen), flat(want)) {
					t.Errorf("the terminal's ending lacks %q:\n%s", want, screen)
				}
				// In the verdict lines' colours: green achieved, red failed,
				// yellow what has something to look at or was held.
				colour := map[string]string{OutcomeAchieved: "\x1b[32m", OutcomeFailed: "\x1b[31m"}[c.outcome]
				if colour == "" {
					colour = "\x1b[33m"
				}
				if want := c.ending(lang); !strings.Contains(p.screen(), colour+want[:min(len(want), 12)]) {
					t.Errorf("the ending's outcome line is not in %q", colour)
				}
				if c.outcome != OutcomeAchieved && strings.Contains(screen, strings.TrimSpace(strings.SplitN(tr(lang, "endDone"), "(", 2)[0])) {
					t.Errorf("the terminal says every step was done:\n%s", screen)
				}
				checkLanguage(t, lang == "en", screen)
				// The first screen: where, which model through which
				// gateway, what protects the glances, the budget, the keys.
				envOf := func(k string) (v string) {
					for _, kv := range env {
						if val, ok := strings.CutPrefix(kv, k+"="); ok {
							v = val
						}
					}
					return v
				}
				gateway, _ := url.Parse(envOf("ANTHROPIC_BASE_URL"))
				model := cmp.Or(envOf("ANTHROPIC_MODEL"), tr(lang, "firstModelDefault"))
				// All that was written, as a terminal tall enough to keep it.
				whole := strings.Join(screentest.Render(p.screen(), int(cols), 5000), "\n")
				for _, want := range []string{
					fmt.Sprintf(tr(lang, "firstWorkspace"), ws, filepath.Join(ws, "runs")),
					fmt.Sprintf(tr(lang, "firstModel"), model, gateway.Scheme+"://"+gateway.Host),
					strings.SplitN(tr(lang, "protection"), "%", 2)[0],
					tr(lang, "firstNoBudget"), tr(lang, "firstKeys"),
				} {
					if !strings.Contains(flat(whole), flat(want)) {
						t.Errorf("the first screen lacks %q:\n%s", want, whole)
					}
				}
				// No tool's internal name: flower's own tools are said by
				// what they do.
				if strings.Contains(whole, "mcp__") {
					t.Errorf("the screen shows an internal tool name:\n%s", whole)
				}
				// Where the sandbox is, the commands were run; where it is
				// not, the verdict and the ending say so.
				notMeasured := map[string]string{"en": "not measured", "zh": "没有测量"}[lang]
				if said := strings.Contains(flat(screen), flat(notMeasured)); said != c.noSandbox {
					t.Errorf("the terminal says %q: %v, want %v:\n%s", notMeasured, said, c.noSandbox, screen)
				}
				if c.noSandbox && !strings.Contains(flat(screen), flat(fmt.Sprintf(tr(lang, "verdictAchievedUnmeasured"), 2, 2, "c1, c2"))) {
					t.Errorf("the round's verdict line does not say it was not measured:\n%s", screen)
				}
				// Nothing waits to be committed that the work did not
				// make: git status names the coder's hello.txt (and the
				// gamed check script) alone, flower's folders and its
				// hand-over kept out of git.
				wantStatus := " M hello.txt\n"
				if c.gamed {
					wantStatus += "?? check.sh\n"
				}
				if st, err := exec.Command("git", "-C", ws, "status", "--porcelain").Output(); err != nil || string(st) != wantStatus {
					t.Errorf("git status after the run: %v\n%s\nwant only\n%s", err, st, wantStatus)
				}
				runDir := filepath.Join(ws, "runs")
				if got := endingOutcome(t, ws); got != c.outcome {
					t.Errorf("ending.json: %q, want %q", got, c.outcome)
				}
				// The bequest: the hand-over the model was asked for (or
				// the mechanical one flower wrote when the run was cut
				// off) names the same outcome.
				want := bequestWords[lang][c.outcome]
				if want == "" {
					t.Fatalf("bequestWords has no words for %s", c.outcome)
				}
				claudeMD, _ := os.ReadFile(filepath.Join(ws, "CLAUDE.md"))
				asked := hasRequest(srv, func(r *claudetest.Request) bool { return r.HasText(bequestMarker[lang]) && r.HasText(want) })
				if !asked && !bytes.Contains(claudeMD, []byte(want)) {
					t.Errorf("the bequest does not say %q; CLAUDE.md:\n%s", want, claudeMD)
				}
				rep := reportOf(t, env, runDir)
				if rep.state != c.outcome || rep.pageState != c.outcome {
					t.Errorf("the report says %q (data) and %q (page), want %q", rep.state, rep.pageState, c.outcome)
				}
				if c.gamed {
					// Each flag, with its file and line, on the ending,
					// the round's verdict line and the report's page.
					if !strings.Contains(flat(screen), flat("check.sh:2")) {
						t.Errorf("the ending does not name the flagged file and line:\n%s", screen)
					}
					if !strings.Contains(flat(screen), flat(fmt.Sprintf(tr(lang, "verdictNeedsLook"), 2, 2, 1))) {
						t.Errorf("the round's verdict line does not say it needs a look:\n%s", screen)
					}
					if !strings.Contains(rep.page, "check.sh:2") {
						t.Errorf("the report's page does not name the flag")
					}
					p := startPTYSize(t, flowerBin, env, &pty.Winsize{Rows: 50, Cols: cols}, "-w", ws, "--lang", lang)
					p.expectFlat(t, fmt.Sprintf(tr(lang, "lastNeedsLook"), 1))
					killGroup(t, p)
				}
				if c.except {
					// The item, with why it cannot be verified, on the
					// ending, the report's page and the next bare flower;
					// the round's verdict line counts it.
					item := "[c3] " + unverifiableText[lang] + " — " + unverifiableWhy[lang]
					if !strings.Contains(flat(screen), flat(item)) {
						t.Errorf("the ending does not name %q:\n%s", item, screen)
					}
					if !strings.Contains(flat(screen), flat(fmt.Sprintf(tr(lang, "verdictAchievedExcept"), 2, 2, 1))) {
						t.Errorf("the round's verdict line does not say achieved, except:\n%s", screen)
					}
					if !strings.Contains(rep.page, unverifiableWhy[lang]) {
						t.Errorf("the report's page does not name why c3 cannot be verified")
					}
					p := startPTYSize(t, flowerBin, env, &pty.Winsize{Rows: 50, Cols: cols}, "-w", ws, "--lang", lang)
					p.expectFlat(t, fmt.Sprintf(tr(lang, "lastAchievedExcept"), item))
					killGroup(t, p)
				}
				if c.noSandbox && !strings.Contains(rep.page, notMeasured) {
					t.Errorf("the report's page does not say %q", notMeasured)
				}
				if c.noSandbox {
					// The next bare flower's account of the last run.
					p := startPTYSize(t, flowerBin, env, &pty.Winsize{Rows: 50, Cols: cols}, "-w", ws, "--lang", lang)
					p.expectFlat(t, strings.SplitN(tr(lang, "lastAchievedUnmeasured"), "%", 2)[0]+"c1, c2")
					killGroup(t, p)
				}
				// One count of tokens and cost, read from one place.
				e, _ := LoadEnding(runDir)
				checkOneCount(t, lang, screen, e, rep)
			})
		}
	}
}

// unverifiableText and unverifiableWhy are the third checklist item
// withUnverifiableItem adds, and why it cannot be verified here.
var (
	unverifiableText = map[string]string{"en": "hello.txt opens in TextEdit on macOS", "zh": "在 macOS 的 TextEdit 里能打开 hello.txt"}
	unverifiableWhy  = map[string]string{"en": "this machine is Linux", "zh": "这台机器是 Linux"}
)

// withUnverifiableItem gives the demo's goal a third item, c3, that the
// goal step marks unverifiable on this machine, and has the judge's every
// structured verdict leave it not run.
func withUnverifiableItem(inner func(context.Context, *claudetest.Request) claudetest.Reply, lang string) func(context.Context, *claudetest.Request) claudetest.Reply {
	return func(ctx context.Context, r *claudetest.Request) claudetest.Reply {
		reply := inner(ctx, r)
		for i, b := range reply.Blocks {
			if b.Type != "tool_use" || b.Name != claudetest.StructuredOutputTool {
				continue
			}
			data, _ := json.Marshal(b.Input)
			var v map[string]any
			if json.Unmarshal(data, &v) != nil {
				continue
			}
			if list, ok := v["checklist"].([]any); ok {
				v["checklist"] = append(list, map[string]any{"id": "c3", "text": unverifiableText[lang], "command": "", "unverifiable": unverifiableWhy[lang]})
			} else if list, ok := v["items"].([]any); ok {
				v["items"] = append(list, map[string]any{"id": "c3", "status": "not_run", "evidence": "uname -s: Linux", "reason": unverifiableWhy[lang]})
			}
			reply.Blocks[i].Input = v
		}
		return reply
	}
}

// workMarkers opens the work step's first prompt in each language.
var workMarkers = map[string]string{"en": workMarker, "zh": "照这份需求做"}

// bequestMarker opens the bequest's prompt in each language.
var bequestMarker = map[string]string{"en": "The run ends here", "zh": "这次运行到此结束"}

// interruptTwice presses Ctrl-C, waits until the screen answers it, and
// presses it again: the person quitting.
// interruptTwice presses Ctrl-C at the question, waits for flower's answer
// to it, and presses it again. (Two signals sent before the process ran
// in between are one to the kernel: a status line redrawn meanwhile is
// no answer.)
func interruptTwice(t *testing.T, p *ptyRun, lang string) {
	t.Helper()
	p.cmd.Process.Signal(os.Interrupt)
	p.expectFlat(t, strings.TrimSpace(tr(lang, "cancelAskPrompt")))
	p.cmd.Process.Signal(os.Interrupt)
}

// A run stopped at the clarifier's question, before its brief exists, is
// not forgotten: bare flower shows its request and offers it, Enter
// continues it (the clarifier asks again), and neither "What should it
// do?" nor "The request is empty" appears.
func TestBareFlowerAfterAStopBeforeTheBriefOffersThatRequest(t *testing.T) {
	for _, lang := range []string{"en", "zh"} {
		for _, cols := range []uint16{80, 160} {
			t.Run(lang+"/"+string(rune('0'+cols/80)), func(t *testing.T) {
				t.Parallel()
				ws := gitStarterWorkspace(t)
				words := demo.TextsFor(flower.Lang(lang))
				srv := claudetest.NewServer(t, demoHandler(ws, lang, nil, nil))
				env := binEnv(t, srv)
				size := &pty.Winsize{Rows: 50, Cols: cols}
				p := startPTYSize(t, flowerBin, env, size, "-w", ws, "--lang", lang, words.Ask)
				p.expect(t, words.Question)
				p.expect(t, tr(lang, "answerPrompt")[:8])
				interruptTwice(t, p, lang)
				if code := p.wait(t); code != ExitInterrupted {
					t.Fatalf("Ctrl-C twice at the question: exit %d, want %d:\n%s", code, ExitInterrupted, p.screen())
				}
				if _, err := os.Stat(filepath.Join(ws, ".flower", "notes", flower.StarterNamesFor(flower.Lang(lang)).Brief)); err == nil {
					t.Fatal("the clarify step wrote a brief although it was stopped at its question")
				}

				// Bare flower: the request is shown and offered. (With
				// --timeout 0 a question asked again settles at once, so
				// the continued run goes to its end.)
				p = startPTYSize(t, flowerBin, env, size, "-w", ws, "--lang", lang, "--timeout", "0")
				p.expectFlat(t, strings.Replace(tr(lang, "lastRequest"), "%s", words.Ask, 1))
				p.expectFlat(t, tr(lang, "lastStopped"))
				p.expectFlat(t, tr(lang, "wakeBeforeBrief"))
				p.expect(t, "> ")
				io.WriteString(p.tty, "\r")
				// Enter continues it: the clarifier's session resumes.
				p.expectFlat(t, tr(lang, "continuingNoBrief"))
				p.expectFlat(t, strings.Replace(tr(lang, "stepResumed"), "%d", "2", 1))
				if code := p.wait(t); code != 0 {
					t.Errorf("the continued run: exit %d:\n%s", code, p.screen())
				}
				if e, ok := LoadEnding(filepath.Join(ws, "runs")); !ok || e.Request != words.Ask {
					t.Errorf("the continued run's ending: %+v (recorded %v), want the request %q", e, ok, words.Ask)
				}
				screen := strings.Join(screentest.Render(p.screen(), int(cols), 50), "\n")
				for _, never := range []string{tr(lang, "start")[:12], tr(lang, "empty")[:12]} {
					if strings.Contains(screen, never) {
						t.Errorf("bare flower says %q:\n%s", never, screen)
					}
				}
				if strings.Contains(flat(screen), flat(tr(lang, "startingNewNoBrief"))) {
					t.Errorf("Enter started the request anew:\n%s", screen)
				}
				checkLanguage(t, lang == "en", screen)
				// The continued clarify is the old session's: the
				// lineage kept it across the wake.
				var lin struct {
					Steps map[string]string `json:"steps"`
					Woke  int               `json:"woke"`
				}
				data, err := os.ReadFile(filepath.Join(ws, "runs", "lineage.json"))
				if err != nil || json.Unmarshal(data, &lin) != nil {
					t.Fatalf("lineage: %v %s", err, data)
				}
				if lin.Steps[flower.StarterNamesFor(flower.Lang(lang)).Clarify] == "" {
					t.Errorf("the lineage lost the clarify session: %s", data)
				}
			})
		}
	}
}

// After "start something new" (/new at the wake prompt), the report shows
// the new request beside its outcome, not the old one.
func TestTheReportShowsTheNewRequestAfterSlashNew(t *testing.T) {
	for _, c := range []struct {
		lang string
		cols uint16
	}{{"en", 80}, {"zh", 160}} {
		t.Run(c.lang, func(t *testing.T) {
			t.Parallel()
			ws := gitStarterWorkspace(t)
			words := demo.TextsFor(flower.Lang(c.lang))
			srv := claudetest.NewServer(t, demoHandler(ws, c.lang, nil, nil))
			env := binEnv(t, srv)
			size := &pty.Winsize{Rows: 50, Cols: c.cols}
			out, code := pipedStarter(t, ws, c.lang, demoHandler(ws, c.lang, nil, nil), words.Ask)
			if code != 0 {
				t.Fatalf("the first request: exit %d:\n%s", code, out)
			}
			// The demo's scripted model answers a request that holds its
			// own words; the marker tells the two apart.
			second := words.Ask + " (second-request)"
			p := startPTYSize(t, flowerBin, env, size, "-w", ws, "--lang", c.lang, "--timeout", "0")
			p.expectFlat(t, tr(c.lang, "wakeAchieved"))
			p.expect(t, "> ")
			io.WriteString(p.tty, "/new\r")
			p.expectFlat(t, tr(c.lang, "start"))
			waitFor(t, "the second prompt", func() bool { return strings.Count(p.screen(), "> ") >= 2 })
			io.WriteString(p.tty, second+"\r")
			if code := p.wait(t); code != 0 {
				t.Fatalf("the second request: exit %d:\n%s", code, p.screen())
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, flowerBin, "report", "--json", filepath.Join(ws, "runs"))
			cmd.Env, cmd.Dir = env, t.TempDir()
			data, err := cmd.Output()
			if err != nil {
				t.Fatalf("flower report --json: %v", err)
			}
			var rep struct {
				Request string `json:"request"`
				Outcome struct {
					State string `json:"state"`
				} `json:"outcome"`
			}
			if err := json.Unmarshal(data, &rep); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(rep.Request, "(second-request)") {
				t.Errorf("the report's request is %q, want the new one %q", rep.Request, second)
			}
			if rep.Outcome.State != OutcomeAchieved {
				t.Errorf("the report's outcome %q, want %q", rep.Outcome.State, OutcomeAchieved)
			}
		})
	}
}
