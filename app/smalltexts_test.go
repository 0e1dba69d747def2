package app

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/flowerrun/flower"
	"github.com/flowerrun/flower/claude/claudetest"
	"github.com/flowerrun/flower/internal/demo"
	"github.com/flowerrun/flower/internal/screen/screentest"
)

// smallTextCases are the languages and widths the small texts are seen at.
var smallTextCases = []struct {
	lang string
	cols uint16
}{{"en", 80}, {"zh", 160}, {"en", 160}, {"zh", 80}}

// multiLineBash is a Bash script of several lines, one longer than any
// terminal: the screen shows it under its bullet, cut with an ellipsis.
var multiLineBash = "echo marker-one\necho marker-two\necho " + strings.Repeat("long-", 50) + "end"

// TestTheSmallTextsOfAStepUnderAPty: a step whose model runs a multi-line
// Bash script shows the script indented under its bullet and cut at the
// width, and its closing line says "Done, 2 turns"; a step of one turn
// says "Done, 1 turn" (Chinese: 完成,N 个回合: 轮 is a round of the goal guard).
func TestTheSmallTextsOfAStepUnderAPty(t *testing.T) {
	t.Parallel()
	for _, c := range smallTextCases {
		t.Run(fmt.Sprintf("%s-%d", c.lang, c.cols), func(t *testing.T) {
			t.Parallel()
			srv := claudetest.NewServer(t, func(ctx context.Context, r *claudetest.Request) claudetest.Reply {
				switch {
				case r.MaxTokens == 16 || r.HasText("say hello"):
					return claudetest.Say("hello")
				case r.HasText("marker-two\n"):
					return claudetest.Say("ran it")
				}
				return claudetest.NewReply(claudetest.ToolUse("", "Bash", map[string]any{"command": multiLineBash}))
			})
			env := binEnv(t, srv, "LANG="+map[string]string{"en": "en_US.UTF-8", "zh": "zh_CN.UTF-8"}[c.lang])
			size := &pty.Winsize{Rows: 50, Cols: c.cols}
			ws := shortTempDir(t)
			p := startPTYSize(t, flowerBin, env, size, "-w", ws, "once", "-t", "Bash", "run the script")
			if code := p.wait(t); code != 0 {
				t.Fatalf("exit %d:\n%s", code, p.screen())
			}
			rows := screentest.Render(p.screen(), int(c.cols), 50)
			head := -1
			for i, row := range rows {
				if strings.Contains(row, "* Bash echo marker-one") {
					head = i
				}
			}
			if head < 0 || head+2 >= len(rows) {
				t.Fatalf("no Bash line:\n%s", strings.Join(rows, "\n"))
			}
			indent := strings.Index(rows[head], "echo marker-one")
			if !strings.HasPrefix(rows[head+1], strings.Repeat(" ", indent)+"echo marker-two") {
				t.Errorf("the script's second line is not under its first:\n%s\n%s", rows[head], rows[head+1])
			}
			long := strings.TrimRight(rows[head+2], " ")
			if !strings.HasPrefix(long, strings.Repeat(" ", indent)+"echo long-") || !strings.HasSuffix(long, "...") || len(long) > int(c.cols) {
				t.Errorf("the long line is not cut at %d columns with an ellipsis: %q", c.cols, long)
			}
			if want := map[string]string{"en": "+ Done, 2 turns", "zh": "+ 完成,2 个回合"}[c.lang]; !strings.Contains(p.screen(), want) {
				t.Errorf("the screen lacks %q:\n%s", want, p.screen())
			}
			// The status line names the step in the person's language
			// (Chinese showed the manifest's key, ad-hoc).
			if want := map[string]string{"en": "- ad-hoc · ", "zh": "- 临时一步 · "}[c.lang]; !strings.Contains(p.screen(), want) {
				t.Errorf("the status line lacks %q:\n%s", want, p.screen())
			}
			if c.lang == "zh" && strings.Contains(p.screen(), "ad-hoc") {
				t.Errorf("the Chinese screen says ad-hoc:\n%s", p.screen())
			}

			p = startPTYSize(t, flowerBin, env, size, "-w", ws, "once", "say hello")
			if code := p.wait(t); code != 0 {
				t.Fatalf("exit %d:\n%s", code, p.screen())
			}
			if want := map[string]string{"en": "+ Done, 1 turn ·", "zh": "+ 完成,1 个回合 ·"}[c.lang]; !strings.Contains(p.screen(), want) {
				t.Errorf("the screen lacks %q:\n%s", want, p.screen())
			}
		})
	}
}

// TestTheStartOfARunSaysWhatAPersonMustKnow: a workspace outside git says
// once that the judge gets no change report and how to fix it; a wake on
// which the person types /new shows the language hint once; a read-only
// workspace says what to do and exits as a usage error.
func TestTheStartOfARunSaysWhatAPersonMustKnow(t *testing.T) {
	t.Parallel()
	for _, c := range smallTextCases {
		t.Run(fmt.Sprintf("%s-%d", c.lang, c.cols), func(t *testing.T) {
			t.Parallel()
			l := flower.Lang(c.lang)
			srv := claudetest.NewServer(t, func(ctx context.Context, r *claudetest.Request) claudetest.Reply { return claudetest.Say("hi") })
			env := binEnv(t, srv, "LANG="+map[string]string{"en": "en_US.UTF-8", "zh": "zh_CN.UTF-8"}[c.lang])
			size := &pty.Winsize{Rows: 50, Cols: c.cols}

			// A waking workspace outside git: its brief is complete.
			ws := shortTempDir(t)
			wake, err := flower.WakeState(flower.StarterOptions{Workspace: ws, Lang: l})
			if err != nil {
				t.Fatal(err)
			}
			brief := map[string]string{
				"en": "## Goal\nwrite hello.txt\n## Acceptance criteria\n- it exists\n## Boundaries\nnone\n## Unknowns and assumptions\nnone\n",
				"zh": "## 目标\n写 hello.txt\n## 验收标准\n- 文件存在\n## 边界\n无\n## 未知与假设\n无\n"}[c.lang]
			if err := os.MkdirAll(filepath.Dir(wake.Brief), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(wake.Brief, []byte(brief), 0o600); err != nil {
				t.Fatal(err)
			}
			p := startPTYSize(t, flowerBin, env, size, "-w", ws)
			p.expect(t, text(l, "wake")[:12])
			p.expect(t, "> ")
			p.expect(t, text(l, "langHint"))
			fmt.Fprint(p.tty, "/new\r")
			p.expect(t, text(l, "start")[:12])
			p.expect(t, "> ")
			p.tty.Write([]byte{3})
			p.wait(t)
			s := strings.Join(screentest.Render(p.screen(), int(c.cols), 50), "\n")
			flat := strings.Join(strings.Fields(s), " ")
			if n := strings.Count(flat, strings.Join(strings.Fields(text(l, "langHint")), " ")); n != 1 {
				t.Errorf("the language hint shows %d times:\n%s", n, s)
			}
			noGit := strings.Join(strings.Fields(fmt.Sprintf(text(l, "noGitJudge"), ws)), " ")
			if n := strings.Count(flat, noGit); n != 1 {
				t.Errorf("the note that the judge gets no change report shows %d times:\n%s", n, s)
			}

			// A read-only workspace.
			ro := shortTempDir(t)
			var cmd *exec.Cmd
			if os.Geteuid() == 0 {
				// root writes through file modes: a read-only mount in a
				// mount namespace of its own.
				cmd = exec.Command("unshare", "-m", "sh", "-c", `mount -t tmpfs -o ro tmpfs "$1" && shift && exec "$@"`, "sh", ro, flowerBin, "-w", ro, "build X")
			} else {
				if err := os.Chmod(ro, 0o555); err != nil {
					t.Fatal(err)
				}
				cmd = exec.Command(flowerBin, "-w", ro, "build X")
			}
			p = startCmdPTYWinsize(t, cmd, t.TempDir(), env, size)
			if code := p.wait(t); code != ExitUsage {
				t.Errorf("exit %d, want %d:\n%s", code, ExitUsage, p.screen())
			}
			flat = strings.Join(strings.Fields(strings.Join(screentest.Render(p.screen(), int(c.cols), 50), " ")), " ")
			// Compared without blanks: the terminal wraps the message
			// wherever column 80 falls, inside a word too.
			want := strings.Join(strings.Fields(strings.SplitN(fmt.Sprintf(text(l, "wsReadOnly"), ro, "X"), "X", 2)[1]), "")
			if !strings.Contains(strings.Join(strings.Fields(flat), ""), want) || strings.Contains(flat, "workbench: create") {
				t.Errorf("the read-only workspace does not say what to do (want %q):\n%s", want, flat)
			}
		})
	}
}

// A question (the unreachable verdict's, written in markdown for flower
// reply's file) reads on the terminal as words, its lines kept.
func TestQuestionLinesShowMarkdownAsWords(t *testing.T) {
	t.Parallel()
	got := questionLines("The goal was judged **unreachable**: no `macOS` here\nWhat now?")
	want := []string{"  ? The goal was judged unreachable: no macOS here", "    What now?"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("questionLines = %q, want %q", got, want)
	}
	if got := markdownAsText("## Heading"); got != "Heading" {
		t.Errorf("a heading reads %q", got)
	}
}

// TestOnceRedrawsOneStatusLine: while flower once waits for the model, its
// status line is one row that ticks in place; at the end no status row is
// left on the screen. Rendered as a terminal of that width would show it.
func TestOnceRedrawsOneStatusLine(t *testing.T) {
	t.Parallel()
	for _, c := range smallTextCases {
		t.Run(fmt.Sprintf("%s-%d", c.lang, c.cols), func(t *testing.T) {
			t.Parallel()
			srv := claudetest.NewServer(t, func(ctx context.Context, r *claudetest.Request) claudetest.Reply {
				if r.MaxTokens == 16 {
					return claudetest.Say("hi")
				}
				// Slow enough for the status line to tick three times.
				return claudetest.Reply{Blocks: claudetest.Say("the slow answer").Blocks, Fault: &claudetest.Fault{Delay: 3500 * time.Millisecond}}
			})
			env := binEnv(t, srv, "LANG="+map[string]string{"en": "en_US.UTF-8", "zh": "zh_CN.UTF-8"}[c.lang])
			p := startPTYSize(t, flowerBin, env, &pty.Winsize{Rows: 30, Cols: c.cols}, "-w", shortTempDir(t), "once", "answer slowly")
			step := map[string]string{"en": "ad-hoc", "zh": "临时一步"}[c.lang]
			waitFor(t, "the status line to tick", func() bool { return strings.Contains(p.screen(), "- "+step+" · 0:02") })
			if row, n := statusRow(screentest.Render(p.screen(), int(c.cols), 30), step); n != 1 {
				t.Errorf("%d status rows on the screen, want 1 (last %q):\n%s", n, row, strings.Join(screentest.Render(p.screen(), int(c.cols), 30), "\n"))
			}
			if code := p.wait(t); code != 0 {
				t.Fatalf("exit %d:\n%s", code, p.screen())
			}
			end := screentest.Render(p.screen(), int(c.cols), 30)
			if _, n := statusRow(end, step); n != 0 {
				t.Errorf("a status row is left on the screen:\n%s", strings.Join(end, "\n"))
			}
			if !strings.Contains(strings.Join(end, "\n"), "the slow answer") {
				t.Errorf("the answer is not on the screen:\n%s", strings.Join(end, "\n"))
			}
		})
	}
}

// TestAPipedRunSaysTheQuestionItSettled: with the input piped nobody can
// answer, and the question is settled at once; the output said "no
// answer" to a question it never printed.
func TestAPipedRunSaysTheQuestionItSettled(t *testing.T) {
	t.Parallel()
	for _, lang := range []string{"en", "zh"} {
		t.Run(lang, func(t *testing.T) {
			t.Parallel()
			ws := gitStarterWorkspace(t)
			texts := demo.TextsFor(flower.Lang(lang))
			out, code := pipedStarter(t, ws, lang, demoHandler(ws, lang, nil, nil), "--clarify-only", texts.Ask)
			if code != 0 {
				t.Fatalf("exit %d:\n%s", code, out)
			}
			question, settled := strings.Index(out, "? "+texts.Question), strings.Index(out, tr(lang, "noAnswer"))
			if question < 0 || settled < 0 || question > settled {
				t.Errorf("want the question %q, then %q:\n%s", texts.Question, tr(lang, "noAnswer"), out)
			}
			for i, o := range texts.Options {
				if !strings.Contains(out, fmt.Sprintf("%d) %s", i+1, o)) {
					t.Errorf("the question's option %q is not shown:\n%s", o, out)
				}
			}
		})
	}
}
