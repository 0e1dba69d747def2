package app

// The README's promises, kept by running them: its Quick start, as a
// person pastes it, must end in the run its top pictures.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/flowerrun/flower/claude/claudetest"
)

// moduleRoot is the checkout the tests run in (the README beside go.mod).
func moduleRoot(t *testing.T) string {
	t.Helper()
	root, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Fatalf("the module's git checkout: %v", err)
	}
	return strings.TrimSpace(string(root))
}

// readmeBlocks are the README's fenced blocks under the heading that
// starts with heading, in order.
func readmeBlocks(t *testing.T, readme, heading string) [][]string {
	t.Helper()
	var blocks [][]string
	var in, fenced bool
	for _, line := range strings.Split(readme, "\n") {
		switch {
		case strings.HasPrefix(line, "```") && in:
			if fenced = !fenced; fenced {
				blocks = append(blocks, nil)
			}
		case fenced:
			blocks[len(blocks)-1] = append(blocks[len(blocks)-1], line)
		case strings.HasPrefix(line, "## "):
			in = strings.HasPrefix(line, heading)
		}
	}
	if len(blocks) == 0 {
		t.Fatalf("the README has no code block under %q", heading)
	}
	return blocks
}

// readmeQuickStart is the README's Quick start: its first block, the
// commands a person pastes, as one script (comments dropped).
func readmeQuickStart(t *testing.T, readme string) string {
	t.Helper()
	var cmds []string
	for _, line := range readmeBlocks(t, readme, "## Quick start")[0] {
		if i := strings.Index(line, "  #"); i >= 0 {
			line = line[:i]
		}
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			cmds = append(cmds, line)
		}
	}
	if len(cmds) == 0 {
		t.Fatal("the README's Quick start block holds no command")
	}
	return strings.Join(cmds, "\n")
}

// readmePicture is the run the README's top pictures (its first block,
// which starts with the command it shows): the lines flower prints, "…"
// where the README leaves some out.
func readmePicture(t *testing.T, readme string) (command string, lines []string) {
	t.Helper()
	block := readmeBlocks(t, readme, "## What it does for you")[0]
	if len(block) == 0 || !strings.HasPrefix(block[0], "$ ") {
		t.Fatalf("the README's picture of a run does not start with the command it shows: %q", block)
	}
	for _, l := range block[1:] {
		if strings.TrimSpace(l) != "" && strings.TrimSpace(l) != "…" {
			lines = append(lines, l)
		}
	}
	return strings.TrimPrefix(block[0], "$ "), lines
}

// terminalNoise is what a terminal takes and shows nothing of: CSI and
// OSC sequences, saving and restoring the cursor.
var terminalNoise = regexp.MustCompile(`\x1b(\[[0-9;?]*[A-Za-z]|\][^\x07]*\x07|[78])`)

// pictureToken is what a picture line may differ in from a run's: "…"
// (anything), a rule of "=" (its length follows the terminal's width),
// and numbers (times, tokens, costs, a temporary folder's digits).
var pictureToken = regexp.MustCompile(`…|={2,}|\d[\d.,:]*[KMk]?`)

// pictureLineRE matches one picture line in a flattened screen: spaces
// dropped (wrapping and padding follow the width), the tokens above
// loosened.
func pictureLineRE(line string) *regexp.Regexp {
	f := strings.Join(strings.Fields(line), "")
	var b strings.Builder
	last := 0
	for _, m := range pictureToken.FindAllStringIndex(f, -1) {
		b.WriteString(regexp.QuoteMeta(f[last:m[0]]))
		switch tok := f[m[0]:m[1]]; {
		case tok == "…":
			b.WriteString(".*?")
		case tok[0] == '=':
			b.WriteString("=+")
		default:
			b.WriteString(`\d[\d.,:]*[KMk]?`)
		}
		last = m[1]
	}
	b.WriteString(regexp.QuoteMeta(f[last:]))
	return regexp.MustCompile(b.String())
}

// missingPictureLine is the first line of the picture that the screen
// (raw terminal output) does not show after the lines before it, or "".
func missingPictureLine(picture []string, raw string) string {
	shown := strings.Join(strings.Fields(terminalNoise.ReplaceAllString(raw, "")), "")
	at := 0
	for _, line := range picture {
		loc := pictureLineRE(line).FindStringIndex(shown[at:])
		if loc == nil {
			return line
		}
		at += loc[1]
	}
	return ""
}

// checkPicture fails t unless every line of the picture is on the screen,
// in the picture's order.
func checkPicture(t *testing.T, picture []string, raw string) {
	t.Helper()
	if line := missingPictureLine(picture, raw); line != "" {
		t.Errorf("the README pictures the line\n  %s\nbut the run did not print it (after the lines before it); the run printed:\n%s", line, raw)
	}
}

// quickStartEnv is a person's environment for the README's Quick start:
// their own HOME and GOPATH (so go install puts flower where the PATH line
// says), this machine's Go caches (nothing is downloaded), English.
func quickStartEnv(t *testing.T, home, gopath string, extra ...string) []string {
	goEnv := func(k string) string {
		out, _ := exec.Command("go", "env", k).Output()
		return strings.TrimSpace(string(out))
	}
	env := []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "TERM=xterm", "LANG=en_US.UTF-8",
		"GOPATH=" + gopath, "GOMODCACHE=" + goEnv("GOMODCACHE"), "GOCACHE=" + goEnv("GOCACHE"),
		"GOPROXY=" + goEnv("GOPROXY"), "GOFLAGS=" + goEnv("GOFLAGS"), "GOTOOLCHAIN=local",
		"XDG_CACHE_HOME=" + filepath.Join(home, ".cache"), "XDG_CONFIG_HOME=" + filepath.Join(home, ".config")}
	return append(env, extra...)
}

// The README's Quick start, pasted into a shell in this checkout with the
// pinned CLI at hand, installs flower, puts it on PATH and runs the demo
// to its end; what it printed is the run the README's top pictures, and
// the picture's command is the Quick start's last.
func TestReadmeQuickStartShowsThePicturedRun(t *testing.T) {
	t.Parallel()
	root := moduleRoot(t)
	data, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(data)
	script := readmeQuickStart(t, readme)
	command, picture := readmePicture(t, readme)
	if cmds := strings.Split(script, "\n"); cmds[len(cmds)-1] != command {
		t.Errorf("the README pictures %q, but its Quick start ends with %q", command, cmds[len(cmds)-1])
	}
	tmp := t.TempDir()
	gopath := filepath.Join(tmp, "go")
	// The simulated human answers after a second: the picture is of the
	// demo left to itself.
	env := quickStartEnv(t, filepath.Join(tmp, "home"), gopath, "FLOWER_CLAUDE="+claudetest.CLIPath(t), "FLOWER_DEMO_PAUSE=1s")
	p := startCmdPTYWinsize(t, exec.Command("bash", "-e", "-c", script), root, env, &pty.Winsize{Rows: 50, Cols: 200})
	// go install links flower on a loaded machine, then the whole demo.
	if code := p.exitWithin(t, 15*time.Minute); code != 0 {
		t.Fatalf("the Quick start: exit %d:\n%s", code, p.screen())
	}
	if _, err := os.Stat(filepath.Join(gopath, "bin", "flower")); err != nil {
		t.Errorf("the Quick start did not install flower where its PATH line looks: %v", err)
	}
	checkPicture(t, picture, p.screen())
}

// The picture check holds a screen to every line, in order, and fails on
// a line the run did not print.
func TestAPictureLineMatchesWhatDiffersOnlyInNumbersAndWidth(t *testing.T) {
	t.Parallel()
	screen := "\x1b[2K== clarify =====================  1/3\r\n  ? What should it say?\r\n\x1b7\x1b[1Astatus\x1b8+ Goal achieved in round 2\r\n- time 1:02 · tokens 80.1K in · cost $0.4012\r\n"
	good := []string{"== clarify ====  1/3", "? What should it say?", "+ Goal achieved in round 2", "- time 0:30 · tokens … · cost $0.3605"}
	if line := missingPictureLine(good, screen); line != "" {
		t.Errorf("%q is not found in %q", line, screen)
	}
	for _, bad := range [][]string{
		{"+ Goal achieved in round 2", "? What should it say?"}, // out of order
		{"+ Goal not achieved"},
		{"- time 0:30 · cost $0.3605 · tokens …"},
	} {
		if missingPictureLine(bad, screen) == "" {
			t.Errorf("%q passed against %q", bad, screen)
		}
	}
	if got := fmt.Sprint(pictureLineRE("- time 0:30 · cost $0.3605")); !strings.Contains(got, `\$`) {
		t.Errorf("a $ in a picture is literal: %s", got)
	}
}
