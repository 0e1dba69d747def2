package claude

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeResumeDir is a resume directory after the CLI ran in it: the laid-out
// transcript, credentials and a whole output the CLI saved.
func fakeResumeDir(t *testing.T) (m *materialized, saved string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "claude-resume-*")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	m = &materialized{dir: dir, sessionID: "s1", durable: t.TempDir()}
	sess := filepath.Join(dir, "projects", "-w")
	saved = filepath.Join(sess, "s1", "tool-results", "b1.txt")
	for p, text := range map[string]string{
		filepath.Join(sess, "s1.jsonl"):                             "{}\n",
		filepath.Join(sess, "s1", "subagents", "agent-a.jsonl"):     "{}\n",
		filepath.Join(sess, "s1", "subagents", "agent-a.meta.json"): "{}",
		saved:                                   strings.Repeat("whole output\n", 9000),
		filepath.Join(dir, ".credentials.json"): "{}",
	} {
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return m, saved
}

func TestResumeKeepsTheCLIsSavedOutputsAndRepointsThem(t *testing.T) {
	m, saved := fakeResumeDir(t)
	want, _ := os.ReadFile(saved)
	m.remove()
	if _, err := os.Stat(m.dir); !os.IsNotExist(err) {
		t.Fatalf("the resume directory should be gone: %v", err)
	}
	kept := filepath.Join(m.durable, "projects", "-w", "s1", "tool-results", "b1.txt")
	if got, err := os.ReadFile(kept); err != nil || string(got) != string(want) {
		t.Fatalf("kept copy %s: %d bytes, %v; want the CLI's %d", kept, len(got), err, len(want))
	}
	for _, p := range []string{"s1.jsonl", "s1/subagents/agent-a.jsonl", "s1/subagents/agent-a.meta.json"} {
		if _, err := os.Stat(filepath.Join(m.durable, "projects", "-w", p)); err == nil {
			t.Errorf("transcript %s copied: the store holds those", p)
		}
	}

	// A later resume: the entries naming the old directory now name the copy.
	entry := func(path string) json.RawMessage {
		b, _ := json.Marshal(map[string]any{"type": "user", "toolUseResult": map[string]any{"persistedOutputPath": path},
			"message": map[string]any{"content": []any{map[string]any{"type": "tool_result", "tool_use_id": "t1",
				"content": "[`seq 1 9` 的结果已过期(第 2 轮前)](当时的完整输出仍在 " + path + ",需要时用 Read 读取)"}}}})
		return b
	}
	gone := filepath.Join(filepath.Dir(m.dir), "claude-resume-999", "projects", "-w", "s1", "tool-results", "zz.txt")
	in := []json.RawMessage{entry(saved), entry(gone), json.RawMessage(`{"type":"x"}`)}
	orig := string(in[0])
	later := &materialized{dir: t.TempDir(), durable: m.durable}
	out := later.repoint(in)
	if strings.Contains(string(out[0]), m.dir) || strings.Count(string(out[0]), kept) != 2 {
		t.Errorf("entry not repointed at %s: %s", kept, out[0])
	}
	if string(out[1]) != string(in[1]) {
		t.Errorf("a path with no copy must stay as it is: %s", out[1])
	}
	if string(in[0]) != orig {
		t.Error("repoint changed the caller's entries")
	}
}

func TestResumeDirStaysWhenItsFilesCannotBeKept(t *testing.T) {
	m, saved := fakeResumeDir(t)
	m.durable = filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(m.durable, nil, 0o600); err != nil { // not a directory: nothing can go under it
		t.Fatal(err)
	}
	m.remove()
	if _, err := os.Stat(saved); err != nil {
		t.Errorf("the only copy of an output the model was pointed at is gone: %v", err)
	}
	if _, err := os.Stat(filepath.Join(m.dir, ".credentials.json")); !os.IsNotExist(err) {
		t.Errorf("credentials must not outlive the CLI: %v", err)
	}
	if _, err := os.Stat(filepath.Join(m.dir, keptNote)); err != nil {
		t.Errorf("without the note a sweep would delete the directory: %v", err)
	}
}

func TestResumeDirKeptForAMissedEntryStillKeepsTheFiles(t *testing.T) {
	m, _ := fakeResumeDir(t)
	m.keep()
	if _, err := os.Stat(filepath.Join(m.durable, "projects", "-w", "s1", "tool-results", "b1.txt")); err != nil {
		t.Errorf("the saved output was not copied where later resumes look: %v", err)
	}
}
