package app

// What the goal guard tells the person, on the screen of the built binary:
// a judge's reply that cannot pass says why, wrapped to the terminal, in
// English and Chinese, at 80 and 160 columns.

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowerrun/flower"
	"github.com/flowerrun/flower/claude/claudetest"
	"github.com/flowerrun/flower/internal/demo"
	"github.com/flowerrun/flower/internal/screen"
)

func TestTheScreenSaysWhyAJudgesReplyCouldNotPass(t *testing.T) {
	for _, lang := range []flower.Lang{"en", "zh"} {
		for _, cols := range []uint16{80, 160} {
			t.Run(fmt.Sprintf("%s-%d", lang, cols), func(t *testing.T) {
				t.Parallel()
				ws := shortTempDir(t)
				texts := demo.TextsFor(lang)
				verify, why := "Judge this round", "the conclusion says achieved, but not every item passed with evidence: taken as not yet"
				if lang == "zh" {
					verify, why = "判定这一轮", "结论说已达成,但判定项并非全部带证据通过:按未达成处理"
				}
				// The first ruling concludes achieved though its second item
				// failed; the second passes both.
				ruling := func(second string) claudetest.Reply {
					return claudetest.StructuredOutput(map[string]any{"items": []map[string]string{
						{"id": "c1", "status": "passed", "evidence": "cat hello.txt", "reason": "ok"},
						{"id": "c2", "status": second, "evidence": "ls", "reason": second}},
						"conclusion": "achieved", "reason": "close enough"})
				}
				script := demo.Script(lang, ws)
				var judged atomic.Int32
				script[verify] = []claudetest.Responder{claudetest.Func(func(*claudetest.Request) claudetest.Reply {
					if judged.Add(1) == 1 {
						return ruling("failed")
					}
					return ruling("passed")
				})}
				srv := claudetest.NewServer(t, func(ctx context.Context, r *claudetest.Request) claudetest.Reply {
					if r.MaxTokens == 16 {
						return claudetest.Say("hi")
					}
					return script.Reply(r)
				})
				p := startPTYCols(t, cols, binEnv(t, srv), "-w", ws, "--lang", string(lang), "--rounds", "2", texts.Ask)
				p.expect(t, texts.Question)
				io.WriteString(p.tty, "1\r")
				// A whole flow on the real CLI: slower than wait's minute
				// when the machine is busy.
				errc := make(chan error, 1)
				go func() { errc <- p.cmd.Wait() }()
				select {
				case err := <-errc:
					if err != nil {
						t.Fatalf("flower: %v:\n%s", err, p.screen())
					}
					select {
					case <-p.done:
					case <-time.After(10 * time.Second):
					}
				case <-time.After(6 * time.Minute):
					t.Fatalf("flower did not exit:\n%s", p.screen())
				}
				// The whole reason reaches the person, wrapped, never cut.
				lines := screen.Wrap(why, int(cols)-2)
				for i, ln := range lines {
					if i > 0 {
						ln = "  " + ln
					} else {
						ln = "! " + ln
					}
					if !strings.Contains(p.screen(), ln) {
						t.Errorf("the screen lacks the line %q:\n%s", ln, p.screen())
					}
					if screen.Columns(ln) > int(cols) {
						t.Errorf("line %q is wider than %d columns", ln, cols)
					}
				}
				if judged.Load() != 2 {
					t.Errorf("judged %d times; the listed item must cost another round", judged.Load())
				}
			})
		}
	}
}
