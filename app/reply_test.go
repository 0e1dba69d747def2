package app

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowerrun/flower/human"
)

func replyBin(t *testing.T, ws string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(flowerBin, append([]string{"-w", ws, "reply"}, args...)...)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), string(out)
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0, string(out)
}

func TestReplyAnswersThePendingQuestionOrLeavesMail(t *testing.T) {
	t.Setenv(human.StateDirEnv, t.TempDir())
	ws := t.TempDir()
	if code, out := replyBin(t, ws, "hello"); code != ExitFailure || !strings.Contains(out, "no flower run serves replies") {
		t.Errorf("no run: exit %d, %q", code, out)
	}
	ch := human.New(human.WithTimeout(time.Minute))
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); human.ServeFiles(ctx, ch, ReplyDir(filepath.Join(ws, "runs"))) }()
	defer func() { cancel(); wg.Wait() }()

	got := make(chan human.Ask, 1)
	go func() {
		a, _ := ch.Ask(ctx, "Which database?", []string{"Postgres", "SQLite"})
		got <- a
	}()
	if _, err := ch.NextAsk(ctx); err != nil {
		t.Fatal(err)
	}
	// pending.json is published on the server's next tick.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if p, _ := human.ReadPending(ReplyDir(filepath.Join(ws, "runs"))); len(p.Questions) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("pending.json never listed the question")
		}
	}
	code, out := replyBin(t, ws, "1")
	if code != 0 || !strings.Contains(out, "+ answered q1: Postgres") {
		t.Fatalf("reply 1: exit %d, %q", code, out)
	}
	if a := <-got; a.State != human.Answered || a.Answer != "Postgres" {
		t.Errorf("the ask: %+v", a)
	}
	if code, out = replyBin(t, ws, "also", "add", "tests"); code != 0 || !strings.Contains(out, "left in the inbox") {
		t.Errorf("mail: exit %d, %q", code, out)
	}
	if m := ch.PendingMail(); len(m) != 1 || m[0].Text != "also add tests" {
		t.Errorf("inbox: %+v", m)
	}
}
