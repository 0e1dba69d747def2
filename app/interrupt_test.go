package app

import (
	"bytes"
	"context"
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
