package app

// The first run: yes/no prompts that honour Ctrl-C, and hints that name
// the command the person actually ran.

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/flowerrun/flower"
	"github.com/flowerrun/flower/claude/claudetest"
	"github.com/flowerrun/flower/internal/cliinstall"
	"github.com/flowerrun/flower/internal/screen/screentest"
)

// yesNoPrompts are the questions flower asks outside setup, each with
// the command line that brings it up in ws (a folder that exists) and the
// environment it needs beside the locale's.
func yesNoPrompts(t *testing.T, ws string) []struct {
	name, marker string
	args         []string
	env          []string
	// untouched says what a Ctrl-C or a no left done, if anything.
	untouched func(env []string) error
} {
	missing := filepath.Join(ws, "not-yet")
	stub := "FLOWER_CLAUDE=" + stubCLI(t)
	return []struct {
		name, marker string
		args         []string
		env          []string
		untouched    func(env []string) error
	}{
		{"install the CLI", "[Y/n]", []string{"-w", ws, "build X"}, nil, func(env []string) error {
			for _, kv := range env {
				if cache, ok := strings.CutPrefix(kv, "XDG_CACHE_HOME="); ok {
					if _, err := os.Stat(filepath.Join(cache, "flower", "claude-cli", cliinstall.Version)); err == nil {
						return fmt.Errorf("the CLI was installed into %s", cache)
					}
				}
			}
			return nil
		}},
		{"create this folder", "[y/N]", []string{"-w", missing, "build X"}, []string{stub}, func([]string) error {
			if _, err := os.Stat(missing); err == nil {
				return fmt.Errorf("%s was created", missing)
			}
			return nil
		}},
		{"did you mean", "[Y/n]", []string{"-w", ws, "reprot"}, []string{stub}, func([]string) error { return nil }},
	}
}

// noClaudePath is a PATH without claude (and without npm): the CLI lookup
// finds nothing and asks to install it.
func noClaudePath(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, tool := range []string{"sh", "git", "mkdir", "dirname", "chmod", "printf"} { // the fake npm's too
		if p, err := exec.LookPath(tool); err == nil {
			os.Symlink(p, filepath.Join(dir, tool))
		}
	}
	return "PATH=" + dir
}

// Ctrl-C at each yes/no question leaves at once, before any Enter: a
// line typed and not entered is not taken for the answer, the exit is 130
// as setup's, the last line says nothing was done, and nothing was.
func TestYesNoPromptsAnswerCtrlCAtOnce(t *testing.T) {
	t.Parallel()
	for _, l := range locales {
		for _, cols := range []uint16{80, 160} {
			ws := t.TempDir()
			for _, q := range yesNoPrompts(t, ws) {
				t.Run(fmt.Sprintf("%s/%s/%d", q.name, l.name, cols), func(t *testing.T) {
					env := append(hermeticEnv(t, l.locale, noClaudePath(t)), q.env...)
					p := startCmdPTYWinsize(t, exec.Command(flowerBin, q.args...), t.TempDir(), env, &pty.Winsize{Rows: 40, Cols: cols})
					p.expect(t, q.marker) // the question waits
					// A y typed and not entered, then Ctrl-C.
					p.tty.Write([]byte("y\x03"))
					// The bound only stops a prompt that waits for Enter.
					code := p.exitWithin(t, 30*time.Second)
					out := p.screen()
					if code != ExitInterrupted || !strings.Contains(out, text(flower.Lang(l.name), "askQuit")) {
						t.Errorf("Ctrl-C: exit %d, want %d and %q:\n%s", code, ExitInterrupted, text(flower.Lang(l.name), "askQuit"), out)
					}
					checkLanguage(t, l.english, out)
					if err := q.untouched(env); err != nil {
						t.Error(err)
					}
					if entries, _ := os.ReadDir(ws); len(entries) != 0 {
						t.Errorf("written into the workspace: %v", entries)
					}
				})
			}
		}
	}
}

// An answer typed at a yes/no question stays on the screen beside its
// question, also when the command goes on (the install, by a fake npm,
// then the credentials' question) and writes lines after it.
func TestYesNoAnswersStayOnTheScreen(t *testing.T) {
	t.Parallel()
	npmDir := t.TempDir()
	npm := "#!/bin/sh\nbin=node_modules/@anthropic-ai/claude-code-linux-x64/claude\nmkdir -p \"$(dirname \"$bin\")\"\n" +
		"printf '#!/bin/sh\\necho \"" + cliinstall.Version + " (Claude Code)\"\\n' > \"$bin\"\nchmod +x \"$bin\"\n"
	os.WriteFile(filepath.Join(npmDir, "npm"), []byte(npm), 0o755)
	for _, l := range locales {
		for _, cols := range []uint16{80, 160} {
			ws := t.TempDir()
			prompts := yesNoPrompts(t, ws)
			for _, c := range []struct {
				q      int
				answer string
				env    []string
				done   string // on a line written after the answer
			}{
				{0, "y", []string{noClaudePath(t) + ":" + npmDir}, "- installing the Claude Code CLI"},
				{1, "n", []string{noClaudePath(t)}, text(flower.Lang(l.name), "cancelled")},
			} {
				q := prompts[c.q]
				t.Run(fmt.Sprintf("%s/%s/%d", q.name, l.name, cols), func(t *testing.T) {
					env := append(append(hermeticEnv(t, l.locale), c.env...), q.env...)
					p := startCmdPTYWinsize(t, exec.Command(flowerBin, q.args...), t.TempDir(), env, &pty.Winsize{Rows: 40, Cols: cols})
					p.expect(t, q.marker)
					p.tty.Write([]byte(c.answer + "\r"))
					p.expect(t, c.done)
					p.tty.Write([]byte{3}) // the credentials' question, after the install, is left
					p.wait(t)
					rows := screentest.Render(p.screen(), int(cols), 40)
					answered := -1
					for i, r := range rows {
						if strings.HasSuffix(r, q.marker+" "+c.answer) {
							answered = i
						}
					}
					if answered < 0 || !strings.Contains(strings.Join(rows[answered+1:], "\n"), c.done) {
						t.Errorf("no row holds the question's marker and the answer %s, with %q after it:\n%s", c.answer, c.done, strings.Join(rows, "\n"))
					}
				})
			}
		}
	}
}

// invocation names the command that runs this flower again.
func TestInvocationIsTheCommandThatRunsThisFlowerAgain(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	onPath := filepath.Join(dir, "flower")
	os.WriteFile(onPath, []byte("#!/bin/sh\n"), 0o755)
	elsewhere := filepath.Join(t.TempDir(), "my tools", "flower")
	os.MkdirAll(filepath.Dir(elsewhere), 0o755)
	os.WriteFile(elsewhere, []byte("#!/bin/sh\n"), 0o755)
	lookPath := func(name string) (string, error) {
		if name == "flower" {
			return onPath, nil
		}
		return "", exec.ErrNotFound
	}
	goRun := "/tmp/go-build123/b001/exe/flower"
	for _, c := range []struct {
		name string
		f    invocationFacts
		want string
	}{
		{"go run, its command line read", invocationFacts{Arg0: goRun, Exe: goRun, Args: []string{"demo"}, Parent: []string{"go", "run", "./cmd/flower", "demo"}}, "go run ./cmd/flower"},
		{"go run with flags", invocationFacts{Arg0: goRun, Exe: goRun, Args: []string{"-w", "x", "go"}, Parent: []string{"/usr/local/go/bin/go", "run", "-race", ".", "-w", "x", "go"}}, "go run -race ."},
		{"go run, no /proc", invocationFacts{Arg0: goRun, Exe: goRun, Args: []string{"demo"}}, "go run ./cmd/flower"},
		{"on PATH", invocationFacts{Arg0: "flower", Exe: onPath, LookPath: lookPath}, "flower"},
		{"on PATH, typed as a path", invocationFacts{Arg0: onPath, Exe: onPath, LookPath: lookPath}, "flower"},
		{"another flower on PATH", invocationFacts{Arg0: elsewhere, Exe: elsewhere, LookPath: lookPath}, "'" + elsewhere + "'"},
		{"a parent that is not go run", invocationFacts{Arg0: elsewhere, Exe: elsewhere, Parent: []string{"bash"}, LookPath: lookPath}, "'" + elsewhere + "'"},
	} {
		if got := invocation(c.f); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// After `go run ./cmd/flower …`, or from a binary that is not on PATH, the
// hints name that command, in both languages: `flower report` would be a
// command the shell does not know.
func TestHintsNameTheCommandThatWasRun(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "my tools", "flower")
	os.MkdirAll(filepath.Dir(bin), 0o755)
	if out, err := exec.Command("cp", flowerBin, bin).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	root, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Fatalf("the module's checkout: %v", err)
	}
	for _, l := range locales {
		ws := t.TempDir()
		for _, c := range []struct {
			name, want string
			cmd        *exec.Cmd
			code       int
		}{
			{"a binary not on PATH", "'" + bin + "'", exec.Command(bin, "-w", ws, "reprot"), ExitUsage},
			// go run exits 1 for any failing program.
			{"go run", "go run ./cmd/flower", exec.Command("go", "run", "./cmd/flower", "-w", ws, "reprot"), 1},
		} {
			c.cmd.Dir = strings.TrimSpace(string(root))
			c.cmd.Env = append(os.Environ(), "LANG="+l.locale, "LC_ALL=", "LC_MESSAGES=", "FLOWER_CLAUDE="+stubCLI(t))
			out, err := c.cmd.CombinedOutput()
			if code := exitCode(err); code != c.code {
				t.Fatalf("%s (%s): exit %d, want %d: %s", c.name, l.name, code, c.code, out)
			}
			for _, hint := range []string{"`" + c.want + " report`", c.want + " go reprot"} {
				if !strings.Contains(string(out), hint) {
					t.Errorf("%s (%s): the hint does not name %q:\n%s", c.name, l.name, hint, out)
				}
			}
		}
	}
}

// The size the install question and the README give is the pinned CLI's:
// its platform package, measured where the tests installed it (the
// question said 200 MB of a 384 MB install).
func TestTheInstallSizeGivenIsThePinnedCLIs(t *testing.T) {
	t.Parallel()
	// The pin itself, whichever CLI this pass tests: an older CLI's pass
	// skipped this test before.
	cli := claudetest.PinnedCLIPath(t)
	out, err := exec.Command(cli, "--version").Output()
	if err != nil {
		t.Fatalf("%s --version: %v", cli, err)
	}
	if v := strings.Fields(string(out)); len(v) == 0 || v[0] != cliinstall.Version {
		t.Fatalf("%s is CLI %q, not the pin %s: tools/claude-cli and cliinstall.Version disagree", cli, out, cliinstall.Version)
	}
	var size int64
	filepath.WalkDir(filepath.Dir(cli), func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				size += fi.Size()
			}
		}
		return nil
	})
	mb := float64(size) / (1 << 20)
	if mb < 0.95*cliinstall.InstalledMB || mb > 1.05*cliinstall.InstalledMB {
		t.Errorf("the pinned CLI takes %.1f MB, flower says %d MB (cliinstall.InstalledMB): measure it again", mb, cliinstall.InstalledMB)
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{fmt.Sprintf("%d MB download", cliinstall.DownloadMB), fmt.Sprintf("%d MB on disk", cliinstall.InstalledMB)} {
		if !strings.Contains(string(readme), want) {
			t.Errorf("the README does not give the install's size as %q", want)
		}
	}
	for _, l := range locales {
		q := fmt.Sprintf(text(flower.Lang(l.name), "cliAsk"), cliinstall.Version, cliinstall.DownloadMB, cliinstall.InstalledMB)
		if strings.Contains(q, "%!") || !strings.Contains(q, fmt.Sprint(cliinstall.InstalledMB)) {
			t.Errorf("the %s install question: %q", l.name, q)
		}
	}
}
