package app

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowerrun/flower"
	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/internal/screen"
)

// loggingCLI is a claude that reports the pinned version and appends its
// arguments to a log, one call a line: a test sees whether anything but
// `claude --version` was started.
func loggingCLI(t *testing.T) (cli, log string) {
	t.Helper()
	dir := t.TempDir()
	cli, log = filepath.Join(dir, "claude"), filepath.Join(dir, "calls")
	script := "#!/bin/sh\necho \"$*\" >> '" + log + "'\necho '" + claude.NewestTestedCLIVersion + " (Claude Code)'\n"
	if err := os.WriteFile(cli, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return cli, log
}

// noAPI is a model API that counts what reaches it: a version command must
// reach nothing.
func noAPI(t *testing.T) (url string, hits *atomic.Int64) {
	t.Helper()
	hits = new(atomic.Int64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.Error(w, "no", http.StatusUnauthorized)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, hits
}

// flower version, --version, -V and -v alone print flower's version, the CLI a run
// would use with its version, and the tested range, in the locale's
// language; they exit 0 and start nothing: the CLI is asked only for its
// version, no run folder is made, the API is never called.
func TestVersionPrintsVersionsAndStartsNothing(t *testing.T) {
	t.Parallel()
	for _, l := range locales {
		for _, args := range [][]string{{"version"}, {"--version"}, {"-V"}, {"-v"}, {"-w", ".", "--version"}} {
			t.Run(l.name+"/"+strings.Join(args, " "), func(t *testing.T) {
				cli, calls := loggingCLI(t)
				api, hits := noAPI(t)
				ws := t.TempDir()
				cmd := exec.Command(flowerBin, args...)
				cmd.Dir = ws
				cmd.Env = hermeticEnv(t, l.locale, "FLOWER_CLAUDE="+cli, "ANTHROPIC_API_KEY=sk-test", "ANTHROPIC_BASE_URL="+api)
				cmd.Stdin = strings.NewReader("build X\n")
				out, err := cmd.CombinedOutput()
				if code := exitCode(err); code != 0 {
					t.Fatalf("exit %d:\n%s", code, out)
				}
				first, _, _ := strings.Cut(string(out), "\n")
				for _, want := range []string{cli, claude.NewestTestedCLIVersion, claude.OldestTestedCLIVersion} {
					if !strings.Contains(string(out), want) {
						t.Errorf("the version lacks %q:\n%s", want, out)
					}
				}
				if !strings.HasPrefix(first, "flower ") || len(first) < len("flower x") {
					t.Errorf("the first line is not flower's version: %q", first)
				}
				checkLanguage(t, l.english, strings.ReplaceAll(string(out), first, ""))
				log, _ := os.ReadFile(calls)
				for _, call := range strings.Split(strings.TrimSpace(string(log)), "\n") {
					if call != "--version" {
						t.Errorf("the CLI was started as claude %s", call)
					}
				}
				if entries, _ := os.ReadDir(ws); len(entries) != 0 {
					t.Errorf("the version wrote into the folder: %v", entries)
				}
				if hits.Load() != 0 {
					t.Errorf("the version called the model's API %d times", hits.Load())
				}
			})
		}
	}
}

// With no CLI anywhere, flower version says none is found and how to get
// one, installs nothing and still exits 0; on a terminal it asks nothing.
func TestVersionWithoutACLISaysHowToGetOne(t *testing.T) {
	t.Parallel()
	noClaude := t.TempDir() // a PATH with neither claude nor npm
	for i, l := range locales {
		cols := []uint16{80, 160}[i]
		t.Run(l.name, func(t *testing.T) {
			// A home as short as a person's: its cache's path fits a line.
			home := shortTempDir(t)
			env := append(hermeticEnv(t, l.locale), "HOME="+home, "XDG_CACHE_HOME="+filepath.Join(home, "cache"), "PATH="+noClaude)
			p := startPTYCols(t, cols, env, "--version")
			if code := p.wait(t); code != 0 {
				t.Fatalf("exit %d:\n%s", code, p.screen())
			}
			none, get := "none found", "FLOWER_CLAUDE=/path/to/claude"
			if !l.english {
				none = "没找到"
			}
			for _, want := range []string{none, get, "--yes", claude.NewestTestedCLIVersion} {
				p.expectFlat(t, want)
			}
			if _, err := os.Stat(filepath.Join(home, "cache", "flower")); !os.IsNotExist(err) {
				t.Errorf("flower version touched the CLI cache: %v", err)
			}
			// Every line fits the terminal, so the terminal breaks none
			// (it broke the cache's path mid-word), and the path is whole
			// on one of them.
			cache, whole := filepath.Join(home, "cache", "flower", "claude-cli", claude.NewestTestedCLIVersion), false
			for _, line := range strings.Split(strings.ReplaceAll(p.screen(), "\r", ""), "\n") {
				if screen.Columns(line) > int(cols) {
					t.Errorf("a line of %d columns on a terminal of %d: %q", screen.Columns(line), cols, line)
				}
				whole = whole || strings.Contains(line, cache)
			}
			if !whole {
				t.Errorf("the cache's path %s is not whole on a line:\n%s", cache, p.screen())
			}
		})
	}
}

// A one-word request a typo away from a command (version and help
// included) or a flag written with a dash the flag parser does not read
// (an em dash) asks before a paid run; yes runs what was meant. Off a
// terminal it is refused with the fix.
func TestNearMissesAskBeforeARun(t *testing.T) {
	t.Parallel()
	cases := []struct{ word, meant, then string }{
		{"verison", "version", claude.OldestTestedCLIVersion},
		{"hepl", "help", "flower demo"},
		{"—help", "--help", "flower demo"},
		{"—verison", "--version", claude.OldestTestedCLIVersion},
	}
	for _, l := range locales {
		for _, c := range cases {
			t.Run(l.name+"/"+c.word, func(t *testing.T) {
				cli, calls := loggingCLI(t)
				api, hits := noAPI(t)
				ws := t.TempDir()
				env := hermeticEnv(t, l.locale, "FLOWER_CLAUDE="+cli, "ANTHROPIC_API_KEY=sk-test", "ANTHROPIC_BASE_URL="+api)
				ask := fmt.Sprintf(text(langOf(l.english), "typoAsk"), c.meant, c.word)
				p := startPTYCols(t, 80, env, "-w", ws, c.word)
				p.expectWithin(t, ask[:strings.Index(ask, "?")], time.Minute)
				p.tty.Write([]byte("y\r"))
				if code := p.wait(t); code != 0 {
					t.Errorf("yes to %s: exit %d\n%s", c.meant, code, p.screen())
				}
				p.expectFlat(t, c.then)

				cmd := exec.Command(flowerBin, "-w", ws, c.word)
				cmd.Env = env
				out, err := cmd.CombinedOutput()
				refusal := fmt.Sprintf(text(langOf(l.english), "typoNoTTY"), c.word, c.meant)
				if code := exitCode(err); code != ExitUsage || !strings.Contains(string(out), refusal) {
					t.Errorf("off a terminal: exit %d, %q; want exit 2 saying %q", code, out, refusal)
				}
				if log, _ := os.ReadFile(calls); strings.Contains(string(log), "stream-json") {
					t.Errorf("a near-miss started a session: %s", log)
				}
				if entries, _ := os.ReadDir(ws); len(entries) != 0 || hits.Load() != 0 {
					t.Errorf("a near-miss wrote %v or called the API %d times", entries, hits.Load())
				}
			})
		}
	}
}

func langOf(english bool) flower.Lang {
	if english {
		return "en"
	}
	return "zh"
}

// An unknown flag is a usage error that names the nearest flag the
// command has, in the command line's language.
func TestUnknownFlagsNameTheNearest(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args []string
		near string
	}{
		{[]string{"--hepl"}, "--help"},
		{[]string{"--verison"}, "--version"},
		{[]string{"--rouns", "2", "build X"}, "--rounds"},
		{[]string{"--judge-can-rn", "build X"}, "--judge-can-run"},
		{[]string{"-hepl"}, "--help"},
		{[]string{"once", "--tols", "Read", "hi"}, "--tools"},
		{[]string{"report", "--jsn"}, "--json"},
		{[]string{"reply", "--skp", "x"}, "--skip"},
		{[]string{"worker", "--concurency", "2"}, "--concurrency"},
		{[]string{"runs", "--limt", "3"}, "--limit"},
		{[]string{"setup", "--verbos"}, "--verbose"},
	}
	for _, l := range locales {
		for _, c := range cases {
			cmd := exec.Command(flowerBin, c.args...)
			cmd.Dir = t.TempDir()
			cmd.Env = hermeticEnv(t, l.locale, "FLOWER_CLAUDE="+stubCLI(t), "ANTHROPIC_API_KEY=sk-test", "ANTHROPIC_BASE_URL=http://127.0.0.1:1")
			out, err := cmd.CombinedOutput()
			hint := fmt.Sprintf(text(langOf(l.english), "flagHint"), c.near)
			if code := exitCode(err); code != ExitUsage || !strings.Contains(string(out), hint) {
				t.Errorf("%s %q: exit %d, %q; want exit 2 with %q", l.name, c.args, code, out, hint)
			}
			checkLanguage(t, l.english, string(out))
		}
	}
	// Nothing near: no guess.
	code, _, stderr := runCmd(t, "", "--xyzzy", "build X")
	if code != ExitUsage || strings.Contains(stderr, "did you mean") {
		t.Errorf("--xyzzy: exit %d, %q", code, stderr)
	}
}

// runHelp are the help screens that end with a run's exit codes: a run's
// own (go, and flower alone, whose "build X" is one), and the commands
// that run steps (once, run, demo). Every other command has none, or its
// own.
var runHelp = map[string]bool{"": true, "go": true, "once": true, "run": true, "demo": true}

// Every help screen the binary has, top-level and every command's, in
// either language, fits a terminal 80 columns wide (measured in display
// columns: a Chinese character takes two) and uses 160 when it has them;
// the top-level screen leads with the commands a newcomer runs; a run's
// exit codes end exactly the run's screens.
func TestEveryHelpFitsTheTerminal(t *testing.T) {
	t.Parallel()
	commands := append([]string{""}, subcommands...)
	commands = append(commands, "runs prune")
	for _, l := range locales {
		for _, cols := range []uint16{80, 160} {
			for _, c := range commands {
				args := []string{"--help"}
				if c != "" {
					args = append(strings.Fields(c), "--help")
				}
				t.Run(fmt.Sprintf("%s/%d/%s", l.name, cols, c), func(t *testing.T) {
					p := startPTYCols(t, cols, hermeticEnv(t, l.locale), args...)
					if code := p.wait(t); code != 0 {
						t.Fatalf("exit %d\n%s", code, p.screen())
					}
					lines := strings.Split(strings.ReplaceAll(p.screen(), "\r\n", "\n"), "\n")
					widest := 0
					for _, line := range lines {
						w := screen.Columns(line)
						widest = max(widest, w)
						if w > int(cols) {
							t.Errorf("%d columns wide, on a terminal of %d: %q", w, cols, line)
						}
					}
					if len(lines) < 5 {
						t.Fatalf("no help:\n%s", p.screen())
					}
					// A long text uses a wide terminal: the top-level and
					// the run's help have paragraphs longer than 160.
					if cols == 160 && (c == "" || c == "go" || c == "help") && widest <= 100 {
						t.Errorf("at 160 columns the widest line is %d: the help does not use the width", widest)
					}
					end := strings.Join(lines[max(0, len(lines)-12):], "\n")
					runCodes := strings.Contains(end, "Exit codes of a run:") || strings.Contains(end, "运行的退出码:")
					if runHelp[c] || c == "help" {
						if !runCodes {
							t.Errorf("the help of a run does not end with its exit codes:\n%s", end)
						}
					} else if strings.Contains(p.screen(), "Ctrl-C twice") || strings.Contains(p.screen(), "连按两次 Ctrl-C") {
						t.Errorf("%s --help shows a run's exit codes:\n%s", c, p.screen())
					}
					if c == "" || c == "help" {
						top := strings.Join(lines[:min(len(lines), 10)], "\n")
						for _, first := range []string{"flower demo", "flower setup", "flower \""} {
							if !strings.Contains(top, first) {
								t.Errorf("the help's first lines do not lead with %s:\n%s", first, top)
							}
						}
					}
					// The run's help names the full-width ？ a Chinese
					// keyboard types: no Chinese text.
					checkLanguage(t, l.english, strings.ReplaceAll(p.screen(), "？", ""))
					if !l.english {
						checkMostlyChinese(t, lines)
					}
				})
			}
		}
	}
}

// englishProse is a run of three lower-case English words: a sentence,
// not a flag name, a command or a line of code.
var englishProse = regexp.MustCompile(`\b[a-z]+ [a-z]+ [a-z]+\b`)

// checkMostlyChinese fails a screen whose prose is mostly English: of its
// lines that hold prose (Chinese, or a run of English words), most must
// hold Chinese. Flag names, commands, paths and code may stay English.
func checkMostlyChinese(t *testing.T, lines []string) {
	t.Helper()
	prose, chinese := 0, 0
	var english []string
	for _, line := range lines {
		switch {
		case hasCJK(line):
			prose++
			chinese++
		case englishProse.MatchString(line):
			prose++
			english = append(english, line)
		}
	}
	if chinese*2 <= prose {
		t.Errorf("under a Chinese locale %d of %d prose lines are English:\n%s", len(english), prose, strings.Join(english, "\n"))
	}
}

// fitHelp reflows paragraphs and item descriptions to the width, keeps
// code and example lines as they are while they fit, never cuts a word a
// blank could keep whole, and measures Chinese in display columns.
func TestFitHelpReflowsToTheWidth(t *testing.T) {
	t.Parallel()
	help := "Usage: x\n\nA paragraph that is long enough to wrap at a narrow width and to\njoin at a wide one.\n\nFlags:\n" +
		"  --output FILE   where the page goes (default $TMPDIR/flower-report-<id>.html,\n" +
		"                  one per run directory)\n" +
		"  --中文 X        一段很长的中文说明,要在窄的终端上换行,而且不能让行首出现逗号或者句号。\n" +
		"    code(kept) // as it is\n" +
		"\n中文段落里用的是半角标点,\n换行处不加空格(跟英文不一样)\n"
	for _, cols := range []int{30, 50, 80, 160} {
		out := fitHelp(help, cols)
		for _, line := range strings.Split(out, "\n") {
			if screen.Columns(line) > cols {
				t.Errorf("%d: %q is %d columns wide", cols, line, screen.Columns(line))
			}
			if strings.HasPrefix(strings.TrimLeft(line, " "), ",") || strings.HasPrefix(strings.TrimLeft(line, " "), "。") {
				t.Errorf("%d: a line starts with closing punctuation: %q", cols, line)
			}
		}
		// A word longer than the room is cut; one that fits never is.
		if flat := strings.Join(strings.Fields(out), " "); cols >= 50 && !strings.Contains(flat, "$TMPDIR/flower-report-<id>.html,") {
			t.Errorf("%d: the path was cut:\n%s", cols, out)
		}
		if !strings.Contains(out, "    code(kept) // as it is\n") {
			t.Errorf("%d: the kept line changed:\n%s", cols, out)
		}
	}
	if out := fitHelp(help, 160); !strings.Contains(out, "半角标点,换行处不加空格(跟英文不一样)") {
		t.Errorf("at 160 a Chinese paragraph is joined with a blank:\n%s", out)
	}
	if out := fitHelp(help, 160); !strings.Contains(out, "to join at a wide one.") || !strings.Contains(out, "directory)\n") ||
		strings.Contains(out, "\n                  one per run") {
		t.Errorf("at 160 the paragraph and the description are not joined:\n%s", out)
	}
}

// A command-line error speaks the language the help would: under a
// Chinese locale (or --lang zh) setup's, reply's, cancel's and the other
// commands' usage errors are Chinese, exit 2 and say what to do.
func TestUsageErrorsSpeakTheLocale(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args []string
		key  string
	}{
		{[]string{"setup", "extra"}, "setupArgs"},
		{[]string{"reply"}, "replyNoWords"},
		{[]string{"reply", "--skip", "--mail", "x"}, "replySkipMail"},
		{[]string{"cancel", "r1", "r2"}, "cancelArgs"},
		{[]string{"once", "  "}, "onceNoPrompt"},
		{[]string{"demo", "build X"}, "demoArgs"},
		{[]string{"run"}, "runNoProgram"},
		{[]string{"report", "a", "b"}, "reportArgs"},
		{[]string{"--rounds", "0", "build X"}, "goRounds"},
		{[]string{"-w", "afile", "build X"}, "wsFile"},
	}
	for _, l := range locales {
		for _, c := range cases {
			t.Run(l.name+"/"+strings.Join(c.args, " "), func(t *testing.T) {
				cmd := exec.Command(flowerBin, c.args...)
				cmd.Dir = t.TempDir()
				if err := os.WriteFile(filepath.Join(cmd.Dir, "afile"), nil, 0o644); err != nil {
					t.Fatal(err)
				}
				cmd.Env = hermeticEnv(t, l.locale, "FLOWER_CLAUDE="+stubCLI(t), "ANTHROPIC_API_KEY=sk-test", "ANTHROPIC_BASE_URL=http://127.0.0.1:1")
				out, err := cmd.CombinedOutput()
				if code := exitCode(err); code != ExitUsage {
					t.Errorf("exit %d, want %d:\n%s", code, ExitUsage, out)
				}
				if phrase := longestLiteral(text(langOf(l.english), c.key)); !strings.Contains(string(out), phrase) {
					t.Errorf("the error does not say %q:\n%s", phrase, out)
				}
				checkLanguage(t, l.english, string(out))
			})
		}
	}
	// --lang zh wins over an English locale, as for the help.
	cmd := exec.Command(flowerBin, "setup", "--lang", "zh", "extra")
	cmd.Dir = t.TempDir()
	cmd.Env = hermeticEnv(t, "en_US.UTF-8")
	out, _ := cmd.CombinedOutput()
	if phrase := longestLiteral(text("zh", "setupArgs")); !strings.Contains(string(out), phrase) {
		t.Errorf("setup --lang zh: the error does not say %q:\n%s", phrase, out)
	}
}

// longestLiteral is the longest stretch of a format text between its
// verbs: what the message says whatever the values put in it.
func longestLiteral(format string) string {
	longest := ""
	for _, part := range regexp.MustCompile(`%[a-z]`).Split(format, -1) {
		if len(part) > len(longest) {
			longest = part
		}
	}
	return longest
}
