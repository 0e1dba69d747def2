package app

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/flowerrun/flower"
	"github.com/flowerrun/flower/claude/claudetest"
	"github.com/flowerrun/flower/human"
	"github.com/flowerrun/flower/internal/demo"
	"github.com/flowerrun/flower/store"
)

// terminalCommand runs a Command in-process on a pty (so the console and
// Ctrl-C are the terminal's) with a one-step workflow that has a human
// channel, against srv.
func terminalCommand(t *testing.T, srv *claudetest.Server, ws string) (run func() int, master *os.File, screenOut func() string) {
	t.Helper()
	for k, v := range claudetest.Env(t, srv) {
		t.Setenv(k, v)
	}
	t.Setenv("FLOWER_CLAUDE", claudetest.CLIPath(t))
	// The tests read the Chinese screens: the locale says Chinese.
	t.Setenv("LC_ALL", "")
	t.Setenv("LC_MESSAGES", "")
	t.Setenv("LANG", "zh_CN.UTF-8")
	m, s, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	pty.Setsize(m, &pty.Winsize{Rows: 40, Cols: 120})
	var mu sync.Mutex
	var out bytes.Buffer
	done := make(chan struct{})
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := m.Read(buf)
			mu.Lock()
			out.Write(buf[:n])
			mu.Unlock()
			if err != nil {
				close(done)
				return
			}
		}
	}()
	t.Cleanup(func() { s.Close(); m.Close(); <-done })
	cmd := &Command{Stdin: s, Stdout: s, Stderr: s, Signals: true,
		Program: func(ctx context.Context, cfg Config, ui *UI) (*flower.Workflow, error) {
			return &flower.Workflow{
				Channel: human.New(human.WithTimeout(time.Minute)),
				Steps:   []flower.Step{{Name: "work", Spec: flower.AgentSpec{Name: "work"}, Prompt: flower.Text("do the long thing")}},
			}, nil
		}}
	run = func() int { return cmd.Run(context.Background(), []string{"-w", ws, "build X"}) }
	screenOut = func() string { mu.Lock(); defer mu.Unlock(); return out.String() }
	return run, m, screenOut
}

// slowUntil answers the probe, stalls the step until a request holds
// words, then answers.
func slowUntil(t *testing.T, words string) *claudetest.Server {
	return claudetest.NewServer(t, func(ctx context.Context, r *claudetest.Request) claudetest.Reply {
		switch {
		case r.MaxTokens == 16:
			return claudetest.Say("hi")
		case words != "" && r.HasText(words):
			return claudetest.Say("resumed: " + words)
		case r.HasText("do the long thing"):
			return claudetest.Reply{Fault: &claudetest.Fault{Delay: 2 * time.Minute}}
		}
		return claudetest.Say("ok")
	})
}

// waitFor waits for ok, for minutes: a loaded machine runs a whole
// starter flow's first steps slowly, and a wait that gives up early fails
// for nothing.
func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(3 * time.Minute); !ok(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
	}
}

func TestCtrlCOnceResumesTheRoundWithTheTypedWords(t *testing.T) {
	srv := slowUntil(t, "focus on the tests")
	run, master, screen := terminalCommand(t, srv, t.TempDir())
	code := make(chan int, 1)
	go func() { code <- run() }()
	waitFor(t, "the step's request", func() bool { return srv.Count() >= 2 })
	syscall.Kill(os.Getpid(), syscall.SIGINT)
	waitFor(t, "the interrupt question", func() bool { return strings.Contains(screen(), "要说什么?") })
	io.WriteString(master, "focus on the tests\r")
	select {
	case c := <-code:
		if c != 0 {
			t.Fatalf("exit %d:\n%s", c, screen())
		}
	case <-time.After(90 * time.Second):
		t.Fatalf("the run did not end:\n%s", screen())
	}
	// The pty hands the last line over after the command returned.
	waitFor(t, "the closing line", func() bool { return strings.Contains(screen(), "- 报告:flower report ") })
	for _, want := range []string{"! 按回车就打断这一轮", "resumed: focus on the tests"} {
		if !strings.Contains(screen(), want) {
			t.Errorf("screen lacks %q:\n%s", want, screen())
		}
	}
}

func TestCtrlCTwiceQuitsWith130AndTheStepRescued(t *testing.T) {
	srv := slowUntil(t, "")
	ws := t.TempDir()
	run, _, screen := terminalCommand(t, srv, ws)
	code := make(chan int, 1)
	go func() { code <- run() }()
	waitFor(t, "the step's request", func() bool { return srv.Count() >= 2 })
	syscall.Kill(os.Getpid(), syscall.SIGINT)
	waitFor(t, "the interrupt question", func() bool { return strings.Contains(screen(), "要说什么?") })
	syscall.Kill(os.Getpid(), syscall.SIGINT)
	select {
	case c := <-code:
		if c != ExitInterrupted {
			t.Fatalf("exit %d, want 130:\n%s", c, screen())
		}
	case <-time.After(90 * time.Second):
		t.Fatalf("the run did not end:\n%s", screen())
	}
	// The terminal's last bytes may still be on their way to the screen.
	waitFor(t, "the quit line", func() bool {
		return strings.Contains(screen(), "已退出。同一目录再跑一次 flower 会接着做。")
	})
	if s := screen(); strings.Contains(s, "goroutine") {
		t.Errorf("screen:\n%s", s)
	}
	if errs := manifestErrors(t, filepath.Join(ws, "runs", "manifest.json")); len(errs) != 1 || errs[0] == "" {
		t.Errorf("manifest: %q", errs)
	}
}

// interruptDebris are texts that only a cut call leaves: the CLI's refusal
// for a tool call it stopped, its "[Request interrupted" marker, and the
// notes flower's store puts in place of a cut or missing result (both
// languages). None of them is ever an answer or work.
var interruptDebris = []string{
	"doesn't want to proceed", "STOP what you are doing", "The tool use was rejected", "[Request interrupted",
	"[The previous round was interrupted here", "[This step was interrupted", store.DefaultInterruptText, store.DefaultOrphanText,
}

// checkNoInterruptDebris fails when the screen, a file under one of dirs
// (the workspace with its run folder and workbench; the CLI's own files
// included) or a request to the model holds interrupt debris.
func checkNoInterruptDebris(t *testing.T, screen string, dirs []string, srv *claudetest.Server) {
	t.Helper()
	for _, d := range interruptDebris {
		if strings.Contains(screen, d) {
			t.Errorf("the screen shows %q:\n%s", d, screen)
		}
	}
	for _, dir := range dirs {
		filepath.WalkDir(dir, func(path string, e os.DirEntry, err error) error {
			if err != nil || e.IsDir() {
				return err
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return nil // a socket or a lock: nothing written in it
			}
			for _, d := range interruptDebris {
				if bytes.Contains(data, []byte(d)) {
					t.Errorf("%s holds %q", path, d)
				}
			}
			return nil
		})
	}
	if srv == nil {
		return
	}
	for i, r := range srv.Requests() {
		for _, d := range interruptDebris {
			if bytes.Contains(r.Body, []byte(d)) {
				t.Errorf("request %d to the model holds %q", i, d)
			}
		}
	}
}

// cancelledAskScreen checks what a Ctrl-C at question q1 and Enter showed
// in lang: the cancel said before and after, no false note about
// questions still waiting.
func cancelledAskScreen(t *testing.T, lang flower.Lang, screen string, words bool) {
	t.Helper()
	key := "askCancelled"
	if words {
		key = "askCancelledWords"
	}
	for _, want := range []string{fmt.Sprintf(text(lang, "cancelAskHint"), "q1"), fmt.Sprintf(text(lang, key), "q1")} {
		if !strings.Contains(screen, want) {
			t.Errorf("the screen lacks %q:\n%s", want, screen)
		}
	}
	for _, wrong := range []string{text(lang, "interrupting"), strings.SplitN(text(lang, "stillPending"), "%", 2)[0], text(lang, "skipped")} {
		if strings.Contains(screen, wrong) {
			t.Errorf("the screen says %q:\n%s", wrong, screen)
		}
	}
}

// TestCtrlCAtARealRunsQuestionCancelsItCleanly: Ctrl-C at the clarifier's
// question of a real run (the real CLI, the demo's script served by
// claudetest) and Enter, with and without words, cancel that question:
// the screen says so, the run goes on to the end with the brief's own
// assumption, and no refusal text or interrupt placeholder reaches the
// screen, a file of the workspace or run folder, or any later request.
// Before: the round was interrupted, the ask call cut, the CLI's refusal
// shown, and its placeholder became the answer, the goal and hello.txt.
func TestCtrlCAtARealRunsQuestionCancelsItCleanly(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		wordsCase
		words string
	}{{wordsCase{"en", 160}, ""}, {wordsCase{"zh", 80}, "你自己定"}} {
		t.Run(c.name(), func(t *testing.T) {
			t.Parallel()
			ws := shortTempDir(t)
			lang := flower.Lang(c.lang)
			texts := demo.TextsFor(lang)
			srv := wordsServer(t, ws, c.lang, nil, nil)
			p := startPTYCols(t, c.cols, binEnv(t, srv), "-w", ws, "--lang", c.lang, "--rounds", "2", texts.Ask)
			p.expect(t, "2) "+texts.Options[1])
			p.tty.Write([]byte{3})
			p.expect(t, fmt.Sprintf(text(lang, "cancelAskHint"), "q1"))
			io.WriteString(p.tty, c.words+"\r")
			if code := p.wait(t); code != ExitOK {
				t.Fatalf("exit %d:\n%s", code, p.screen())
			}
			s := p.screen()
			cancelledAskScreen(t, lang, s, c.words != "")
			checkNoInterruptDebris(t, s, []string{ws}, srv)
			if data, err := os.ReadFile(filepath.Join(ws, texts.File)); err != nil || string(data) != texts.Answer+"\n" {
				t.Errorf("%s: %q %v, want the assumed %q", texts.File, data, err, texts.Answer)
			}
			if c.words != "" && !hasRequest(srv, func(r *claudetest.Request) bool { return r.HasText(c.words) }) {
				t.Errorf("the words %q typed after Ctrl-C reached no request", c.words)
			}
		})
	}
}
