package app

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowerrun/flower/human"
)

// askAndAnswer asks q on ch and answers it once it waits.
func askAndAnswer(t *testing.T, ch *human.Channel, q string, opts ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		ch.Ask(ctx, q, opts)
	}()
	a, err := ch.NextAsk(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ch.Answer(a.ID, "ok")
	<-done
}

func TestNotifyRunsOncePerWaitingQuestionWithTheVariables(t *testing.T) {
	t.Setenv(human.StateDirEnv, t.TempDir())
	dir := t.TempDir()
	out := filepath.Join(dir, "calls")
	n := NewNotifier(`printf '%s|%s|%s|%s|%s\n' "$FLOWER_QUESTION" "$FLOWER_QUESTION_ID" "$FLOWER_CHOICES" "$FLOWER_WORKSPACE" "$FLOWER_RUN_DIR" >> `+out,
		"/ws", "/ws/runs", func(err error) { t.Errorf("reported: %v", err) })
	ch := human.New(human.WithOnEvent(n.Event), human.WithTimeout(time.Minute))
	askAndAnswer(t, ch, "Which database?", "Postgres", "SQLite")
	ch.Send("also add tests") // routine: mail queued
	ch.TakeInbox()            // routine: mail delivered
	askAndAnswer(t, ch, "Ship it?")
	// Settled at once: never waited, so nobody is called.
	human.New(human.WithOnEvent(n.Event), human.WithTimeout(0)).Ask(context.Background(), "at once?", nil)
	n.Close()
	data, _ := os.ReadFile(out)
	want := "Which database?|q1|Postgres\nSQLite|/ws|/ws/runs\nShip it?|q3||/ws|/ws/runs\n"
	if string(data) != want {
		t.Errorf("calls:\n%q\nwant\n%q", data, want)
	}
}

func TestNotifyFailuresAreReportedEachTimeAndNeverStopTheRun(t *testing.T) {
	// Before, only the first failure was reported: the second and third
	// question's failed notices went unsaid.
	t.Setenv(human.StateDirEnv, t.TempDir())
	var mu sync.Mutex
	var reports []string
	n := NewNotifier("echo nope >&2; exit 3", "/ws", "/ws/runs", func(err error) {
		mu.Lock()
		defer mu.Unlock()
		reports = append(reports, err.Error())
	})
	ch := human.New(human.WithOnEvent(n.Event), human.WithTimeout(time.Minute))
	for range 3 {
		askAndAnswer(t, ch, "again?")
	}
	n.Close()
	if len(reports) != 3 || !strings.Contains(reports[0], "exit status 3") || !strings.Contains(reports[0], "nope") ||
		!strings.Contains(reports[2], "failed for q3") {
		t.Errorf("reports: %q", reports)
	}
	if got := len(ch.Asks()); got != 3 {
		t.Errorf("%d asks answered, want 3", got)
	}
}

func TestNotifyIsBoundedInTime(t *testing.T) {
	t.Setenv(human.StateDirEnv, t.TempDir())
	var mu sync.Mutex
	var reports []string
	n := NewNotifier("sleep 30", "/ws", "/ws/runs", func(err error) {
		mu.Lock()
		defer mu.Unlock()
		reports = append(reports, err.Error())
	})
	n.timeout = 200 * time.Millisecond
	ch := human.New(human.WithOnEvent(n.Event), human.WithTimeout(time.Minute))
	start := time.Now()
	askAndAnswer(t, ch, "slow notifier?")
	n.Close()
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("a hanging command held the run %s", d)
	}
	if len(reports) != 1 || !strings.Contains(reports[0], "did not finish") {
		t.Errorf("reports: %q", reports)
	}
}

func TestNotifyStartsForAQuestionWithANULOrOver128KiB(t *testing.T) {
	// Before, exec refused the environment ("invalid argument" for the
	// NUL, "argument list too long" past 128 KiB) and the command never
	// ran; only the first failure was said.
	t.Setenv(human.StateDirEnv, t.TempDir())
	dir := t.TempDir()
	out := filepath.Join(dir, "calls")
	var mu sync.Mutex
	var reports []string
	n := NewNotifier(`printf '%s|%s|%s\n' "$FLOWER_QUESTION_ID" "${#FLOWER_QUESTION}" "$(wc -c < "$FLOWER_QUESTION_FILE")" >> `+out,
		"/ws", filepath.Join(dir, "runs"), func(err error) {
			mu.Lock()
			defer mu.Unlock()
			reports = append(reports, err.Error())
		})
	ch := human.New(human.WithOnEvent(n.Event), human.WithTimeout(time.Minute))
	askAndAnswer(t, ch, "May I\x00 drop it?")
	big := strings.Repeat("长", 50000) // 150 000 bytes
	askAndAnswer(t, ch, big)
	n.Close()
	if len(reports) != 0 {
		t.Fatalf("reports: %q", reports)
	}
	lines := strings.Split(strings.TrimSpace(readString(t, out)), "\n")
	if len(lines) != 2 {
		t.Fatalf("calls: %q", lines)
	}
	if f := strings.Split(lines[0], "|"); f[0] != "q1" || strings.TrimSpace(f[2]) != "15" {
		t.Errorf("the NUL question: %q (the file keeps all 15 bytes)", lines[0])
	}
	if f := strings.Split(lines[1], "|"); f[0] != "q2" || strings.TrimSpace(f[2]) != "150000" {
		t.Errorf("the big question: %q (the file keeps all 150000 bytes)", lines[1])
	}
	if files, _ := filepath.Glob(filepath.Join(ReplyDir(filepath.Join(dir, "runs")), "notify", "*")); len(files) != 0 {
		t.Errorf("question files left behind: %q", files)
	}
}

func readString(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
