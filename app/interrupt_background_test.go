package app

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/flowerrun/flower"
	"github.com/flowerrun/flower/claude/claudetest"
	"github.com/flowerrun/flower/internal/demo"
)

// The coordinator dispatched its worker to run in the background and ended
// its turn; the worker sits in a long Bash. Ctrl-C and words then reached
// nothing for ten minutes: the CLI had no turn to interrupt, so no message
// came until the stall watch fired. Now the words go to the session as a
// new turn at once, and the background worker is stopped, as an interrupt
// cuts a foreground one. Through the built binary on a pty, the real CLI,
// English at 80 columns and Chinese at 160.
func TestCtrlCWhileAWorkerRunsInTheBackgroundReachesTheModelAtOnce(t *testing.T) {
	t.Parallel()
	for i, l := range locales {
		cols := []uint16{80, 160}[i]
		t.Run(fmt.Sprintf("%s-%d", l.name, cols), func(t *testing.T) {
			t.Parallel()
			ws := shortTempDir(t)
			words := map[string]string{"en": "stop that and write the README first", "zh": "先别跑了,先写 README"}[l.name]
			work := map[string]string{"en": "Do as this brief says", "zh": "照这份需求做"}[l.name]
			const job = "BACKGROUND-JOB"
			// A duration no other process has: the worker's Bash is found
			// among the machine's processes by it. (The CLI refuses a
			// standalone sleep.)
			sleep := fmt.Sprintf("timeout 613.%d tail -f /dev/null", 10+i)
			var mu sync.Mutex
			var heard time.Time
			base := demoHandler(ws, l.name, nil, nil)
			srv := claudetest.NewServer(t, func(ctx context.Context, r *claudetest.Request) claudetest.Reply {
				subagent := len(r.Messages) > 0 && slices.ContainsFunc(r.Messages[0].Content, func(b claudetest.Block) bool { return strings.Contains(b.Text, job) })
				switch {
				case r.MaxTokens == 16:
				case subagent && len(r.ToolResults()) == 0:
					return claudetest.NewReply(claudetest.ToolUse("", "Bash", map[string]any{"command": sleep, "description": "the long job", "timeout": 600000}))
				case subagent:
					return claudetest.Say("the long job is done")
				case !slices.Contains(r.Tools, "Agent") || !r.HasText(work):
				case r.HasText(words):
					mu.Lock()
					if heard.IsZero() {
						heard = r.At
					}
					mu.Unlock()
					return claudetest.Say("heard you: the README first")
				case len(r.ToolResults()) == 0:
					return claudetest.NewReply(claudetest.ToolUse("", "Agent", map[string]any{"subagent_type": "coder", "description": "the long job",
						"prompt": job + ": run the long job", "run_in_background": true}))
				default:
					return claudetest.Say("the coder works in the background; I wait for it")
				}
				return base(ctx, r)
			})
			texts := demo.TextsFor(flower.Lang(l.name))
			p := startPTYSize(t, flowerBin, binEnv(t, srv, "LANG="+l.locale), &pty.Winsize{Rows: 50, Cols: cols}, "-w", ws, "--rounds", "1", texts.Ask)
			p.expect(t, "2) "+texts.Options[1])
			io.WriteString(p.tty, "1\r")
			// The coordinator's turn ended with its worker in the Bash.
			waitFor := func(t *testing.T, what string, ok func() bool) {
				t.Helper()
				for deadline := time.Now().Add(3 * time.Minute); !ok(); time.Sleep(20 * time.Millisecond) {
					if time.Now().After(deadline) {
						t.Fatalf("never: %s:\n%s", what, p.screen())
					}
				}
			}
			waitFor(t, "the worker's long Bash", func() bool { return len(processesWithArgs(sleep)) > 0 })
			// Its turn's result is on screen: the CLI waits between turns
			// (a fixed pause was not enough on a loaded machine to know).
			waitFor(t, "the coordinator's turn to end", func() bool {
				s := p.screen()
				i := strings.Index(s, "the coder works in the background; I wait for it")
				return i >= 0 && strings.Contains(s[i:], strings.SplitN(tr(l.name, "done"), "%", 2)[0])
			})
			p.tty.Write([]byte{3})
			p.expectFlat(t, tr(l.name, "interruptAsk"))
			io.WriteString(p.tty, words+"\r")
			given := time.Now()
			waitFor(t, "the words at the API", func() bool { mu.Lock(); defer mu.Unlock(); return !heard.IsZero() })
			mu.Lock()
			took := heard.Sub(given)
			mu.Unlock()
			t.Logf("the words reached the model %s after Enter", took.Round(time.Millisecond))
			// A bound for a loaded machine: before, they waited for the
			// job (ten minutes) or the stall watch (ten minutes).
			if took > 30*time.Second {
				t.Errorf("the words reached the model %s after Enter", took)
			}
			p.expectFlat(t, map[string]string{"en": "interrupted: resuming with your words", "zh": "已打断,带着你的话续跑"}[l.name])
			// The background worker is stopped, its Bash with it.
			waitFor(t, "the worker's Bash to stop", func() bool { return len(processesWithArgs(sleep)) == 0 })
			// The coordinator heard them and its step ended (nothing runs
			// in the background any more); the judge finds no hello.txt,
			// and one round was all there was.
			if code := p.wait(t); code != ExitFailure {
				t.Fatalf("exit %d, want %d (not achieved):\n%s", code, ExitFailure, p.screen())
			}
			s := p.screen()
			checkLanguage(t, l.english, s)
			// The stopped worker's cut call is said as cut, never in the
			// CLI's refusal to the model.
			checkNoInterruptDebris(t, s, nil, nil)
			for _, want := range []string{"heard you: the README first", tr(l.name, "toolCut")} {
				if !strings.Contains(flat(s), flat(want)) {
					t.Errorf("the screen lacks %q:\n%s", want, s)
				}
			}
			// One round was asked for: the ending counted the goal
			// step's retry as a second ("rounds 1 of 2").
			if rounds := strings.SplitN(tr(l.name, "endRounds"), "%", 2)[0]; strings.Contains(s, rounds) {
				t.Errorf("the ending names rounds (%q) of a one-round run:\n%s", rounds, s)
			}
		})
	}
}

// processesWithArgs lists the processes whose command line holds args.
func processesWithArgs(args string) []int {
	return processesWhose("cmdline", func(cmdline []byte) bool {
		return strings.Contains(strings.ReplaceAll(string(cmdline), "\x00", " "), args)
	})
}
