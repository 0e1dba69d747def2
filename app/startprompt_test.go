package app

// The prompts a run starts with, as a person meets them: through the built
// binary under a pty, the language from LANG, at 80 and 160 columns.

import (
	"context"
	"fmt"
	"io"
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
)

// An empty line at the start prompt asks again (it exited 1 with "run
// flower alone and type it", where the person had done just that, after
// an achieved goal too); Ctrl-C at any of the start, wake and
// after-achieved prompts quits at once with exit 130 and "nothing was
// done" (the wake prompt exited 1), and nothing was: no run began.
func TestTheStartPromptsAskAgainAndCtrlCQuits(t *testing.T) {
	t.Parallel()
	for i, l := range locales {
		for _, where := range []string{"start", "wake", "achieved"} {
			cols := []uint16{80, 160}[(i+len(where))%2]
			t.Run(fmt.Sprintf("%s/%s/%d", where, l.name, cols), func(t *testing.T) {
				t.Parallel()
				lang := flower.Lang(l.name)
				ws := gitStarterWorkspace(t)
				srv := claudetest.NewServer(t, demoHandler(ws, l.name, nil, nil))
				env := binEnv(t, srv, "LANG="+l.locale)
				head := "start"
				switch where {
				case "wake":
					// A run stopped after its brief: bare flower offers to
					// continue it.
					wake, err := flower.WakeState(flower.StarterOptions{Workspace: ws, Lang: lang})
					if err != nil {
						t.Fatal(err)
					}
					brief := map[string]string{
						"en": "## Goal\nwrite hello.txt\n## Acceptance criteria\n- it exists\n## Boundaries\nnone\n## Unknowns and assumptions\nnone\n",
						"zh": "## 目标\n写 hello.txt\n## 验收标准\n- 文件存在\n## 边界\n无\n## 未知与假设\n无\n"}[l.name]
					os.MkdirAll(filepath.Dir(wake.Brief), 0o700)
					if err := os.WriteFile(wake.Brief, []byte(brief), 0o600); err != nil {
						t.Fatal(err)
					}
					head = "wake"
				case "achieved":
					if out, code := pipedStarter(t, ws, l.name, demoHandler(ws, l.name, nil, nil), demo.TextsFor(lang).Ask); code != 0 {
						t.Fatalf("the first run: exit %d:\n%s", code, out)
					}
					head = "wakeAchieved"
				}
				// The work's requests (flower's probe of the key, 16
				// tokens, is not one).
				work := func() (n int) {
					for _, r := range srv.Requests() {
						if r.MaxTokens != 16 {
							n++
						}
					}
					return n
				}
				sent := work()
				p := startPTYSize(t, flowerBin, env, &pty.Winsize{Rows: 50, Cols: cols}, "-w", ws, "--timeout", "0")
				p.expectFlat(t, tr(l.name, head))
				p.expect(t, "> ")
				if where != "wake" {
					if where == "achieved" {
						// Enter after an achieved goal starts something new.
						io.WriteString(p.tty, "\r")
						p.expectFlat(t, tr(l.name, "start"))
					}
					// Empty, twice: asked again each time.
					io.WriteString(p.tty, "\r")
					p.expectFlat(t, tr(l.name, "emptyAgain"))
					io.WriteString(p.tty, "  \r")
					waitFor(t, "the second ask", func() bool { return strings.Count(flat(p.screen()), flat(tr(l.name, "emptyAgain"))) >= 2 })
				}
				p.tty.Write([]byte{3})
				if code := p.wait(t); code != ExitInterrupted {
					t.Fatalf("Ctrl-C: exit %d, want %d:\n%s", code, ExitInterrupted, p.screen())
				}
				screen := p.screen()
				if !strings.Contains(flat(screen), flat(tr(l.name, "askQuit"))) {
					t.Errorf("the screen does not say nothing was done (%q):\n%s", tr(l.name, "askQuit"), screen)
				}
				if strings.Contains(flat(screen), flat(strings.SplitN(tr(l.name, "empty"), "`", 2)[0])) {
					t.Errorf("the screen says the request was empty and to run flower again:\n%s", screen)
				}
				checkLanguage(t, l.english, screen)
				if n := work(); n != sent {
					t.Errorf("%d requests reached the API after the prompt, want none", n-sent)
				}
			})
		}
	}
}

// A request that is not text (binary piped in by mistake) is refused, and
// one longer than a person types is asked about before it is sent: on a
// terminal a question whose no sends nothing, from a pipe a usage error
// that names --yes, with which it is sent. No work request reaches the
// API until the person says so.
func TestARequestThatIsNotTextOrTooLongIsNotSentUnasked(t *testing.T) {
	t.Parallel()
	for i, l := range locales {
		cols := []uint16{80, 160}[i]
		t.Run(fmt.Sprintf("%s/%d", l.name, cols), func(t *testing.T) {
			t.Parallel()
			lang := flower.Lang(l.name)
			ws := gitStarterWorkspace(t)
			srv := claudetest.NewServer(t, demoHandler(ws, l.name, nil, nil))
			env := binEnv(t, srv, "LANG="+l.locale)
			work := func() (n int) {
				for _, r := range srv.Requests() {
					if r.MaxTokens != 16 {
						n++
					}
				}
				return n
			}
			piped := func(stdin string, args ...string) (string, int) {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
				defer cancel()
				cmd := exec.CommandContext(ctx, flowerBin, append([]string{"-w", ws, "--timeout", "0"}, args...)...)
				cmd.Env, cmd.Dir, cmd.Stdin = env, t.TempDir(), strings.NewReader(stdin)
				out, _ := cmd.CombinedOutput()
				return string(out), cmd.ProcessState.ExitCode()
			}
			junk := string([]byte{0x7f, 'E', 'L', 'F', 2, 1, 1, 0, 0, 0, 0xff, 0xfe, 0x80, 0x90})
			out, code := piped(strings.Repeat(junk, 20))
			if want := strings.SplitN(tr(l.name, "requestNotText"), "%", 2)[0]; code != ExitUsage || !strings.Contains(out, want) {
				t.Errorf("binary piped in: exit %d, want %d and %q:\n%s", code, ExitUsage, want, out)
			}
			ask := demo.TextsFor(lang).Ask
			long := ask + "\n\n" + strings.Repeat("lorem ipsum dolor sit amet 0123456789\n", 800) // ~30 KB
			out, code = piped(long)
			if want := fmt.Sprintf(tr(l.name, "requestLargeNoTTY"), "30 KB"); code != ExitUsage || !strings.Contains(flat(out), flat(want)) {
				t.Errorf("a long request piped in: exit %d, want %d and %q:\n%s", code, ExitUsage, want, out)
			}
			if n := work(); n != 0 {
				t.Fatalf("%d work requests reached the API before anyone said to send", n)
			}
			// On a terminal, the same request as an argument: asked, and
			// no sends nothing.
			p := startPTYSize(t, flowerBin, env, &pty.Winsize{Rows: 50, Cols: cols}, "-w", ws, "--timeout", "0", long)
			p.expectFlat(t, strings.SplitN(fmt.Sprintf(tr(l.name, "requestLargeAsk"), "30 KB"), "[", 2)[0])
			io.WriteString(p.tty, "n\r")
			if code := p.wait(t); code != ExitFailure {
				t.Fatalf("no: exit %d, want %d:\n%s", code, ExitFailure, p.screen())
			}
			if !strings.Contains(flat(p.screen()), flat(tr(l.name, "requestNotSent"))) {
				t.Errorf("the screen does not say it was not sent:\n%s", p.screen())
			}
			checkLanguage(t, l.english, p.screen())
			if n := work(); n != 0 {
				t.Fatalf("%d work requests reached the API after no", n)
			}
			// --yes sends it as it is: the clarifier gets the whole of it.
			if out, code = piped(long, "--yes"); code != 0 {
				t.Fatalf("--yes: exit %d:\n%s", code, out)
			}
			if !hasRequest(srv, func(r *claudetest.Request) bool { return r.HasText("lorem ipsum dolor sit amet 0123456789\n") }) {
				t.Errorf("with --yes the request did not reach the model")
			}
		})
	}
}

// A team worker's run is not asked about its request's length: a person
// submitted it to the queue, and nobody is there to answer (it failed
// the attempt as a usage error). The leash a worker holds is what marks
// such a run.
func TestATeamRunsLongRequestIsNotAskedAbout(t *testing.T) {
	t.Parallel()
	ws := gitStarterWorkspace(t)
	srv := claudetest.NewServer(t, demoHandler(ws, "en", nil, nil))
	leash, held, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	long := demo.TextsFor("en").Ask + "\n\n" + strings.Repeat("lorem ipsum dolor sit amet 0123456789\n", 800)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, flowerBin, "go", "-w", ws, "--lang", "en", "--timeout", "0", "--", long)
	cmd.Env = append(binEnv(t, srv), flower.LeashFDEnv+"=3", flower.LeashEnv+"=10m")
	cmd.ExtraFiles = []*os.File{leash}
	cmd.Dir = t.TempDir()
	out, _ := cmd.CombinedOutput()
	leash.Close()
	if strings.Contains(string(out), strings.SplitN(tr("en", "requestLargeNoTTY"), "%", 2)[0]) {
		t.Fatalf("a team run's submitted request was refused for its length:\n%s", out)
	}
	if !hasRequest(srv, func(r *claudetest.Request) bool { return r.HasText("lorem ipsum dolor sit amet 0123456789\n") }) {
		t.Errorf("the submitted request did not reach the model:\n%s", out)
	}
}
