package claude_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/claude/claudetest"
	"github.com/flowerrun/flower/internal/transcripttest"
)

func storedIDs(t *testing.T, s claude.SessionStore, key claude.SessionKey) []string {
	t.Helper()
	entries, err := s.Load(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range entries {
		if id := transcripttest.EntryID(t, e); id != "type:agent_metadata" {
			ids = append(ids, id)
		}
	}
	return ids
}

func subagentScript() claudetest.Script {
	return claudetest.Script{
		"SCENARIO:dispatch": {
			claudetest.NewReply(claudetest.ToolUse("", "Agent", map[string]any{
				"description": "run a check", "prompt": "SUBAGENT:check run echo", "subagent_type": "tester", "run_in_background": false})),
			echoToolResult,
		},
		"SUBAGENT:check":  {bash("echo from-subagent"), claudetest.Say("subagent finished")},
		"SCENARIO:second": {claudetest.Say("second turn done")},
	}
}

func TestRealMirrorHoldsEveryMainAndSubagentEntry(t *testing.T) {
	t.Parallel()
	for _, mode := range []claude.FlushMode{claude.FlushEager, claude.FlushBatched} {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			srv := claudetest.NewServer(t, subagentScript().Handler())
			store := claudetest.NewMemoryStore()
			opts := realOptions(t, srv)
			opts.SessionStore, opts.SessionStoreFlush = store, mode
			opts.Agents = map[string]claude.AgentDefinition{"tester": {Description: "Runs checks", Prompt: "You are the tester.", Tools: []string{"Bash"}}}
			msgs, err := collect(t, realCtx(t), "SCENARIO:dispatch", opts)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range msgs {
				if s, ok := m.(*claude.SystemMessage); ok && s.Subtype == "mirror_error" {
					t.Fatalf("mirror_error: %s", s.Raw)
				}
			}
			sid := lastResult(t, msgs).SessionID
			pk := claude.ProjectKey(opts.Cwd)
			dir := filepath.Join(opts.Env["HOME"], ".claude", "projects", pk)
			local := transcripttest.FileIDs(t, filepath.Join(dir, sid+".jsonl"))
			stored := storedIDs(t, store, claude.SessionKey{ProjectKey: pk, SessionID: sid})
			if len(local) == 0 || strings.Join(local, ",") != strings.Join(stored, ",") {
				t.Fatalf("main transcript: CLI file has %d entries, store %d\nfile:  %v\nstore: %v", len(local), len(stored), local, stored)
			}
			subFiles, _ := filepath.Glob(filepath.Join(dir, sid, "subagents", "agent-*.jsonl"))
			subkeys, err := store.ListSubkeys(context.Background(), pk, sid)
			if err != nil {
				t.Fatal(err)
			}
			if len(subFiles) != 1 || len(subkeys) != 1 {
				t.Fatalf("subagent files %v, store subkeys %v", subFiles, subkeys)
			}
			want := "subagents/" + strings.TrimSuffix(filepath.Base(subFiles[0]), ".jsonl")
			if subkeys[0] != want {
				t.Errorf("subkey = %q, want %q", subkeys[0], want)
			}
			localSub := transcripttest.FileIDs(t, subFiles[0])
			storedSub := storedIDs(t, store, claude.SessionKey{ProjectKey: pk, SessionID: sid, Subpath: subkeys[0]})
			if len(localSub) == 0 || strings.Join(localSub, ",") != strings.Join(storedSub, ",") {
				t.Fatalf("subagent transcript: CLI file has %d entries, store %d", len(localSub), len(storedSub))
			}
		})
	}
}

func TestRealResumeFromTheStoreWithAFreshHome(t *testing.T) {
	t.Parallel()
	srv := claudetest.NewServer(t, subagentScript().Handler())
	store := claudetest.NewMemoryStore()
	opts := realOptions(t, srv)
	opts.SessionStore = store
	opts.Agents = map[string]claude.AgentDefinition{"tester": {Description: "Runs checks", Prompt: "You are the tester.", Tools: []string{"Bash"}}}
	ctx := realCtx(t)
	msgs, err := collect(t, ctx, "SCENARIO:dispatch", opts)
	if err != nil {
		t.Fatal(err)
	}
	sid := lastResult(t, msgs).SessionID
	pk := claude.ProjectKey(opts.Cwd)
	before := len(storedIDs(t, store, claude.SessionKey{ProjectKey: pk, SessionID: sid}))

	// A new machine: same workspace, empty HOME, the history only in the store.
	again := opts
	again.Env = claudetest.Env(t, srv)
	again.Resume = sid
	msgs, err = collect(t, ctx, "SCENARIO:second", again)
	if err != nil {
		t.Fatal(err)
	}
	if got := lastResult(t, msgs).SessionID; got != sid {
		t.Errorf("resumed session id = %s, want %s", got, sid)
	}
	req := srv.Requests()[srv.Count()-1]
	if !req.HasText("SCENARIO:dispatch") || !req.HasText("subagent finished") {
		t.Fatal("the fake API did not receive the stored history")
	}
	if after := len(storedIDs(t, store, claude.SessionKey{ProjectKey: pk, SessionID: sid})); after <= before {
		t.Errorf("the resumed turn was not mirrored back under the same key (%d -> %d entries)", before, after)
	}
	if _, err := os.Stat(filepath.Join(again.Env["HOME"], ".claude", "projects", pk, sid+".jsonl")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the fresh HOME should not have gained a transcript: %v", err)
	}
	if leaked := resumeDirsOf(pk); len(leaked) > 0 {
		t.Errorf("temporary resume directories left behind: %v", leaked)
	}

	// Continue-most-recent finds the same session through the store.
	cont := opts
	cont.Env = claudetest.Env(t, srv)
	cont.ContinueConversation = true
	msgs, err = collect(t, ctx, "SCENARIO:second again", cont)
	if err != nil {
		t.Fatal(err)
	}
	if got := lastResult(t, msgs).SessionID; got != sid {
		t.Errorf("continued session id = %s, want %s", got, sid)
	}
	if !srv.Requests()[srv.Count()-1].HasText("second turn done") {
		t.Error("continue did not carry the stored history")
	}
}

// resumeDirsOf lists the temporary resume directories holding project pk
// (each test has a project of its own, so other tests' directories, and
// other processes', do not count).
func resumeDirsOf(pk string) []string {
	m, _ := filepath.Glob(filepath.Join(os.TempDir(), "claude-resume-*", "projects", pk))
	return m
}

// failingStore refuses every append.
type failingStore struct{ claudetest.MemoryStore }

func (*failingStore) Append(context.Context, claude.SessionKey, []json.RawMessage) error {
	return errors.New("database is locked")
}

func TestRealFailingStoreGivesMirrorErrorNotACrash(t *testing.T) {
	t.Parallel()
	srv := claudetest.NewServer(t, claudetest.Script{"SCENARIO:touch": {bash("echo touched"), echoToolResult}}.Handler())
	opts := realOptions(t, srv)
	opts.SessionStore = &failingStore{}
	msgs, err := collect(t, realCtx(t), "SCENARIO:touch", opts)
	if err != nil {
		t.Fatal(err)
	}
	var mirrorErrors int
	for _, m := range msgs {
		if s, ok := m.(*claude.SystemMessage); ok && s.MirrorError != nil {
			mirrorErrors++
			if !strings.Contains(s.MirrorError.Error, "database is locked") || s.MirrorError.Key.SessionID == "" {
				t.Errorf("mirror_error = %+v", s.MirrorError)
			}
		}
	}
	if mirrorErrors == 0 {
		t.Fatal("no mirror_error reported")
	}
	r := lastResult(t, msgs)
	local := transcripttest.FileIDs(t, filepath.Join(opts.Env["HOME"], ".claude", "projects", claude.ProjectKey(opts.Cwd), r.SessionID+".jsonl"))
	if len(local) < 4 {
		t.Errorf("the CLI's local transcript has only %d entries", len(local))
	}
}
