package guard

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

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
