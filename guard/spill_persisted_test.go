package guard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/workbench"
)

// persistedResponse is what the CLI 2.1.332 gives PostToolUse for a Bash
// output over 30,000 characters: stdout cut to 30,000, the whole output in
// its own tool-results file.
func persistedResponse(t *testing.T, seen, path string, size int) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(map[string]any{"stdout": seen, "stderr": "", "interrupted": false, "isImage": false,
		"noOutputExpected": false, "persistedOutputPath": path, "persistedOutputSize": size})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var spillFileRE = regexp.MustCompile(`\S*spill/[0-9a-f]{16}\.txt`)

// spilledOf runs the hook and returns the new stdout and the spill file's
// content (read from the path the pointer names).
func spilledOf(t *testing.T, m claude.HookMatcher, wb *workbench.Workbench, resp json.RawMessage) (stdout, file string) {
	t.Helper()
	out := call(t, m, &claude.HookInput{HookEventName: claude.PostToolUse, ToolName: "Bash",
		ToolInput: json.RawMessage(`{"command":"make"}`), ToolResponse: resp})
	if out == nil || out.HookSpecificOutput == nil {
		t.Fatal("no updatedToolOutput")
	}
	var got map[string]any
	if err := json.Unmarshal(out.HookSpecificOutput.UpdatedToolOutput, &got); err != nil {
		t.Fatal(err)
	}
	if _, ok := got["persistedOutputPath"]; ok {
		t.Errorf("the answer still names the CLI's file as the output: %v", got)
	}
	stdout, _ = got["stdout"].(string)
	p := spillFileRE.FindString(stdout)
	if p == "" {
		t.Fatalf("no spill file in %q", stdout)
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(wb.Workspace, p)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("the pointer names %s: %v", p, err)
	}
	return stdout, string(data)
}

func TestSpillCopiesTheCLIsPersistedOutputWhole(t *testing.T) {
	ws := t.TempDir()
	wb := &workbench.Workbench{Workspace: ws}
	whole := strings.Repeat("0123456789abcdefghi\n", 10000) // 200,000 characters
	cli := filepath.Join(t.TempDir(), "tool-results", "b1.txt")
	if err := os.MkdirAll(filepath.Dir(cli), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cli, []byte(whole), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, texts := range []Texts{ChineseTexts, EnglishTexts} {
		stdout, file := spilledOf(t, texts.Spill(wb, DefaultSpillThreshold, "", false), wb,
			persistedResponse(t, whole[:30000], cli, len(whole)))
		if file != whole {
			t.Errorf("spill file holds %d bytes, want the whole %d", len(file), len(whole))
		}
		if !strings.Contains(stdout, strconv.Itoa(len(whole))) || strings.Contains(stdout, "30000") {
			t.Errorf("the pointer must state the whole length %d: %.200q", len(whole), stdout)
		}
		if strings.Contains(stdout, "不完整") || strings.Contains(stdout, "partial") {
			t.Errorf("a whole copy is not partial: %.200q", stdout)
		}
	}
}

func TestSpillPersistedFileMissingSaysPartial(t *testing.T) {
	ws := t.TempDir()
	wb := &workbench.Workbench{Workspace: ws}
	seen := strings.Repeat("x", 30000)
	gone := filepath.Join(t.TempDir(), "gone.txt")
	for _, tt := range []struct {
		texts Texts
		word  string
	}{{ChineseTexts, "不完整"}, {EnglishTexts, "partial"}} {
		stdout, file := spilledOf(t, tt.texts.Spill(wb, DefaultSpillThreshold, "", false), wb,
			persistedResponse(t, seen, gone, 108894))
		if file != seen {
			t.Errorf("spill file holds %d bytes, want what was seen (%d)", len(file), len(seen))
		}
		if !strings.Contains(stdout, tt.word) || !strings.Contains(stdout, "30000") || !strings.Contains(stdout, "108894") {
			t.Errorf("the pointer must say partial, what it holds and how big the whole was: %.300q", stdout)
		}
	}
}

func TestSpillPersistedFileForeignSaysPartial(t *testing.T) {
	// A file that does not start with what the CLI showed is not this
	// output: the spill keeps what was seen, never the stranger.
	ws := t.TempDir()
	wb := &workbench.Workbench{Workspace: ws}
	seen := strings.Repeat("y", 30000)
	other := filepath.Join(t.TempDir(), "other.txt")
	if err := os.WriteFile(other, []byte(strings.Repeat("z", 50000)), 0o600); err != nil {
		t.Fatal(err)
	}
	stdout, file := spilledOf(t, Spill(wb, DefaultSpillThreshold, "", false), wb, persistedResponse(t, seen, other, 50000))
	if file != seen || !strings.Contains(stdout, "不完整") {
		t.Errorf("file %d bytes, pointer %.200q; want what was seen, marked partial", len(file), stdout)
	}
}

func TestSpillDiskFullWhileCopyingSaysPartial(t *testing.T) {
	// The disk fills while the whole output is copied: what fits (what was
	// seen) is spilled, the pointer says partial and names the CLI's file,
	// which still holds the whole.
	ws := t.TempDir()
	wb := &workbench.Workbench{Workspace: ws}
	whole := strings.Repeat("w", 120000)
	cli := filepath.Join(t.TempDir(), "b2.txt")
	if err := os.WriteFile(cli, []byte(whole), 0o600); err != nil {
		t.Fatal(err)
	}
	sp := EnglishTexts.newSpiller(wb, DefaultSpillThreshold, false)
	m := claude.HookMatcher{Matcher: Bulky, Hooks: []claude.HookFunc{sp.hook}}
	sp.write = func(text string) (string, error) {
		if len(text) > 50000 {
			return "", errors.New("write /x: file too large")
		}
		return wb.Spill(text)
	}
	stdout, file := spilledOf(t, m, wb, persistedResponse(t, whole[:30000], cli, len(whole)))
	if file != whole[:30000] {
		t.Errorf("spill file holds %d bytes, want the 30000 seen", len(file))
	}
	if !strings.Contains(stdout, "partial") || !strings.Contains(stdout, cli) {
		t.Errorf("the pointer must say partial and name the whole copy %s: %.400q", cli, stdout)
	}

	// Nothing can be written at all: the result stays as the CLI made it
	// (its own pointer names its whole file); the run goes on.
	sp.write = func(string) (string, error) { return "", errors.New("no space left on device") }
	out := call(t, m, &claude.HookInput{HookEventName: claude.PostToolUse, ToolName: "Bash",
		ToolInput: json.RawMessage(`{"command":"make"}`), ToolResponse: persistedResponse(t, whole[:30000], cli, len(whole))})
	if out != nil {
		t.Errorf("with nothing written the result must stay unchanged, got %s", mustJSON(out))
	}
}

// fsizeHelperEnv makes the test binary the helper process of
// TestSpillWithAFileSizeLimitSaysPartial: it names the test's directory.
const fsizeHelperEnv = "FLOWER_GUARD_FSIZE_HELPER"

// fsizeLimit is the helper's largest writable file: above the 30,000
// characters the CLI shows, below the whole output.
const fsizeLimit = 50000

// fsizeHelper runs the spill guard under RLIMIT_FSIZE, as on a disk that
// fills while the whole output is copied, and prints its answer.
func fsizeHelper(dir string) int {
	// Past the limit the kernel sends SIGXFSZ, which would kill the
	// process: ignored, the write fails with EFBIG instead.
	signal.Ignore(syscall.SIGXFSZ)
	lim := syscall.Rlimit{Cur: fsizeLimit, Max: fsizeLimit}
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
		fmt.Fprintln(os.Stderr, "setrlimit:", err)
		return 2
	}
	whole, err := os.ReadFile(filepath.Join(dir, "cli.txt"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	resp, _ := json.Marshal(map[string]any{"stdout": string(whole[:30000]), "stderr": "", "interrupted": false,
		"isImage": false, "persistedOutputPath": filepath.Join(dir, "cli.txt"), "persistedOutputSize": len(whole)})
	wb := &workbench.Workbench{Workspace: filepath.Join(dir, "ws")}
	m := EnglishTexts.Spill(wb, DefaultSpillThreshold, "", false)
	out, err := m.Hooks[0](context.Background(), &claude.HookInput{HookEventName: claude.PostToolUse, ToolName: "Bash",
		ToolInput: json.RawMessage(`{"command":"make"}`), ToolResponse: resp})
	if err != nil || out == nil || out.HookSpecificOutput == nil {
		fmt.Fprintln(os.Stderr, "no answer:", err)
		return 3
	}
	os.Stdout.Write(out.HookSpecificOutput.UpdatedToolOutput)
	return 0
}

func TestSpillWithAFileSizeLimitSaysPartial(t *testing.T) {
	dir := t.TempDir()
	whole := strings.Repeat("v", 3*fsizeLimit)
	if err := os.WriteFile(filepath.Join(dir, "cli.txt"), []byte(whole), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), fsizeHelperEnv+"="+dir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	raw, err := cmd.Output()
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, stderr.String())
	}
	var got map[string]any
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatalf("helper answer %q: %v", raw, err)
	}
	stdout, _ := got["stdout"].(string)
	p := spillFileRE.FindString(stdout)
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, "ws", p)
	}
	data, err := os.ReadFile(p)
	if err != nil || string(data) != whole[:30000] {
		t.Errorf("the pointer names %s: %d bytes, %v; want the 30000 seen", p, len(data), err)
	}
	if !strings.Contains(stdout, "partial") || !strings.Contains(stdout, filepath.Join(dir, "cli.txt")) {
		t.Errorf("the pointer must say partial and name the CLI's whole copy: %.400q", stdout)
	}
	// Nothing half-written is left in the spill folder.
	entries, _ := os.ReadDir(filepath.Dir(p))
	if len(entries) != 1 {
		t.Errorf("spill folder holds %d files, want only the partial spill", len(entries))
	}
}
