package app

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/flowerrun/flower"
	"github.com/flowerrun/flower/claude/claudetest"
	"github.com/flowerrun/flower/human"
	"github.com/flowerrun/flower/internal/demo"
	"github.com/flowerrun/flower/internal/screen"
)

func TestTheSimulatedHumanGivesThePerson15sAndWaitsWhileTheyType(t *testing.T) {
	t.Parallel()
	shown := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return shown.Add(time.Duration(s * float64(time.Second))) }
	tests := []struct {
		name      string
		lastInput time.Time
		due       time.Time
	}{
		{"nobody typed: 15 s after the question", time.Time{}, at(15)},
		{"input before the question does not delay it", at(-30), at(15)},
		{"input early on: 15 s after it", at(3), at(18)},
		{"input at 12 s: 15 s of quiet after it", at(12), at(27)},
		{"input at 40 s (a side question): 15 s after it, to read its answer", at(40), at(55)},
	}
	for _, tt := range tests {
		if got := demoAnswerDue(shown, tt.lastInput, defaultDemoPause); !got.Equal(tt.due) {
			t.Errorf("%s: due %v after the question, want %v", tt.name, got.Sub(shown), tt.due.Sub(shown))
		}
	}
	if d, err := demoPause(""); err != nil || d != 15*time.Second {
		t.Errorf("default pause %v %v", d, err)
	}
	if d, err := demoPause("250ms"); err != nil || d != 250*time.Millisecond {
		t.Errorf("FLOWER_DEMO_PAUSE=250ms: %v %v", d, err)
	}
	for _, bad := range []string{"soon", "-1s", "15"} {
		if _, err := demoPause(bad); err == nil || !strings.Contains(err.Error(), "FLOWER_DEMO_PAUSE") {
			t.Errorf("FLOWER_DEMO_PAUSE=%s: %v", bad, err)
		}
	}
}

// TestTheSimulatedHumanAnswersOnlyAfterThePausePastThePersonsLastInput
// runs the simulated human on a real channel: a line typed late in the
// pause puts its answer off.
func TestTheSimulatedHumanAnswersOnlyAfterThePausePastThePersonsLastInput(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	var mu sync.Mutex
	ui := &UI{Screen: screen.NewWriter(lockedWriter{&mu, &out}), Lang: "en"}
	ch := human.New(human.WithTimeout(time.Minute))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const pause = 3 * time.Second
	done := make(chan struct{})
	go func() { defer close(done); answerAsDemo(ctx, ui, ch, "hello", pause) }()
	answered := make(chan human.Ask, 1)
	go func() {
		a, _ := ch.Ask(ctx, "What should hello.txt say?", nil)
		answered <- a
	}()
	var a human.Ask
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if p := ch.Pending(); len(p) > 0 {
			a = p[0]
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the question never waited")
		}
	}
	time.Sleep(time.Until(a.AskedAt.Add(pause - 500*time.Millisecond)))
	ui.touched() // a line typed half a second before the pause is over
	typed := ui.LastInput()
	var got human.Ask
	select {
	case got = <-answered:
	case <-time.After(30 * time.Second):
		t.Fatal("the simulated human never answered")
	}
	cancel()
	<-done
	if got.State != human.Answered || got.Answer != "hello" {
		t.Fatalf("ask settled %s %q", got.State, got.Answer)
	}
	if early := typed.Add(pause / 3).Sub(got.SettledAt); early > 0 {
		t.Errorf("answered %v after the person's last line, before the %v of quiet", got.SettledAt.Sub(typed), pause/3)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(out.String(), "the simulated human answered hello") {
		t.Errorf("screen: %q", out.String())
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// demoRun is `flower demo` on a terminal of cols columns with the locale
// and language of tag, the pinned real CLI, and the simulated human's
// pause (long: the person answers).
// demoLimit is how long a pty demo test waits for a screen: a whole
// demo's worth, on a loaded machine.
const demoLimit = 4 * time.Minute

func demoRun(t *testing.T, tag string, cols uint16, home string, args ...string) *ptyRun {
	t.Helper()
	return startPTYSize(t, flowerBin, demoEnv(t, tag, home), &pty.Winsize{Rows: 40, Cols: cols}, append([]string{"demo", "--lang", tag}, args...)...)
}

// demoEnv is the environment of demoRun: no credentials anywhere.
func demoEnv(t *testing.T, tag, home string) []string {
	locale := map[string]string{"en": "en_US.UTF-8", "zh": "zh_CN.UTF-8"}[tag]
	return append(claudetest.BaseEnv(), "HOME="+home, "LANG="+locale, "FLOWER_CLAUDE="+claudetest.CLIPath(t), "FLOWER_DEMO_PAUSE=10m")
}

// demoWords are one language's words of the pty tests.
type demoWords struct {
	dispatch, interruptAsk, aside, asked, achieved, wake, try string
}

var demoScreens = map[string]demoWords{
	"en": {"> dispatch coder", "What do you want to say?", "# aside", "You asked: what is the plan", "achieved", "<- continuing in ", "- Try: answer it yourself · ?question = side question · Ctrl-C = interrupt"},
	"zh": {"> 派人 coder", "要说什么?", "# 旁路", "你问:what is the plan", "已达成", "<- 在 ", "- 可以试:自己回答提问 · ?问题 = 旁路问答 · Ctrl-C = 打断"},
}

// TestDemoTakesTheTypedAnswerASideQuestionAndCtrlCWithWords: the person
// asks a side question while the clarifier's question waits, answers it
// (the simulated human waits) and interrupts the coder with words; the demo ends achieved
// with the typed answer in hello.txt, the side question answered, the
// words acknowledged, and no text of the fake on the screen.
func TestDemoTakesTheTypedAnswerASideQuestionAndCtrlCWithWords(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		tag    string
		cols   uint16
		answer string
	}{{"en", 80, "hello, world"}, {"zh", 160, "你好, world"}} {
		t.Run(fmt.Sprintf("%s-%d", tc.tag, tc.cols), func(t *testing.T) {
			t.Parallel()
			w, ws := demoScreens[tc.tag], t.TempDir()
			p := demoRun(t, tc.tag, tc.cols, t.TempDir(), "-w", ws)
			p.expectWithin(t, "2) hello, world", demoLimit)
			// A side question while the question waits (a Ctrl-C right
			// after a line would flush it unread from the terminal).
			io.WriteString(p.tty, "? what is the plan\r")
			p.expectWithin(t, w.asked, demoLimit)
			io.WriteString(p.tty, tc.answer+"\r")
			p.expectWithin(t, w.dispatch, demoLimit)
			p.tty.Write([]byte{3})
			p.expectWithin(t, w.interruptAsk, demoLimit)
			io.WriteString(p.tty, "make it shout\r")
			if code := p.exitWithin(t, 5*time.Minute); code != 0 {
				t.Fatalf("exit %d:\n%s", code, p.screen())
			}
			s := p.screen()
			for _, want := range []string{w.try, w.aside, w.asked, `"make it shout"`, w.achieved} {
				if !strings.Contains(s, want) {
					t.Errorf("the screen lacks %q:\n%s", want, s)
				}
			}
			// The first screen names the protection once (the demo said
			// it again before it).
			if n := strings.Count(s, strings.SplitN(tr(tc.tag, "protection"), "%", 2)[0]); n != 1 {
				t.Errorf("the protection is named %d times, want once:\n%s", n, s)
			}
			if strings.Contains(s, "fake:") || strings.Contains(s, "simulated human answered") || strings.Contains(s, "模拟的人回答了") {
				t.Errorf("the fake's own words, or the simulated human over the person:\n%s", s)
			}
			// The Ctrl-C cut the coder's call: the screen says so in
			// flower's words, never in the CLI's refusal to the model.
			checkNoInterruptDebris(t, s, nil, nil)
			if strings.Contains(s, "error_during_execution") {
				t.Errorf("the interrupted round shows as failed:\n%s", s)
			}
			if data, err := os.ReadFile(filepath.Join(ws, "hello.txt")); err != nil || string(data) != tc.answer+"\n" {
				t.Errorf("hello.txt: %q %v, want the typed answer %q", data, err, tc.answer)
			}
		})
	}
}

// TestDemoCtrlCTwiceThenAWakeEndsWithTheFileWritten: Ctrl-C twice while
// the coder works quits (130) saying how to continue the demo; that
// command (or bare flower in the folder, which offers it) wakes it, the
// coder runs again and the judge, reading the file, says achieved.
func TestDemoCtrlCTwiceThenAWakeEndsWithTheFileWritten(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		tag  string
		cols uint16
	}{{"en", 160}, {"zh", 80}} {
		t.Run(fmt.Sprintf("%s-%d", tc.tag, tc.cols), func(t *testing.T) {
			t.Parallel()
			w, ws, home := demoScreens[tc.tag], t.TempDir(), t.TempDir()
			p := demoRun(t, tc.tag, tc.cols, home, "-w", ws)
			p.expectWithin(t, "2) hello, world", demoLimit)
			io.WriteString(p.tty, "bonjour\r")
			p.expectWithin(t, w.dispatch, demoLimit)
			p.tty.Write([]byte{3})
			p.expectWithin(t, w.interruptAsk, demoLimit)
			p.tty.Write([]byte{3})
			if code := p.exitWithin(t, 5*time.Minute); code != ExitInterrupted {
				t.Fatalf("exit %d, want 130:\n%s", code, p.screen())
			}
			if s := p.screen(); !strings.Contains(s, "flower demo -w "+ws) || strings.Contains(s, "fake:") {
				t.Errorf("the quit does not say how to continue the demo:\n%s", s)
			}
			if tc.tag == "en" {
				p = demoRun(t, tc.tag, tc.cols, home, "-w", ws)
			} else {
				// Bare flower in the demo's folder offers to continue the
				// demo (it went to credential setup, then a real model).
				p = startPTYSize(t, flowerBin, demoEnv(t, tc.tag, home), &pty.Winsize{Rows: 40, Cols: tc.cols}, "-w", ws)
				p.expectFlat(t, strings.SplitN(tr(tc.tag, "demoContinueAsk"), "[", 2)[0])
				io.WriteString(p.tty, "\r")
			}
			if code := p.exitWithin(t, 5*time.Minute); code != 0 {
				t.Fatalf("the wake: exit %d:\n%s", code, p.screen())
			}
			s := p.screen()
			for _, want := range []string{w.wake, w.dispatch, w.achieved} {
				if !strings.Contains(s, want) {
					t.Errorf("the wake's screen lacks %q:\n%s", want, s)
				}
			}
			if strings.Contains(s, "fake:") || strings.Contains(s, "2) hello, world") {
				t.Errorf("the wake shows the fake's words or asks again:\n%s", s)
			}
			if data, err := os.ReadFile(filepath.Join(ws, "hello.txt")); err != nil || string(data) != "bonjour\n" {
				t.Errorf("hello.txt: %q %v", data, err)
			}
		})
	}
}

// TestTheDemoJudgeFailsAFileThatSaysSomethingElse: a coder that writes the
// wrong text gets a judge who read the file and says so, in every round,
// and the goal is not reached.
func TestTheDemoJudgeFailsAFileThatSaysSomethingElse(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	texts := demo.TextsFor("en")
	srv := starterServer(t, ws, claudetest.Script{demo.CoderMarker: {
		claudetest.NewReply(claudetest.ToolUse("", "Write", map[string]any{"file_path": filepath.Join(ws, texts.File), "content": "goodbye\n"})),
		claudetest.Always(claudetest.Say(texts.CoderDone)),
	}}, nil)
	cmd := exec.Command(flowerBin, "-w", ws, "--lang", "en", "--timeout", "0", "--rounds", "2", texts.Ask)
	cmd.Env, cmd.Dir = binEnv(t, srv), t.TempDir()
	out, _ := cmd.CombinedOutput()
	wrong := fmt.Sprintf(texts.Wrong, "goodbye", texts.Answer)
	for round := 1; round <= 3; round++ {
		verdict := fmt.Sprintf(text("en", "verdictNotYet"), round, 2, wrong)
		if got := strings.Contains(string(out), verdict); got != (round <= 2) {
			t.Errorf("round %d's verdict %q shown: %v:\n%s", round, verdict, got, out)
		}
	}
	// The ending says how it ended, once: no error line after it repeats
	// the reason.
	ending := fmt.Sprintf(text("en", "endNotAchieved"), 2, wrong)
	if !strings.Contains(string(out), ending) || strings.Contains(string(out), fmt.Sprintf(text("en", "aborted"), "work")) {
		t.Errorf("want the ending %q and no error line after it:\n%s", ending, out)
	}
	if strings.Contains(string(out), "both checks pass") {
		t.Errorf("a judge passed the wrong file:\n%s", out)
	}
	reads := 0
	for _, r := range srv.Requests() {
		for _, b := range r.ToolResults() {
			if strings.Contains(b.Content, "goodbye") && r.HasText("Judge this round") {
				reads++
				break
			}
		}
	}
	if reads != 2 {
		t.Errorf("%d judge requests saw the file's real text, want one a round", reads)
	}
}

// TestDemoCtrlCAtTheFirstQuestionCancelsItCleanly: Ctrl-C at the demo's
// question and Enter (with words or none) cancel the question, visibly;
// the demo ends achieved with the assumed "hello", and no refusal text or
// interrupt placeholder is on the screen, in the brief or goal, or in any
// file of the demo's folder and run folder (the CLI's own transcripts
// included). Before: the CLI's refusal was shown, its placeholder became
// the brief's answer, the goal and hello.txt, and the judge passed it.
func TestDemoCtrlCAtTheFirstQuestionCancelsItCleanly(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		tag   string
		cols  uint16
		words string
	}{{"en", 80, "use your judgement"}, {"zh", 160, ""}} {
		t.Run(fmt.Sprintf("%s-%d", tc.tag, tc.cols), func(t *testing.T) {
			t.Parallel()
			lang, ws := flower.Lang(tc.tag), shortTempDir(t)
			texts := demo.TextsFor(lang)
			p := demoRun(t, tc.tag, tc.cols, t.TempDir(), "-w", ws)
			p.expectWithin(t, "2) hello, world", demoLimit)
			p.tty.Write([]byte{3})
			p.expectWithin(t, fmt.Sprintf(text(lang, "cancelAskHint"), "q1"), demoLimit)
			io.WriteString(p.tty, tc.words+"\r")
			if code := p.exitWithin(t, 5*time.Minute); code != 0 {
				t.Fatalf("exit %d:\n%s", code, p.screen())
			}
			s := p.screen()
			cancelledAskScreen(t, lang, s, tc.words != "")
			if !strings.Contains(s, demoScreens[tc.tag].achieved) {
				t.Errorf("the demo did not end achieved:\n%s", s)
			}
			checkNoInterruptDebris(t, s, []string{ws}, nil)
			if data, err := os.ReadFile(filepath.Join(ws, texts.File)); err != nil || string(data) != texts.Answer+"\n" {
				t.Errorf("%s: %q %v, want the assumed %q", texts.File, data, err, texts.Answer)
			}
			brief, err := os.ReadFile(filepath.Join(ws, ".flower", "notes", flower.StarterNamesFor(lang).Brief))
			if err != nil || !strings.Contains(string(brief), fmt.Sprintf(texts.Assumed, texts.Answer)) {
				t.Errorf("the brief does not record the assumption: %v\n%s", err, brief)
			}
		})
	}
}
