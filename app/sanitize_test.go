package app

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowerrun/flower/human"
	"github.com/flowerrun/flower/internal/screen"
)

// hostile is what a model (or a file name it chose) may try on a
// terminal: an OSC 0 title, an OSC 8 hyperlink, an OSC 52 clipboard
// write, a CSI 2J clear screen and bidi overrides around visible words.
const hostile = "\x1b]0;owned\x07\x1b]8;;http://evil.example\x1b\\link\x1b]8;;\x1b\\\x1b]52;c;cHduZWQ=\x07\x1b[2J\u202eevil\u202c words"

// assertClean fails when out holds a byte of an escape or control
// sequence, or a bidi control, and when the visible words did not survive.
func assertClean(t *testing.T, path, out string) {
	t.Helper()
	for _, bad := range []string{"\x1b", "\x07", "\x9b", "\u202e", "\u202c", "]52;", "]0;", "[2J"} {
		if strings.Contains(out, bad) {
			t.Errorf("%s: %q reached the terminal: %q", path, bad, out)
		}
	}
	if !strings.Contains(out, "linkevil words") {
		t.Errorf("%s: the visible words were lost: %q", path, out)
	}
}

// Every terminal path of untrusted text goes through the one sanitizer
// (screen.Sanitize): the exit line (a verdict's reason or any error text),
// flower reply's printed answer (a model's option), flower report's
// problems (a file name), and the screen's own lines.
func TestUntrustedTextIsSanitizedOnEveryTerminalPath(t *testing.T) {
	t.Parallel()
	t.Run("exit line", func(t *testing.T) {
		var errb bytes.Buffer
		m := &Command{Stderr: &errb}
		m.exit(&exitError{code: ExitFailure, err: fmt.Errorf("stopped at step work: the judge ruled unreachable: %s\nsecond line %s", hostile, hostile)})
		assertClean(t, "exit line", errb.String())
		if strings.Count(errb.String(), "\n") != 2 {
			t.Errorf("the lines of the error were not kept: %q", errb.String())
		}
	})
	t.Run("screen", func(t *testing.T) {
		var b bytes.Buffer
		s := screen.NewWriter(&b)
		s.Line(screen.Plain, "model: "+hostile)
		assertClean(t, "screen", b.String())
	})
	t.Run("report problems", func(t *testing.T) {
		run := smallRun(t)
		replies := filepath.Join(ReplyDir(run), human.RepliesDir)
		if err := os.MkdirAll(replies, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(replies, strings.ReplaceAll(hostile, "/", "")+".json"), []byte("not json"), 0o600); err != nil {
			t.Fatal(err)
		}
		code, _, stderr := runCmd(t, "", "report", "-o", filepath.Join(t.TempDir(), "p.html"), run)
		if code != ExitOK || !strings.Contains(stderr, "is not a reply") {
			t.Fatalf("exit %d, stderr %q", code, stderr)
		}
		assertClean(t, "report problems", stderr)
	})
	t.Run("reply", func(t *testing.T) {
		ws := t.TempDir()
		ch := human.New(human.WithTimeout(time.Minute))
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { defer wg.Done(); human.ServeFiles(ctx, ch, ReplyDir(filepath.Join(ws, "runs"))) }()
		defer func() { cancel(); wg.Wait() }()
		go ch.Ask(ctx, "Which one?", []string{hostile, "plain"})
		if _, err := ch.NextAsk(ctx); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			if p, _ := human.ReadPending(ReplyDir(filepath.Join(ws, "runs"))); len(p.Questions) == 1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("pending.json never listed the question")
			}
		}
		code, out := replyBin(t, ws, "1")
		if code != 0 || !strings.Contains(out, "+ answered q1: ") {
			t.Fatalf("reply 1: exit %d, %q", code, out)
		}
		assertClean(t, "reply", out)
	})
}
