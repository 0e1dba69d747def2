package store_test

// Real-CLI tests: the pinned Claude Code CLI against claudetest's fake
// Messages API, mirroring into SQLite or PostgreSQL and resuming through the pruning
// store with a fresh HOME (the history only in the database).

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/claude/claudetest"
	"github.com/flowerrun/flower/internal/pgtest"
	"github.com/flowerrun/flower/store"
	"github.com/flowerrun/flower/store/postgres"
	"github.com/flowerrun/flower/store/sqlite"
)

func realOpts(t *testing.T, srv *claudetest.Server, cwd string, st claude.SessionStore) claude.Options {
	t.Helper()
	return claude.Options{
		CLIPath:           claudetest.CLIPath(t),
		Cwd:               cwd,
		BaseEnv:           claudetest.BaseEnv(),
		Env:               claudetest.Env(t, srv),
		PermissionMode:    "acceptEdits",
		SystemPrompt:      claude.PresetPrompt(""),
		SessionStore:      st,
		SessionStoreFlush: claude.FlushEager,
		// rm is refused by a rule, so that denials carry the transcript's
		// structural marker (toolDenialKind "permission-rule").
		Settings:       `{"permissions":{"deny":["Bash(rm:*)"]}}`,
		SettingSources: []string{},
		// Every other command runs without asking.
		Hooks: map[string][]claude.HookMatcher{claude.PreToolUse: {{Matcher: "Bash", Hooks: []claude.HookFunc{
			func(ctx context.Context, in *claude.HookInput) (*claude.HookOutput, error) {
				if strings.Contains(string(in.ToolInput), `"rm `) {
					return nil, nil
				}
				return &claude.HookOutput{HookSpecificOutput: &claude.HookSpecificOutput{
					HookEventName: claude.PreToolUse, PermissionDecision: claude.DecisionAllow}}, nil
			}}}}},
	}
}

func run(t *testing.T, ctx context.Context, prompt string, opts claude.Options) *claude.ResultMessage {
	t.Helper()
	var last *claude.ResultMessage
	for m, err := range claude.Query(ctx, prompt, opts) {
		if err != nil {
			t.Fatalf("%s: %v", prompt, err)
		}
		if r, ok := m.(*claude.ResultMessage); ok {
			last = r
		}
		if s, ok := m.(*claude.SystemMessage); ok && s.MirrorError != nil {
			t.Fatalf("mirror_error: %s", s.Raw)
		}
	}
	if last == nil {
		t.Fatalf("%s: no result", prompt)
	}
	return last
}

func bashTurn(cmd string) claudetest.Reply {
	return claudetest.NewReply(claudetest.ToolUse("", "Bash", map[string]any{"command": cmd, "description": "step"}))
}

// validHistory answers like the real API would to a history with a
// tool_use lacking its tool_result (a 400), so a broken resume shows.
func validHistory(next claudetest.Handler) claudetest.Handler {
	return func(ctx context.Context, r *claudetest.Request) claudetest.Reply {
		open := map[string]bool{}
		for _, m := range r.Messages {
			for _, b := range m.Content {
				switch b.Type {
				case "tool_use":
					open[b.ID] = true
				case "tool_result":
					delete(open, b.ToolUseID)
				}
			}
		}
		if len(open) > 0 {
			return claudetest.Reply{Fault: &claudetest.Fault{Status: 400, Type: "invalid_request_error",
				Message: fmt.Sprintf("messages: tool_use ids were found without tool_result blocks: %v", open)}}
		}
		return next(ctx, r)
	}
}

// resumeThroughPruning resumes session sid with a fresh HOME through a
// default pruning store over db, asserts the CLI took the history, and
// returns the request the fake API got.
func resumeThroughPruning(t *testing.T, ctx context.Context, srv *claudetest.Server, db claude.SessionStore, cwd, sid string) *claudetest.Request {
	t.Helper()
	pruning, err := store.NewPruning(db, cwd, store.TrimPolicy{}, store.PrunePolicy{}, store.EphemeralPolicy{})
	if err != nil {
		t.Fatal(err)
	}
	again := realOpts(t, srv, cwd, pruning)
	again.Resume = sid
	if res := run(t, ctx, "SCENARIO:next", again); res.IsError || res.Result != "resumed fine" {
		t.Fatalf("resume: %+v", res)
	}
	return srv.Requests()[srv.Count()-1]
}

func storedRows(t *testing.T, db claude.SessionStore, key claude.SessionKey) []string {
	t.Helper()
	rows, err := db.Load(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = string(r)
	}
	return out
}

func countLines(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		// The CLI never mirrors its api-request* bookkeeping lines.
		if !strings.Contains(sc.Text(), `"type":"api-request`) {
			n++
		}
	}
	return n
}

// realBackend is a database session store the real-CLI tests mirror into.
type realBackend interface {
	claude.SessionStore
	claude.SubkeyLister
}

// eachBackend runs test once per database backend, in parallel subtests,
// each on a fresh store: SQLite in a temporary file, PostgreSQL in a new
// database of the test binary's cluster.
func eachBackend(t *testing.T, test func(t *testing.T, db realBackend)) {
	t.Run("SQLite", func(t *testing.T) {
		t.Parallel()
		db, err := sqlite.Open(filepath.Join(t.TempDir(), "sessions.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		test(t, db)
	})
	t.Run("PostgreSQL", func(t *testing.T) {
		t.Parallel()
		db, err := postgres.Open(t.Context(), pgtest.Database(t))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		test(t, db)
	})
}

func TestRealMirrorsEveryMainAndSubagentEntry(t *testing.T) {
	eachBackend(t, testRealMirrorsEveryMainAndSubagentEntry)
}

func testRealMirrorsEveryMainAndSubagentEntry(t *testing.T, db realBackend) {
	srv := claudetest.NewServer(t, claudetest.Script{
		"SCENARIO:dispatch": {
			claudetest.NewReply(claudetest.ToolUse("", "Agent", map[string]any{
				"description": "check", "prompt": "SUBAGENT:check", "subagent_type": "tester", "run_in_background": false})),
			claudetest.Say("main done"),
		},
		"SUBAGENT:check": {bashTurn("echo sub"), claudetest.Say("sub done")},
	}.Handler())
	cwd := t.TempDir()
	opts := realOpts(t, srv, cwd, db)
	opts.Agents = map[string]claude.AgentDefinition{"tester": {Description: "checks", Prompt: "You check.", Tools: []string{"Bash"}}}
	res := run(t, context.Background(), "SCENARIO:dispatch", opts)
	pk := claude.ProjectKey(cwd)
	dir := filepath.Join(opts.Env["HOME"], ".claude", "projects", pk)
	if got, want := len(storedRows(t, db, claude.SessionKey{ProjectKey: pk, SessionID: res.SessionID})), countLines(t, filepath.Join(dir, res.SessionID+".jsonl")); got != want {
		t.Errorf("main transcript: %d rows stored, %d lines in the CLI's file", got, want)
	}
	subs, err := db.ListSubkeys(context.Background(), pk, res.SessionID)
	if err != nil || len(subs) != 1 {
		t.Fatalf("subkeys = %v, %v", subs, err)
	}
	stored := 0
	for _, r := range storedRows(t, db, claude.SessionKey{ProjectKey: pk, SessionID: res.SessionID, Subpath: subs[0]}) {
		if !strings.Contains(r, `"type":"agent_metadata"`) {
			stored++
		}
	}
	if want := countLines(t, filepath.Join(dir, res.SessionID, subs[0]+".jsonl")); stored != want {
		t.Errorf("subagent transcript: %d rows stored, %d lines in the CLI's file", stored, want)
	}
}

func TestRealResumeThroughThePruningStoreFeedsALighterHistory(t *testing.T) {
	eachBackend(t, testRealResumeThroughThePruningStoreFeedsALighterHistory)
}

func testRealResumeThroughThePruningStoreFeedsALighterHistory(t *testing.T, db realBackend) {
	bulky1 := strings.Repeat("a", 5000)
	bulky2 := strings.Repeat("b", 5000)
	srv := claudetest.NewServer(t, validHistory(claudetest.Script{
		"SCENARIO:long": {
			bashTurn("printf '" + bulky1 + "'"),
			bashTurn("ls -la"),
			bashTurn("rm -f first.txt"),
			bashTurn("rm -f second.txt"),
			bashTurn("ls"),
			bashTurn("printf '" + bulky2 + "'"),
			claudetest.Say("long done"),
		},
		"SCENARIO:next": {claudetest.Say("resumed fine")},
	}.Handler()))
	cwd := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	first := run(t, ctx, "SCENARIO:long", realOpts(t, srv, cwd, db))
	key := claude.SessionKey{ProjectKey: claude.ProjectKey(cwd), SessionID: first.SessionID}
	before := storedRows(t, db, key)

	pruning, err := store.NewPruning(db, cwd,
		store.TrimPolicy{KeepRecent: 1},
		store.PrunePolicy{},
		store.EphemeralPolicy{KeepRecent: 1})
	if err != nil {
		t.Fatal(err)
	}
	again := realOpts(t, srv, cwd, pruning) // a fresh HOME: no local transcript
	again.Resume = first.SessionID
	second := run(t, ctx, "SCENARIO:next", again)
	if second.IsError || second.Result != "resumed fine" || second.SessionID != first.SessionID {
		t.Fatalf("resume: %+v", second)
	}

	req := srv.Requests()[srv.Count()-1]
	var results []claudetest.Block
	for _, b := range req.ToolResults() {
		results = append(results, b)
	}
	all := func(pred func(claudetest.Block) bool) (n int) {
		for _, b := range results {
			if pred(b) {
				n++
			}
		}
		return
	}
	// The old bulky result became a pointer to a spill file that holds it.
	if all(func(b claudetest.Block) bool { return strings.Contains(b.Content, bulky1) }) != 0 {
		t.Error("the old bulky result was sent whole")
	}
	if all(func(b claudetest.Block) bool { return strings.Contains(b.Content, bulky2) }) != 1 {
		t.Error("the most recent bulky result must stay whole")
	}
	var pointer string
	for _, b := range results {
		if strings.Contains(b.Content, "[工具结果已归档") {
			pointer = b.Content
		}
	}
	i := strings.Index(pointer, ".flower/spill/")
	if i < 0 {
		t.Fatalf("no spill pointer among the tool results: %+v", results)
	}
	spill := pointer[i : i+len(".flower/spill/")+16+len(".txt")]
	if b, err := os.ReadFile(filepath.Join(cwd, spill)); err != nil || string(b) != bulky1 {
		t.Errorf("spill file %s: %v (%d bytes), want the original 5000", spill, err, len(b))
	}
	// The old ls output is expired; the recent one is kept.
	if n := all(func(b claudetest.Block) bool {
		return strings.Contains(b.Content, "的结果已过期") && strings.Contains(b.Content, "`ls -la`")
	}); n != 1 {
		t.Errorf("expired ls -la results = %d, want 1", n)
	}
	// Only the last denial is kept: its tool_use and tool_result, not the first's.
	if req.HasText("rm -f first.txt") {
		t.Error("the older denial is still in the history")
	}
	if !strings.Contains(string(req.Body), "rm -f second.txt") {
		t.Error("the last denial must be kept")
	}
	if pruning.LastReport().DenialsDropped == 0 {
		t.Errorf("report = %+v", pruning.LastReport())
	}
	// Nothing stored was changed; the resumed turn was appended after it.
	after := storedRows(t, db, key)
	if len(after) <= len(before) || strings.Join(after[:len(before)], "\n") != strings.Join(before, "\n") {
		t.Errorf("stored rows changed: %d before, %d after", len(before), len(after))
	}
}

func TestRealInterruptedSessionResumesWithoutAnAPIError(t *testing.T) {
	eachBackend(t, testRealInterruptedSessionResumesWithoutAnAPIError)
}

func testRealInterruptedSessionResumesWithoutAnAPIError(t *testing.T, db realBackend) {
	srv := claudetest.NewServer(t, validHistory(claudetest.Script{
		"SCENARIO:slow": {bashTurn("timeout 30 tail -f /dev/null; echo woke"), claudetest.Say("never")},
		"SCENARIO:next": {claudetest.Say("resumed fine")},
	}.Handler()))
	cwd := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	opts := realOpts(t, srv, cwd, db)
	started := make(chan struct{}, 1)
	allow := opts.Hooks[claude.PreToolUse][0].Hooks[0]
	opts.Hooks = map[string][]claude.HookMatcher{claude.PreToolUse: {{Matcher: "Bash", Hooks: []claude.HookFunc{
		func(ctx context.Context, in *claude.HookInput) (*claude.HookOutput, error) {
			started <- struct{}{}
			return allow(ctx, in)
		}}}}}
	cl, err := claude.Connect(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.Send(ctx, "SCENARIO:slow"); err != nil {
		t.Fatal(err)
	}
	<-started
	time.Sleep(300 * time.Millisecond)
	if err := cl.Interrupt(ctx); err != nil {
		t.Fatal(err)
	}
	var sid string
	for m, err := range cl.ReceiveResponse(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		if r, ok := m.(*claude.ResultMessage); ok {
			sid = r.SessionID
		}
	}
	cl.Close()

	req := resumeThroughPruning(t, ctx, srv, db, cwd, sid)
	if !req.HasText("SCENARIO:slow") {
		t.Error("the interrupted history was not resumed")
	}
	// The CLI's own "stop and wait for the user" wording is replaced by the
	// neutral note; the interrupt marker itself stays.
	if strings.Contains(string(req.Body), "wait for the user") {
		t.Error("the interrupted tool result should have been neutralized")
	}
	if !req.HasText(store.DefaultInterruptText) {
		t.Error("the neutral interrupt note is missing")
	}
}

func TestRealSessionEndingInAnAPIErrorResumesWithoutIt(t *testing.T) {
	eachBackend(t, testRealSessionEndingInAnAPIErrorResumesWithoutIt)
}

func testRealSessionEndingInAnAPIErrorResumesWithoutIt(t *testing.T, db realBackend) {
	var failing atomic.Bool // read by the fake API's goroutines
	failing.Store(true)
	script := claudetest.Script{"SCENARIO:next": {claudetest.Say("resumed fine")}}.Handler()
	srv := claudetest.NewServer(t, validHistory(func(ctx context.Context, r *claudetest.Request) claudetest.Reply {
		if failing.Load() {
			return claudetest.Reply{Fault: claudetest.ServerError()}
		}
		return script(ctx, r)
	}))
	cwd := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	opts := realOpts(t, srv, cwd, db)
	opts.Env["CLAUDE_CODE_MAX_RETRIES"] = "0"
	var sid string
	for m, err := range claude.Query(ctx, "SCENARIO:doomed", opts) {
		if r, ok := m.(*claude.ResultMessage); ok {
			sid = r.SessionID
		}
		_ = err // the run ends in a *claude.ResultError by design
	}
	key := claude.SessionKey{ProjectKey: claude.ProjectKey(cwd), SessionID: sid}
	rows := storedRows(t, db, key)
	if len(rows) == 0 || !strings.Contains(strings.Join(rows, "\n"), `"isApiErrorMessage":true`) {
		t.Fatalf("the stored session should end in an API-error message; %d rows", len(rows))
	}
	failing.Store(false)
	req := resumeThroughPruning(t, ctx, srv, db, cwd, sid)
	if req.HasText("API Error") {
		t.Error("the synthetic API-error message was fed back to the model")
	}
	if !req.HasText("SCENARIO:doomed") {
		t.Error("the earlier prompt is missing from the resumed history")
	}
}

// countingStore counts the appends its base refused.
type countingStore struct {
	*postgres.Store
	refused atomic.Int32
}

func (c *countingStore) Append(ctx context.Context, key claude.SessionKey, entries []json.RawMessage) error {
	err := c.Store.Append(ctx, key, entries)
	if err != nil {
		c.refused.Add(1)
	}
	return err
}

// The PostgreSQL server stopped in the middle of a run and started again a
// few tool calls later: the appends refused meanwhile are kept by the
// mirror and sent again once the server is back, and the store ends up
// holding the CLI's transcript line for line, with no mirror_error.
func TestRealMirrorIntoPostgresLosesNothingAcrossAServerRestart(t *testing.T) {
	t.Parallel()
	pg := pgtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	u, err := pg.CreateDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	base, err := postgres.Open(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer base.Close()
	db := &countingStore{Store: base}
	srv := claudetest.NewServer(t, claudetest.Script{
		"SCENARIO:restart": {bashTurn("echo one"), bashTurn("echo two"), bashTurn("echo three"), bashTurn("echo four"), claudetest.Say("done")},
	}.Handler())
	cwd := t.TempDir()
	opts := realOpts(t, srv, cwd, db)
	var serverErr atomic.Value
	restart := func(ctx context.Context, in *claude.HookInput) (*claude.HookOutput, error) {
		var err error
		switch {
		case strings.Contains(string(in.ToolInput), "echo two"):
			err = pg.Stop(ctx)
		case strings.Contains(string(in.ToolInput), "echo four"):
			err = pg.Start(ctx)
		}
		if err != nil {
			serverErr.Store(err)
		}
		return nil, nil // the other hook decides
	}
	m := opts.Hooks[claude.PreToolUse][0]
	m.Hooks = append([]claude.HookFunc{restart}, m.Hooks...)
	opts.Hooks = map[string][]claude.HookMatcher{claude.PreToolUse: {m}}
	res := run(t, ctx, "SCENARIO:restart", opts)
	if err, _ := serverErr.Load().(error); err != nil {
		t.Fatalf("stopping or starting the server: %v", err)
	}
	if db.refused.Load() == 0 {
		t.Fatal("no append was refused while the server was down: the test did not test a restart")
	}
	pk := claude.ProjectKey(cwd)
	file := filepath.Join(opts.Env["HOME"], ".claude", "projects", pk, res.SessionID+".jsonl")
	if got, want := len(storedRows(t, db, claude.SessionKey{ProjectKey: pk, SessionID: res.SessionID})), countLines(t, file); got != want {
		t.Fatalf("%d rows stored after the restart, %d lines in the CLI's file (%d appends were refused)", got, want, db.refused.Load())
	}
	t.Logf("%d appends refused while the server was down; every line stored", db.refused.Load())
}
