package store_test

// Real-CLI tests of issue 10: every byte a tool produced stays recoverable
// across a store-backed resume with a fresh HOME, from the file the pointer
// the model was sent names, with the workbench's spill guard and without.

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/claude/claudetest"
	"github.com/flowerrun/flower/guard"
	"github.com/flowerrun/flower/store"
	"github.com/flowerrun/flower/store/readback"
	"github.com/flowerrun/flower/store/sqlite"
	"github.com/flowerrun/flower/workbench"
)

// The outputs: about 10 KB, 40 KB and 200 KB. The CLI cuts the two bigger
// ones to 30,000 characters and saves them whole in its config directory.
var readbackCmds = []string{"seq 1 2300", "seq 1 8200", "seq 1 36000"}

// commandOutput is cmd's output as the command itself writes it, trailing
// newline included: the CLI strips that newline before anything sees the
// output, and readback compares modulo it.
func commandOutput(t *testing.T, cmd string) string {
	t.Helper()
	out, err := exec.Command("bash", "-c", cmd).Output()
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// expectedOutputs maps each tool_use id of req to its command's output.
func expectedOutputs(t *testing.T, req *claudetest.Request, cwd string) map[string]readback.Output {
	t.Helper()
	want := map[string]readback.Output{}
	for _, m := range req.Messages {
		for _, b := range m.Content {
			if b.Type != "tool_use" || b.Name != "Bash" {
				continue
			}
			var in struct{ Command string }
			if err := json.Unmarshal(b.Input, &in); err != nil {
				t.Fatal(err)
			}
			c := exec.Command("bash", "-c", in.Command)
			c.Dir = cwd
			out, err := c.Output()
			if err != nil {
				t.Fatalf("%s: %v", in.Command, err)
			}
			want[b.ID] = readback.Output{Text: string(out)}
		}
	}
	return want
}

func sentOf(req *claudetest.Request) map[string]string {
	sent := map[string]string{}
	for _, b := range req.ToolResults() {
		sent[b.ToolUseID] = b.Content
	}
	return sent
}

func readbackScript(next []claudetest.Responder) claudetest.Handler {
	var first []claudetest.Responder
	first = append(first, bashTurn("cat big.txt"))
	for _, c := range readbackCmds {
		first = append(first, bashTurn(c))
	}
	return validHistory(claudetest.Script{
		"SCENARIO:first": append(first, claudetest.Say("first done")),
		"SCENARIO:next":  append(next, claudetest.Say("resumed fine")),
		"SCENARIO:again": {claudetest.Say("again fine")},
	}.Handler())
}

func withSpill(opts claude.Options, wb *workbench.Workbench) claude.Options {
	opts.Hooks[claude.PostToolUse] = []claude.HookMatcher{guard.Spill(wb, guard.DefaultSpillThreshold, "", false)}
	return opts
}

func TestRealEveryOutputStaysRecoverableAcrossAResumeWithTheWorkbench(t *testing.T) {
	t.Parallel()
	srv := claudetest.NewServer(t, readbackScript([]claudetest.Responder{bashTurn(readbackCmds[1]), bashTurn(readbackCmds[2])}))
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "sessions.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	cwd := t.TempDir()
	big := strings.Repeat("a line of big.txt\n", 400) // 7,200 characters: spilled
	if err := os.WriteFile(filepath.Join(cwd, "big.txt"), []byte(big), 0o600); err != nil {
		t.Fatal(err)
	}
	wb := workbench.New(cwd)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	first := run(t, ctx, "SCENARIO:first", withSpill(realOpts(t, srv, cwd, db), wb))

	pruning, err := store.NewPruning(db, cwd, store.TrimPolicy{KeepRecent: 1}, store.PrunePolicy{}, store.EphemeralPolicy{KeepRecent: 1})
	if err != nil {
		t.Fatal(err)
	}
	again := withSpill(realOpts(t, srv, cwd, pruning), wb) // a fresh HOME: the history only in the store
	again.Resume = first.SessionID
	if res := run(t, ctx, "SCENARIO:next", again); res.IsError || res.Result != "resumed fine" {
		t.Fatalf("resume: %+v", res)
	}
	// Both processes have exited: the pointers the model was last sent
	// must name files holding every output whole.
	req := srv.Requests()[srv.Count()-1]
	want := expectedOutputs(t, req, cwd)
	if len(want) != 6 {
		t.Fatalf("%d Bash calls in the history, want 6", len(want))
	}
	rep := readback.Check(sentOf(req), want, cwd)
	for _, r := range rep.Results {
		if r.Status != readback.Recoverable {
			t.Errorf("%s: %s (%s)", r.ToolUseID, r.Status, r.Why)
		}
		if !wb.Contains(r.File) {
			t.Errorf("%s: the whole output is in %s, want the workbench's spill", r.ToolUseID, r.File)
		}
	}
	if rep.Percent() != 100 {
		t.Errorf("read-back: %s", rep)
	}
	t.Logf("read-back: %s", rep)

	// The old cat, a glance, was expired on resume, and its expiry still
	// names the spill file that holds it.
	var cat string
	for _, b := range req.ToolResults() {
		if strings.Contains(b.Content, "`cat big.txt` 的结果已过期") {
			cat = b.Content
		}
	}
	i := strings.Index(cat, ".flower/spill/")
	if i < 0 {
		t.Fatalf("the expired cat names no spill file: %q", cat)
	}
	spill := cat[i : i+len(".flower/spill/")+16+len(".txt")]
	if b, err := os.ReadFile(filepath.Join(cwd, spill)); err != nil || string(b) != strings.TrimSuffix(big, "\n") {
		t.Errorf("%s: %d bytes (%v), want big.txt (modulo its last newline)", spill, len(b), err)
	}
}

func TestRealEveryOutputStaysRecoverableAcrossAResumeWithoutTheWorkbench(t *testing.T) {
	t.Parallel()
	srv := claudetest.NewServer(t, readbackScript([]claudetest.Responder{bashTurn(readbackCmds[1]), bashTurn(readbackCmds[2])}))
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "sessions.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	cwd := t.TempDir()
	if err := os.WriteFile(filepath.Join(cwd, "big.txt"), []byte(strings.Repeat("x\n", 3000)), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	first := run(t, ctx, "SCENARIO:first", realOpts(t, srv, cwd, db))
	pruning, err := store.NewPruning(db, cwd, store.TrimPolicy{KeepRecent: 1}, store.PrunePolicy{}, store.EphemeralPolicy{KeepRecent: 1})
	if err != nil {
		t.Fatal(err)
	}
	second := realOpts(t, srv, cwd, pruning) // a fresh HOME
	second.Resume = first.SessionID
	if res := run(t, ctx, "SCENARIO:next", second); res.IsError || res.Result != "resumed fine" {
		t.Fatalf("resume: %+v", res)
	}
	if !strings.Contains(string(srv.Requests()[srv.Count()-1].Body), "claude-resume-") {
		t.Fatal("the resumed process's outputs should be saved by the CLI in its resume directory")
	}
	// That directory is gone with the process. A later resume on this
	// machine (the same HOME) is pointed at the copies the driver kept.
	third := second
	third.Resume = first.SessionID
	if res := run(t, ctx, "SCENARIO:again", third); res.IsError || res.Result != "again fine" {
		t.Fatalf("third: %+v", res)
	}
	req := srv.Requests()[srv.Count()-1]
	want := expectedOutputs(t, req, cwd)
	if len(want) != 6 {
		t.Fatalf("%d Bash calls in the history, want 6", len(want))
	}
	rep := readback.Check(sentOf(req), want, cwd)
	trimmed, persisted := 0, 0
	for _, r := range rep.Results {
		if r.Status != readback.Recoverable && r.Status != readback.Inline {
			t.Errorf("%s: %s (%s)", r.ToolUseID, r.Status, r.Why)
		}
		switch {
		case strings.Contains(r.File, "/.flower/spill/"):
			trimmed++
		case strings.Contains(r.File, "/tool-results/"):
			persisted++
			if strings.Contains(r.File, "claude-resume-") {
				t.Errorf("%s: %s lies in a resume directory", r.ToolUseID, r.File)
			}
		}
	}
	if trimmed == 0 || persisted != 4 {
		t.Errorf("%d outputs from trim spills, %d from the CLI's saved files; want some and 4: %+v", trimmed, persisted, rep.Results)
	}
	if rep.Percent() != 100 {
		t.Errorf("read-back: %s", rep)
	}
	t.Logf("read-back: %s", rep)
}
