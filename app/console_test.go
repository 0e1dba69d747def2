package app

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowerrun/flower/claude/claudetest"
	"github.com/flowerrun/flower/event"
	"github.com/flowerrun/flower/human"
	"github.com/flowerrun/flower/internal/screen"
)

// lockedBuffer is a screen's output read while the console writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// pipeConsole runs a Console on a pipe (a real file, so the poll path is the
// terminal's) and returns the writing end.
func pipeConsole(t *testing.T, ch *human.Channel, oracle func(string)) (*os.File, *lockedBuffer, *Console, func()) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	out := &lockedBuffer{}
	m := &Command{Stdin: r, Stdout: out}
	ui := m.newUI("zh")
	c := NewConsole(ui, ch, oracle, nil)
	ch.AttachOnEvent(c.Event)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { c.Run(ctx); close(done) }()
	stop := func() {
		cancel()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Error("the console did not stop with its context")
		}
		r.Close()
		w.Close()
	}
	return w, out, c, stop
}

func eventually(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !ok(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
	}
}

func TestConsoleRoutesEachLine(t *testing.T) {
	t.Parallel()
	amend := filepath.Join(t.TempDir(), "brief.md")
	ch := human.New(human.WithTimeout(time.Minute), human.WithAmendPath(amend))
	var mu sync.Mutex
	var asked []string
	w, out, _, stop := pipeConsole(t, ch, func(q string) { mu.Lock(); asked = append(asked, q); mu.Unlock() })
	defer stop()

	results := make(chan human.Ask, 3)
	ask := func(q string, opts ...string) {
		go func() { a, _ := ch.Ask(context.Background(), q, opts); results <- a }()
		eventually(t, "the question waits", func() bool { return len(ch.Pending()) == 1 })
	}
	ask("Which?", "Postgres", "SQLite")
	w.WriteString("? what is it doing\n") // a side question never answers
	w.WriteString("2\n")
	if a := <-results; a.Answer != "SQLite" {
		t.Errorf("digit: %+v", a)
	}
	ask("Name?")
	w.WriteString("  Ada  \n")
	if a := <-results; a.State != human.Answered || a.Answer != "Ada" {
		t.Errorf("text: %+v", a)
	}
	ask("Skip me?")
	w.WriteString("\n")
	if a := <-results; a.State != human.Declined {
		t.Errorf("empty line: %+v", a)
	}
	w.WriteString("？ 全角问号也是旁路\n")
	w.WriteString("?\n") // "?" alone is ignored
	w.WriteString("also add tests\n")
	eventually(t, "the inbox gets the line", func() bool { return len(ch.PendingMail()) == 1 })
	mu.Lock()
	if len(asked) != 2 || asked[0] != "what is it doing" || asked[1] != "全角问号也是旁路" {
		t.Errorf("side questions: %q", asked)
	}
	mu.Unlock()
	if m := ch.PendingMail(); m[0].Text != "also add tests" {
		t.Errorf("inbox: %+v", m)
	}
	eventually(t, "the receipt", func() bool {
		return strings.Contains(out.String(), "+ 收到 (它下次查收件箱时会看到;已追加进确认书)")
	})
}

func TestConsoleEndOfInputSettlesEveryQuestionAtOnce(t *testing.T) {
	t.Parallel()
	ch := human.New(human.WithTimeout(time.Hour))
	w, out, _, stop := pipeConsole(t, ch, nil)
	defer stop()
	first := make(chan human.Ask, 1)
	go func() { a, _ := ch.Ask(context.Background(), "Waiting?", nil); first <- a }()
	eventually(t, "the question waits", func() bool { return len(ch.Pending()) == 1 })
	w.Close()
	if a := <-first; a.State != human.Declined {
		t.Errorf("the waiting question: %+v", a)
	}
	// A later question does not wait its hour.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if a, err := ch.Ask(ctx, "Later?", nil); err != nil || a.State != human.Declined {
		t.Errorf("a later question: %+v %v", a, err)
	}
	if !strings.Contains(out.String(), "输入已关闭") {
		t.Errorf("the end of input is not said: %q", out.String())
	}
}

func TestAsideAnswersApartFromTheRun(t *testing.T) {
	srv := claudetest.NewServer(t, func(ctx context.Context, r *claudetest.Request) claudetest.Reply {
		return claudetest.Say("it is running the tests")
	})
	for k, v := range claudetest.Env(t, srv) {
		t.Setenv(k, v)
	}
	t.Setenv("FLOWER_CLAUDE", claudetest.CLIPath(t))
	ws := t.TempDir()
	out := &lockedBuffer{}
	ui := &UI{Screen: screen.NewWriter(out), Lang: "zh"}
	cfg := Config{Workspace: ws, RunDir: filepath.Join(ws, "runs"), Lang: "zh"}
	a := NewAside(context.Background(), ui, cfg, nil)
	call := event.New(event.ToolCall, "go test ./...", nil)
	call.Tool = "Bash"
	a.Event(call)
	a.Event(event.New(event.Thinking, "secret thoughts", nil))
	a.Ask("what is it doing?")
	a.Wait()
	s := out.String()
	if !strings.Contains(s, "# 旁路\nit is running the tests\n($") || !strings.Contains(s, "没有打扰正在跑的运行)") {
		t.Errorf("aside output:\n%s", s)
	}
	var sent bool
	for _, r := range srv.Requests() {
		if r.HasText("what is it doing?") {
			sent = true
			if !r.HasText("[tool_call/Bash·主线程] go test ./...") || r.HasText("secret thoughts") || !r.HasText("(这次运行没开工作台)") {
				t.Errorf("the oracle's prompt: %q", r.LastUserText())
			}
		}
	}
	if !sent {
		t.Error("the side question never reached the model")
	}
	if _, err := os.Stat(filepath.Join(cfg.RunDir, "aside", "manifest.json")); err != nil {
		t.Errorf("the aside keeps its own manifest: %v", err)
	}
	if _, err := os.Stat(filepath.Join(cfg.RunDir, "manifest.json")); err == nil {
		t.Error("the side question entered the run's manifest")
	}
}
