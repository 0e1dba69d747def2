package app

import (
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode"
)

// hermeticEnv is a command environment with nothing of this machine's
// but PATH: a home, config and cache of the test's own, the locale given.
func hermeticEnv(t *testing.T, locale string, extra ...string) []string {
	t.Helper()
	home := t.TempDir()
	env := []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "TERM=xterm",
		"XDG_CONFIG_HOME=" + filepath.Join(home, "cfg"), "XDG_CACHE_HOME=" + filepath.Join(home, "cache")}
	if locale != "" {
		env = append(env, "LANG="+locale)
	}
	return append(env, extra...)
}

func hasCJK(s string) bool {
	for _, r := range s {
		if unicode.Is(unicode.Han, r) || (r >= 0xff00 && r <= 0xffef) || (r >= 0x3000 && r <= 0x303f) {
			return true
		}
	}
	return false
}

// locales are the two languages' locales with a text each must show.
var locales = []struct {
	name, locale string
	english      bool
}{{"en", "en_US.UTF-8", true}, {"zh", "zh_CN.UTF-8", false}}

// checkLanguage fails when an English screen holds CJK, or a Chinese one
// none.
func checkLanguage(t *testing.T, english bool, screen string) {
	t.Helper()
	if english && hasCJK(screen) {
		t.Errorf("the English screen holds CJK:\n%s", screen)
	}
	if !english && !hasCJK(screen) {
		t.Errorf("the Chinese screen holds no Chinese:\n%s", screen)
	}
}

// The first screen of bare `flower` and the first-run credential question
// speak the locale's language at 80 and 160 columns, and the first screen
// says how to switch.
func TestFirstScreenAndCredentialsSpeakTheLocale(t *testing.T) {
	t.Parallel()
	for _, l := range locales {
		for _, cols := range []uint16{80, 160} {
			t.Run(l.name+"/"+string(rune('0'+cols/80)), func(t *testing.T) {
				ws := t.TempDir()
				env := hermeticEnv(t, l.locale, "FLOWER_CLAUDE="+stubCLI(t), "ANTHROPIC_API_KEY=sk-test",
					"ANTHROPIC_BASE_URL=http://127.0.0.1:1")
				p := startPTYCols(t, cols, env, "-w", ws)
				start, hint := texts["start"][1], texts["langHint"][1]
				if !l.english {
					start, hint = texts["start"][0], texts["langHint"][0]
				}
				p.expect(t, start[:12])
				p.expect(t, hint[:12])
				p.tty.Write([]byte{3})
				if code := p.wait(t); code != ExitFailure && code != ExitInterrupted {
					t.Errorf("Ctrl-C at the first prompt: exit %d", code)
				}
				checkLanguage(t, l.english, p.screen())

				env = hermeticEnv(t, l.locale, "FLOWER_CLAUDE="+stubCLI(t))
				p = startPTYCols(t, cols, env, "-w", ws, "build X")
				first := texts["firstRun"][1]
				if !l.english {
					first = texts["firstRun"][0]
				}
				p.expect(t, first)
				p.tty.Write([]byte{3})
				if code := p.wait(t); code != ExitInterrupted {
					t.Errorf("Ctrl-C at the credential question: exit %d", code)
				}
				checkLanguage(t, l.english, p.screen())
			})
		}
	}
}

// A terminal that reports a width of 0 or 10 columns neither breaks the
// first screen nor leaves a trace.
func TestTinyOrZeroWidthTerminalsDoNotBreakTheFirstScreen(t *testing.T) {
	t.Parallel()
	for _, cols := range []uint16{0, 10} {
		env := hermeticEnv(t, "en_US.UTF-8", "FLOWER_CLAUDE="+stubCLI(t), "ANTHROPIC_API_KEY=sk-test", "ANTHROPIC_BASE_URL=http://127.0.0.1:1")
		p := startPTYCols(t, cols, env, "-w", t.TempDir())
		p.expect(t, "> ")
		p.tty.Write([]byte{3})
		p.wait(t)
		if s := p.screen(); strings.Contains(s, "goroutine") || strings.Contains(s, "panic") {
			t.Errorf("%d columns: %s", cols, s)
		}
	}
}

// A locale variable holding garbage is read as English, never an error.
func TestAGarbageLocaleSpeaksEnglish(t *testing.T) {
	t.Parallel()
	env := hermeticEnv(t, "", "LC_ALL=\x1b]0;x\x07¿ñ@@", "LANG=zh_CN.UTF-8", "FLOWER_CLAUDE="+stubCLI(t),
		"ANTHROPIC_API_KEY=sk-test", "ANTHROPIC_BASE_URL=http://127.0.0.1:1")
	p := startPTYCols(t, 80, env, "-w", t.TempDir())
	p.expect(t, texts["start"][1][:12])
	p.tty.Write([]byte{3})
	p.wait(t)
	checkLanguage(t, true, p.screen())
}

// setupEnv is a setup run's environment with an old credentials file.
func setupEnv(t *testing.T, locale string, extra ...string) (env []string, file string, old []byte) {
	t.Helper()
	env = hermeticEnv(t, locale, extra...)
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "XDG_CONFIG_HOME="); ok {
			file = filepath.Join(v, "flower", ".env")
		}
	}
	old = []byte("# old\nANTHROPIC_API_KEY=sk-ant-old-key-0123456789\n")
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, old, 0o600); err != nil {
		t.Fatal(err)
	}
	return env, file, old
}

func unchangedFile(t *testing.T, file string, old []byte) {
	t.Helper()
	if got, err := os.ReadFile(file); err != nil || string(got) != string(old) {
		t.Errorf("the old file changed: %q, %v", got, err)
	}
}

// flower setup under a pty: Ctrl-C at each prompt leaves at once (no
// Enter needed) with the old file byte-identical; the key is never echoed;
// what is configured now is shown masked; a probe that could not decide
// is saved only on a yes after the reason; a rejected one never.
func TestSetupUnderAPty(t *testing.T) {
	t.Parallel()
	rejecting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
		w.Write([]byte(`{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`))
	}))
	defer rejecting.Close()
	accepting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"type":"message","content":[{"type":"text","text":"hi"}]}`))
	}))
	defer accepting.Close()
	const secret = "sk-ant-typed-SECRET-4242"
	for _, l := range locales {
		tr := func(key string) string {
			if l.english {
				return texts[key][1]
			}
			return texts[key][0]
		}
		for _, cols := range []uint16{80, 160} {
			name := l.name + "/" + map[uint16]string{80: "80", 160: "160"}[cols]
			t.Run(name+"/ctrl-c at each prompt", func(t *testing.T) {
				for stage, typed := range [][]string{nil, {secret}, {secret, ""}, {secret, "http://127.0.0.1:1", ""}} {
					env, file, old := setupEnv(t, l.locale)
					p := startPTYCols(t, cols, env, "setup")
					p.expect(t, "sk-a***") // the old key, masked
					for _, line := range typed {
						p.expect(t, "   > ")
						p.tty.Write([]byte(line + "\r"))
						time.Sleep(200 * time.Millisecond)
					}
					if stage == 3 {
						p.expect(t, strings.TrimSpace(tr("saveAnyway"))[:10])
					} else {
						p.expect(t, "   > ")
					}
					start := time.Now()
					p.tty.Write([]byte{3})
					if code := p.wait(t); code != ExitInterrupted {
						t.Errorf("stage %d: exit %d, want %d", stage, code, ExitInterrupted)
					}
					if d := time.Since(start); d > 5*time.Second {
						t.Errorf("stage %d: Ctrl-C took %s to leave", stage, d)
					}
					unchangedFile(t, file, old)
					s := p.screen()
					if !strings.Contains(s, strings.SplitN(tr("setupLeft"), "%", 2)[0]) {
						t.Errorf("stage %d: no closing line that fits setup:\n%s", stage, s)
					}
					if strings.Contains(s, secret) || strings.Contains(s, "old-key-0123456789") {
						t.Errorf("stage %d: a key was shown in clear:\n%s", stage, s)
					}
					checkLanguage(t, l.english, s)
				}
			})
			t.Run(name+"/failed probe", func(t *testing.T) {
				env, file, old := setupEnv(t, l.locale)
				p := startPTYCols(t, cols, env, "setup")
				for _, line := range []string{secret, rejecting.URL, ""} {
					p.expect(t, "   > ")
					p.tty.Write([]byte(line + "\r"))
					time.Sleep(200 * time.Millisecond)
				}
				if code := p.wait(t); code != ExitFailure {
					t.Errorf("rejected: exit %d", code)
				}
				unchangedFile(t, file, old)
				if s := p.screen(); !strings.Contains(s, "401") || strings.Contains(s, secret) {
					t.Errorf("rejected:\n%s", s)
				}

				env, file, old = setupEnv(t, l.locale)
				p = startPTYCols(t, cols, env, "setup")
				for _, line := range []string{secret, "http://127.0.0.1:1", ""} {
					p.expect(t, "   > ")
					p.tty.Write([]byte(line + "\r"))
					time.Sleep(200 * time.Millisecond)
				}
				p.expect(t, strings.TrimSpace(tr("saveAnyway"))[:10])
				p.tty.Write([]byte("\r"))
				if code := p.wait(t); code != ExitFailure {
					t.Errorf("unchecked, not confirmed: exit %d", code)
				}
				unchangedFile(t, file, old)
				checkLanguage(t, l.english, p.screen())

				env, file, _ = setupEnv(t, l.locale)
				p = startPTYCols(t, cols, env, "setup")
				for _, line := range []string{secret, "http://127.0.0.1:1", "", "y"} {
					p.expect(t, " > ")
					p.tty.Write([]byte(line + "\r"))
					time.Sleep(300 * time.Millisecond)
				}
				if code := p.wait(t); code != ExitOK {
					t.Errorf("unchecked, confirmed: exit %d\n%s", code, p.screen())
				}
				if got, _ := os.ReadFile(file); !strings.Contains(string(got), "ANTHROPIC_API_KEY="+secret) {
					t.Errorf("confirmed but not saved: %q", got)
				}
			})
			t.Run(name+"/saved after a good probe", func(t *testing.T) {
				env, file, _ := setupEnv(t, l.locale)
				p := startPTYCols(t, cols, env, "setup")
				for _, line := range []string{secret, accepting.URL, ""} {
					p.expect(t, "   > ")
					p.tty.Write([]byte(line + "\r"))
					time.Sleep(200 * time.Millisecond)
				}
				if code := p.wait(t); code != ExitOK {
					t.Fatalf("exit %d\n%s", code, p.screen())
				}
				if got, _ := os.ReadFile(file); !strings.Contains(string(got), "ANTHROPIC_API_KEY="+secret) {
					t.Errorf("not saved: %q", got)
				}
				s := p.screen()
				if strings.Contains(s, secret) || !strings.Contains(s, tr("setupReady")[:8]) {
					t.Errorf("echo or closing line:\n%s", s)
				}
				checkLanguage(t, l.english, s)
			})
		}
	}
}

// Typos cost nothing: a one-word request a typo away from a subcommand is
// refused off a terminal (exit 2, "did you mean"), and -w naming a
// directory that does not exist is refused unless --create; neither
// writes anything.
func TestTyposCostNothing(t *testing.T) {
	t.Parallel()
	for word, want := range map[string]string{"reprot": "report", "setpu": "setup", "demoo": "demo", "rpely": "reply"} {
		if got := typoOf(word); got != want {
			t.Errorf("typoOf(%q) = %q, want %q", word, got, want)
		}
	}
	for _, word := range []string{"refactor", "build it", "fix", "test", "go", "x"} {
		if got := typoOf(word); got != "" {
			t.Errorf("typoOf(%q) = %q, want none", word, got)
		}
	}
	ws := t.TempDir()
	cmd := exec.Command(flowerBin, "-w", ws, "reprot")
	cmd.Env = hermeticEnv(t, "en_US.UTF-8", "FLOWER_CLAUDE="+stubCLI(t), "ANTHROPIC_API_KEY=sk-test")
	out, err := cmd.CombinedOutput()
	if code := exitCode(err); code != ExitUsage || !strings.Contains(string(out), "did you mean `flower report`?") || !strings.Contains(string(out), "flower go reprot") {
		t.Errorf("flower reprot: exit %d, %q", code, out)
	}
	if entries, _ := os.ReadDir(ws); len(entries) != 0 {
		t.Errorf("a typo wrote into the workspace: %v", entries)
	}

	parent := t.TempDir()
	os.Mkdir(filepath.Join(parent, "app"), 0o755)
	missing := filepath.Join(parent, "aap")
	cmd = exec.Command(flowerBin, "-w", missing, "build X")
	cmd.Env = hermeticEnv(t, "en_US.UTF-8", "FLOWER_CLAUDE="+stubCLI(t))
	out, err = cmd.CombinedOutput()
	if code := exitCode(err); code != ExitUsage || !strings.Contains(string(out), "no such directory") ||
		!strings.Contains(string(out), "did you mean "+filepath.Join(parent, "app")) || !strings.Contains(string(out), "--create") {
		t.Errorf("-w %s: exit %d, %q", missing, code, out)
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Errorf("-w created %s", missing)
	}
	cmd = exec.Command(flowerBin, "-w", missing, "--create", "build X")
	cmd.Env = hermeticEnv(t, "en_US.UTF-8", "FLOWER_CLAUDE="+stubCLI(t))
	out, err = cmd.CombinedOutput()
	if fi, serr := os.Stat(missing); serr != nil || !fi.IsDir() {
		t.Errorf("--create did not create it: exit %d, %q", exitCode(err), out)
	}

	p := startPTYCols(t, 80, hermeticEnv(t, "en_US.UTF-8"), "-w", ws, "reprot")
	p.expect(t, "Did you mean `flower report`?")
	p.tty.Write([]byte("y\r"))
	if code := p.wait(t); code != ExitFailure || !strings.Contains(p.screen(), "no such run directory") {
		t.Errorf("yes ran something else than flower report: exit %d\n%s", code, p.screen())
	}
}

func exitCode(err error) int {
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// Without a CLI anywhere, off a terminal and without --yes, the command
// says what to do and writes nothing into the workspace; with --yes it
// installs the pinned version with npm (a fake one here) into the cache,
// with a progress line, and goes on.
func TestNoCLIWritesNothingAndYesInstallsIt(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	noClaude := t.TempDir() // a PATH with sh's tools and no claude, no npm
	for _, tool := range []string{"sh", "mkdir", "dirname", "chmod", "printf", "grep", "sleep", "cat", "echo", "git"} {
		if p, err := exec.LookPath(tool); err == nil {
			os.Symlink(p, filepath.Join(noClaude, tool))
		}
	}
	for _, args := range [][]string{{"build X"}, {"once", "hi"}} {
		cmd := exec.Command(flowerBin, append([]string{"-w", ws}, args...)...)
		cmd.Env = append(hermeticEnv(t, "en_US.UTF-8", "ANTHROPIC_API_KEY=sk-test"), "PATH="+noClaude)
		out, err := cmd.CombinedOutput()
		if code := exitCode(err); code != ExitFailure || !strings.Contains(string(out), "--yes") || !strings.Contains(string(out), "FLOWER_CLAUDE=") {
			t.Errorf("%q: exit %d, %q", args, code, out)
		}
		if entries, _ := os.ReadDir(ws); len(entries) != 0 {
			t.Errorf("%q: written before the CLI check passed: %v", args, entries)
		}
	}

	npmDir := t.TempDir()
	npm := `#!/bin/sh
bin=node_modules/@anthropic-ai/claude-code-linux-x64/claude
mkdir -p "$(dirname "$bin")"
printf '#!/bin/sh\necho "` + "2.1.332" + ` (Claude Code)"\n' > "$bin"
chmod +x "$bin"
`
	os.WriteFile(filepath.Join(npmDir, "npm"), []byte(npm), 0o755)
	env := append(hermeticEnv(t, "en_US.UTF-8"), "PATH="+npmDir+":"+noClaude)
	cmd := exec.Command(flowerBin, "-w", ws, "--yes", "once", "hi")
	cmd.Env = env
	out, _ := cmd.CombinedOutput()
	if !strings.Contains(string(out), "installing the Claude Code CLI 2.1.332 with npm") || !strings.Contains(string(out), "ANTHROPIC_API_KEY") {
		t.Errorf("--yes: %q", out)
	}
	var cache string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "XDG_CACHE_HOME="); ok {
			cache = v
		}
	}
	if _, err := os.Stat(filepath.Join(cache, "flower", "claude-cli", "2.1.332", "node_modules", "@anthropic-ai", "claude-code-linux-x64", "claude")); err != nil {
		t.Errorf("not installed into the cache: %v", err)
	}
}
