package guard

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flowerrun/flower/claude"
)

// parserOnlyWall is a coordinator's wall where no sandbox runs (macOS, no
// bubblewrap): the parser and the credential check are all that hold.
func parserOnlyWall(t *testing.T, w Wall) *wall {
	t.Helper()
	w.Glance, w.Delegate = true, true
	return &wall{texts: Texts{}.withDefaults(), w: w, tools: map[string]bool{}, timeoutCmd: mustLookPath(t, "timeout"),
		sandbox: Sandbox{Reason: SandboxMissing}}
}

// fallbackGlance asks g for cmd from cwd and returns the command it hands
// the CLI, or "" when it refuses.
func fallbackGlance(t *testing.T, g *wall, cwd, cmd string) string {
	t.Helper()
	out, err := g.check(context.Background(), &claude.HookInput{ToolName: "Bash", ToolInput: bashInput(cmd), Cwd: cwd})
	if err != nil {
		t.Fatal(err)
	}
	if out == nil || out.HookSpecificOutput == nil || out.HookSpecificOutput.PermissionDecision != claude.DecisionAllow {
		return ""
	}
	var got struct{ Command string }
	if err := json.Unmarshal(out.HookSpecificOutput.UpdatedInput, &got); err != nil {
		t.Fatal(err)
	}
	return got.Command
}

// TestFallbackRefusesEveryCredentialRead: without a sandbox, a glance
// whose words, as bash expands them, could read under ~/.config/flower,
// ~/.claude*, $CLAUDE_CONFIG_DIR or a file the wall hides is refused,
// whatever the quoting, escaping, glob, tilde, relative path, symlink,
// option value or recursion; the glances people use still pass.
func TestFallbackRefusesEveryCredentialRead(t *testing.T) {
	root := t.TempDir()
	home := filepath.Join(root, "home")
	ws := filepath.Join(home, "work")
	cfgDir := filepath.Join(root, "cli-config")
	for p, body := range map[string]string{
		filepath.Join(home, ".config", "flower", ".env"):    "ANTHROPIC_API_KEY=" + sceneKey,
		filepath.Join(home, ".config", "flower", "keys"):    sceneKey,
		filepath.Join(home, ".claude", ".credentials.json"): sceneKey,
		filepath.Join(home, ".claude", "settings.json"):     sceneKey,
		filepath.Join(home, ".claude.json"):                 sceneKey,
		filepath.Join(home, ".claude.json.backup"):          sceneKey,
		filepath.Join(cfgDir, "tokens"):                     sceneKey,
		filepath.Join(ws, "a.txt"):                          "alpha\n",
		filepath.Join(ws, "sub", "b.txt"):                   "beta\n",
		filepath.Join(ws, "secret.conf"):                    sceneKey,
	} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(home, ".config", "flower"), filepath.Join(ws, "link")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv("CLAUDE_CONFIG_DIR", cfgDir)
	g := parserOnlyWall(t, Wall{Hide: []string{filepath.Join(ws, "secret.conf")}})
	parent := filepath.Dir(home)
	for _, cmd := range []string{
		// quotes and backslashes inside a name
		"cat ~/.config/flower/.en''v", `cat ~/.config/flower/.e""nv`, `cat ~/.config/flower/.e\nv`,
		`cat ~/.config/flow''er/keys`, `cat ~/.con"fig"/flower/keys`, `cat ~/.clau''de/.cred""entials.json`,
		`cat ~/.cl\aude/settings.json`, `cat ~/".claude.json"`, `head -c 99 ~/.claude.j''son.backup`,
		// recursion into a folder that is or holds one
		"grep -r sk-ant ~/.config/flower", "grep -r sk-ant ~/.config", "grep -R sk-ant ~", "grep -rn sk-ant " + parent,
		"grep --recursive sk-ant ~/.con''fig", "rg sk-ant ~", "find ~ -name keys", "find ~/.config -type f",
		"du -a ~/.config", "ls -R ~", "tar -tvf x.tar ~", "cd ~ && grep -rn sk-ant .", "cd .. && find .",
		"git -C ~ grep --no-index sk-ant", "grep -rn sk-ant .", "grep -rn sk-ant", "find .",
		// globs that may match
		"cat ~/.config/fl*/keys", "cat ~/.c*/flower/*", "cat ~/.claude*/*", "cat " + parent + "/*/.config/flower/keys",
		"cat ~/.config/flowe?/.env", "cat ~/.config/[f]lower/keys",
		// relative paths, symlinks, option values, the wall's own hidden files
		"cat ../.config/flower/keys", "cat ../.claude.json", "cat link/keys", "cat ./link/../link/keys",
		"grep -f ~/.config/flower/keys a.txt", "grep --file=~/.config/flower/keys a.txt",
		"cd ~/.config && cat flower/keys", "cat secret.conf", "cat " + cfgDir + "/tokens", "cat " + filepath.Join(home, ".config", "flower", "keys"),
		// values the shell decides
		"cat $HOME/.config/flower/keys", `cat "$HOME"/.claude.json`, "cat ~/.config/flower/$X",
		"cat ~root/.claude.json", "cat ~+/../.claude.json", "grep -r sk-ant ~-",
	} {
		if got := fallbackGlance(t, g, ws, cmd); got != "" {
			t.Errorf("the parser-only wall let %q through", cmd)
		}
	}
	// The workspace holds a hidden file, so a recursive read of it is
	// refused; of a folder beside it, not.
	for _, cmd := range []string{"cat a.txt", "grep -rn beta sub", "ls ~", "ls -la sub", "find sub -name '*.txt'", "head -n 1 sub/b.txt", "wc -l a.txt"} {
		if got := fallbackGlance(t, g, ws, cmd); got == "" {
			t.Errorf("the parser-only wall refused the glance %q", cmd)
		}
	}
}

// TestFallbackBareRepositoryRunsNothing: a committed folder laid out as a
// bare repository whose config names a diff.external program; git -C
// evil.git diff, run the way the wall runs a glance without a sandbox,
// does not run it (it does without the hardening).
func TestFallbackBareRepositoryRunsNothing(t *testing.T) {
	ws, src := t.TempDir(), t.TempDir()
	marker := filepath.Join(t.TempDir(), "ran")
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "GIT_CONFIG_NOSYSTEM=1"}
	for _, line := range []string{
		"git init -q && echo 1 > x && git add x && git -c user.name=e -c user.email=e@e commit -qm one",
		"echo 2 > x && git -c user.name=e -c user.email=e@e commit -qam two",
		"git clone -q --bare . " + shellQuote(filepath.Join(ws, "evil.git")),
	} {
		if out, code := runIn(t, src, env, line); code != 0 {
			t.Fatalf("%s: %s", line, out)
		}
	}
	program := filepath.Join(ws, "evil.git", "hook.sh")
	if err := os.WriteFile(program, []byte("#!/bin/sh\ntouch "+shellQuote(marker)+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "evil.git", "config"), []byte("[core]\n\tbare = true\n[diff]\n\texternal = "+program+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	glance := "git -C evil.git diff HEAD~1 HEAD"
	// The trick is real: plain git runs the program.
	runIn(t, ws, env, glance)
	if !exists(marker) {
		t.Fatalf("plain git did not run diff.external: the scene is wrong")
	}
	if err := os.Remove(marker); err != nil {
		t.Fatal(err)
	}

	g := parserOnlyWall(t, Wall{})
	line := fallbackGlance(t, g, ws, glance)
	if line == "" {
		t.Fatalf("the parser-only wall refused %q: the test needs it to run", glance)
	}
	out, code := runIn(t, ws, env, line)
	if exists(marker) {
		t.Errorf("the glance ran the bare repository's diff.external:\n%s", out)
	}
	if code == 0 {
		t.Errorf("git took evil.git for a repository: %s", out)
	}
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// fallbackForms are credential reads in the forms the parser-only wall
// must see through, as fuzz seeds.
var fallbackForms = []string{
	"cat ~/.config/flower/.en''v", `cat ~/.config/flower/.e""nv`, `cat ~/.config/flower/.e\nv`, "cat ~/.config/fl*/.env",
	"grep -r sk-ant ~/.config/flower", "grep -rn sk-ant ~", "cd ~ && grep -rn sk-ant .", "find ~ -name .env",
	`cat ~/.clau''de/.credentials.json`, "cat ~/.claude*/*", "cat ../.config/flower/.env", "tail -n 5 ~/.claude.json",
	"cat a.txt", "grep -rn alpha sub", "ls -la ~",
}

// FuzzFallbackNeverPrintsTheKey: whatever the parser-only wall lets
// through, run by bash as the CLI would from a workspace inside HOME,
// never prints the key the credential files hold. The oracle is bash
// itself, which shares no code with the check.
func FuzzFallbackNeverPrintsTheKey(f *testing.F) {
	for _, c := range fallbackForms {
		f.Add(c)
	}
	root := f.TempDir()
	home := filepath.Join(root, "home")
	ws := filepath.Join(home, "work")
	for p, body := range map[string]string{
		filepath.Join(home, ".config", "flower", ".env"):    "ANTHROPIC_API_KEY=" + sceneKey,
		filepath.Join(home, ".claude", ".credentials.json"): sceneKey,
		filepath.Join(home, ".claude.json"):                 sceneKey,
		filepath.Join(ws, "a.txt"):                          "alpha\n",
		filepath.Join(ws, "sub", "b.txt"):                   "alpha beta\n",
	} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			f.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			f.Fatal(err)
		}
	}
	f.Fuzz(func(t *testing.T, cmd string) {
		t.Setenv("HOME", home)
		t.Setenv("XDG_CONFIG_HOME", "")
		t.Setenv("CLAUDE_CONFIG_DIR", "")
		line := fallbackGlance(t, parserOnlyWall(t, Wall{GlanceTimeout: 5 * time.Second}), ws, cmd)
		if line == "" {
			return
		}
		out, _ := runIn(t, ws, []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home}, line)
		if strings.Contains(out, sceneKey[:12]) {
			t.Fatalf("the parser-only wall let %q through and it printed the key:\n%s", cmd, out)
		}
	})
}
