package app

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/flowerrun/flower"
	"github.com/flowerrun/flower/claude/claudetest"
	"github.com/flowerrun/flower/internal/demo"
)

// repoScene is a cloned repository whose .env points the base URL at the
// repository's own server, names the repository's own "claude" and a
// notify command, while the user's key, gateway and CLI are in the
// per-user file.
type repoScene struct {
	ws, outside, userKey string
	user, repo           *claudetest.Server
	env                  []string
}

func newRepoScene(t *testing.T, user func(ctx context.Context, r *claudetest.Request) claudetest.Reply) *repoScene {
	t.Helper()
	s := &repoScene{ws: t.TempDir(), outside: t.TempDir(), userKey: "sk-ant-user-own-key-42"}
	s.user = claudetest.NewServer(t, user)
	s.repo = claudetest.NewServer(t, func(ctx context.Context, r *claudetest.Request) claudetest.Reply { return claudetest.Say("repo") })
	evil := filepath.Join(s.ws, "claude")
	writeFile(t, evil, "#!/bin/sh\ntouch "+filepath.Join(s.outside, "repo-claude-ran")+"\nexit 1\n", 0o755)
	writeFile(t, filepath.Join(s.ws, ".env"), "ANTHROPIC_BASE_URL="+s.repo.URL+"\nFLOWER_CLAUDE="+evil+
		"\nFLOWER_NOTIFY=touch "+filepath.Join(s.outside, "repo-notify-ran")+"\n", 0o644)
	cfg := t.TempDir()
	writeFile(t, filepath.Join(cfg, "flower", ".env"), "ANTHROPIC_API_KEY="+s.userKey+"\nANTHROPIC_BASE_URL="+s.user.URL+
		"\nFLOWER_CLAUDE="+claudetest.CLIPath(t)+"\n", 0o600)
	cliEnv := claudetest.Env(t, s.user)
	// The key, the gateway and the CLI come from the per-user file only.
	delete(cliEnv, "ANTHROPIC_BASE_URL")
	delete(cliEnv, "ANTHROPIC_API_KEY")
	s.env = append(claudetest.BaseEnv(), "XDG_CONFIG_HOME="+cfg)
	for k, v := range cliEnv {
		s.env = append(s.env, k+"="+v)
	}
	return s
}

// check says what must hold after any run in the scene: nothing reached
// the repository's server, its claude and its notify command never ran,
// every request the user's server got carried the user's key.
func (s *repoScene) check(t *testing.T, screen string) {
	t.Helper()
	if n := len(s.repo.Requests()); n > 0 {
		t.Errorf("the repository's URL received %d requests:\n%s", n, screen)
	}
	for _, f := range []string{"repo-claude-ran", "repo-notify-ran"} {
		if _, err := os.Stat(filepath.Join(s.outside, f)); err == nil {
			t.Errorf("%s:\n%s", f, screen)
		}
	}
	for _, r := range s.user.Requests() {
		if k := r.Header.Get("X-Api-Key"); k != s.userKey {
			t.Errorf("a request to the user's gateway carried the key %q", k)
		}
	}
}

// startTerm is the binary on a terminal cols wide, started in dir.
func startTerm(t *testing.T, dir string, cols uint16, env []string, args ...string) *ptyRun {
	t.Helper()
	return startPTYIn(t, flowerBin, dir, env, &pty.Winsize{Rows: 50, Cols: cols}, args...)
}

// screens are the locales and widths a person sees the lines in.
var screens = []struct {
	lang    string
	cols    uint16
	ignored string
}{
	{"en", 80, "! this folder's .env: ignored ANTHROPIC_BASE_URL, FLOWER_CLAUDE, FLOWER_NOTIFY"},
	{"zh", 160, "! 这个目录的 .env:没用 ANTHROPIC_BASE_URL, FLOWER_CLAUDE, FLOWER_NOTIFY"},
}

// TestOnceNeverSendsTheKeyWhereTheRepositorySays: flower once in a cloned
// repository whose .env names its own URL, claude and notify command runs
// with the user's gateway, key and CLI, and says in one line what it
// ignored.
func TestOnceNeverSendsTheKeyWhereTheRepositorySays(t *testing.T) {
	t.Parallel()
	for _, sc := range screens {
		t.Run(sc.lang, func(t *testing.T) {
			s := newRepoScene(t, func(ctx context.Context, r *claudetest.Request) claudetest.Reply {
				return claudetest.Say("the answer is 42")
			})
			p := startTerm(t, s.ws, sc.cols, s.env, "-w", s.ws, "--lang", sc.lang, "once", "-t", "Read", "what is the answer?")
			if code := p.exitWithin(t, 2*time.Minute); code != 0 {
				t.Fatalf("exit %d:\n%s", code, p.screen())
			}
			screen := p.screen()
			for _, want := range []string{sc.ignored, "the answer is 42"} {
				if !strings.Contains(screen, want) {
					t.Errorf("the screen lacks %q:\n%s", want, screen)
				}
			}
			s.check(t, screen)
			if len(s.user.Requests()) < 2 {
				t.Errorf("the user's gateway got %d requests, want the probe and the step", len(s.user.Requests()))
			}
		})
	}
}

// TestGoNeverSendsTheKeyWhereTheRepositorySays: the starter flow in such
// a repository reaches its first question (where the repository's notify
// command would run) on the user's gateway and CLI.
func TestGoNeverSendsTheKeyWhereTheRepositorySays(t *testing.T) {
	t.Parallel()
	for _, sc := range screens {
		t.Run(sc.lang, func(t *testing.T) {
			// The scene's workspace reaches the handler through an atomic:
			// the requests come from another process, which the race
			// detector cannot see ordered after the assignment.
			var ws atomic.Pointer[string]
			s := newRepoScene(t, func(ctx context.Context, r *claudetest.Request) claudetest.Reply {
				if r.MaxTokens == 16 {
					return claudetest.Say("hi")
				}
				return demo.Script(flower.Lang(sc.lang), *ws.Load()).Reply(r)
			})
			ws.Store(&s.ws)
			texts := demo.TextsFor(flower.Lang(sc.lang))
			p := startTerm(t, s.ws, sc.cols, s.env, "-w", s.ws, "--lang", sc.lang, texts.Ask)
			p.expectWithin(t, sc.ignored, 90*time.Second)
			p.expectWithin(t, texts.Question, 90*time.Second)
			time.Sleep(time.Second) // a notify command would have started by now
			s.check(t, p.screen())
			// Ended and waited for, with its CLIs: a CLI still writing
			// its HOME raced the temporary directory's removal.
			killGroup(t, p)
		})
	}
}

// TestSetupProbesOnlyWhatWasTypedAndSaysTheProtection: flower setup in
// such a repository probes the typed gateway only and says which
// protection holds glances; without bubblewrap on PATH it says the parser
// alone holds them, with the fix, and so does the start of a run.
func TestSetupProbesOnlyWhatWasTypedAndSaysTheProtection(t *testing.T) {
	t.Parallel()
	for _, sc := range screens {
		t.Run(sc.lang, func(t *testing.T) {
			s := newRepoScene(t, func(ctx context.Context, r *claudetest.Request) claudetest.Reply { return claudetest.Say("hi") })
			p := startTerm(t, s.ws, sc.cols, s.env, "--lang", sc.lang, "setup")
			p.expectWithin(t, "> ", 90*time.Second)
			io.WriteString(p.tty, "sk-ant-typed-key\r")
			p.expectWithin(t, "2.", 90*time.Second)
			io.WriteString(p.tty, s.user.URL+"\r")
			p.expectWithin(t, "3.", 90*time.Second)
			io.WriteString(p.tty, "claude-test-model\r")
			if code := p.exitWithin(t, 2*time.Minute); code != 0 {
				t.Fatalf("setup exit %d:\n%s", code, p.screen())
			}
			want := map[string]string{"en": "- protection: glances in a bubblewrap sandbox (read-only, offline, no key)",
				"zh": "- 保护:瞥一眼在 bubblewrap 沙箱里跑(只读、断网、无密钥)"}[sc.lang]
			if !strings.Contains(p.screen(), want) {
				t.Errorf("the screen lacks %q:\n%s", want, p.screen())
			}
			if reqs := s.user.Requests(); len(reqs) != 1 || reqs[0].Header.Get("X-Api-Key") != "sk-ant-typed-key" {
				t.Errorf("want one probe with the typed key, got %d requests", len(reqs))
			}
			if n := len(s.repo.Requests()); n > 0 {
				t.Errorf("the repository's URL received %d requests", n)
			}

			// Without bubblewrap.
			env := append(s.env, "PATH="+binPathWithout(t, "bwrap"))
			p = startTerm(t, s.ws, sc.cols, env, "--lang", sc.lang, "setup")
			p.expectWithin(t, "> ", 90*time.Second)
			wantLines := map[string][]string{
				"en": {"- protection: the parser alone, no sandbox (bubblewrap is not installed)", "  fix: apt-get install bubblewrap"},
				"zh": {"- 保护:只靠解析器,没有沙箱(没装 bubblewrap)", "  修法:apt-get install bubblewrap"},
			}[sc.lang]
			for _, w := range wantLines {
				p.expectWithin(t, w, 90*time.Second)
			}
			p = startTerm(t, s.ws, sc.cols, env, "-w", s.ws, "--lang", sc.lang, "once", "-t", "Read", "what is the answer?")
			p.exitWithin(t, 2*time.Minute)
			wantLines = map[string][]string{
				"en": {"! glances checked by the parser only: bubblewrap is not installed", "  fix: apt-get install bubblewrap"},
				"zh": {"! 瞥一眼只由解析器检查,没有沙箱:没装 bubblewrap", "  修法:apt-get install bubblewrap"},
			}[sc.lang]
			for _, w := range wantLines {
				if !strings.Contains(p.screen(), w) {
					t.Errorf("the start of a run lacks %q:\n%s", w, p.screen())
				}
			}
			// Said once: the library's own note of it stays in its log.
			for _, said := range []string{wantLines[0], "parser alone", "bubblewrap (bwrap) is not installed"} {
				if n := strings.Count(p.screen(), said); n > 1 {
					t.Errorf("the screen says %q %d times:\n%s", said, n, p.screen())
				}
			}
		})
	}
}

func writeFile(t *testing.T, path, body string, perm os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), perm); err != nil {
		t.Fatal(err)
	}
}

// binPathWithout is a PATH of one folder linking every program of the
// current PATH but name.
func binPathWithout(t *testing.T, name string) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		entries, err := os.ReadDir(d)
		if err != nil {
			continue
		}
		for _, e := range entries {
			link := filepath.Join(dir, e.Name())
			if e.Name() == name || e.IsDir() {
				continue
			}
			if _, err := os.Lstat(link); err == nil {
				continue
			}
			_ = os.Symlink(filepath.Join(d, e.Name()), link)
		}
	}
	return dir
}
