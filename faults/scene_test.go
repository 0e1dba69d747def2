package faults

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowerrun/flower"
	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/claude/claudetest"
	"github.com/flowerrun/flower/internal/transcripttest"
	"github.com/flowerrun/flower/store/sqlite"
)

// fastResilience retries at once and never waits for the network unless a
// case gives a probe of its own.
func fastResilience() flower.Resilience {
	return flower.Resilience{BaseDelay: 10 * time.Millisecond, MaxDelay: 20 * time.Millisecond,
		Probe: func(context.Context, string, int) bool { return true }}
}

// scene is one case's world: a fake API, a workspace, a run directory and
// the environment of the real CLI (its HOME holds the CLI's own JSONL).
type scene struct {
	t      *testing.T
	srv    *claudetest.Server
	ws     string
	runDir string
	env    map[string]string
	rt     *flower.Runtime
}

func newScene(t *testing.T, h claudetest.Handler, res flower.Resilience, opts ...flower.Option) *scene {
	t.Helper()
	srv := claudetest.NewServer(t, h)
	sc := &scene{t: t, srv: srv, ws: t.TempDir(), runDir: t.TempDir(), env: claudetest.Env(t, srv)}
	cli := capturingCLI(t, claudetest.CLIPath(t), sc.captured())
	// The case's options (an environment of its own, say) come after the
	// scene's.
	base := []flower.Option{flower.WithRunDir(sc.runDir), flower.WithEnv(sc.env), flower.WithResilience(res),
		flower.WithLanguage(flower.English),
		flower.WithSessionOptions(func(o *claude.Options) { o.CLIPath, o.BaseEnv = cli, claudetest.BaseEnv() })}
	rt, err := flower.New(sc.ws, append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	sc.rt = rt
	t.Cleanup(func() { rt.Close() })
	return sc
}

func spec() flower.AgentSpec {
	return flower.AgentSpec{Name: "work", AllowedTools: []string{"Bash", "Read"}}
}

// run runs one step with a bounded context.
func (sc *scene) run(s flower.AgentSpec, prompt string) (flower.StepResult, *events, error) {
	sc.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var ev events
	r, err := sc.rt.Run(ctx, s, prompt, flower.RunOptions{OnEvent: ev.add})
	return r, &ev, err
}

type events struct {
	mu  sync.Mutex
	evs []flower.Event
}

func (l *events) add(e flower.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.evs = append(l.evs, e)
}

// said reports whether an event of kind says substr.
func (l *events) said(kind, substr string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range l.evs {
		if string(e.Kind) == kind && strings.Contains(e.Text, substr) {
			return true
		}
	}
	return false
}

// firstAt is when the first event of kind saying substr was made (the
// zero time when none was).
func (l *events) firstAt(kind, substr string) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range l.evs {
		if string(e.Kind) == kind && strings.Contains(e.Text, substr) {
			return e.Time
		}
	}
	return time.Time{}
}

// marked counts the requests that carry marker (the step's own turns, not
// the CLI's side requests).
func marked(srv *claudetest.Server, marker string) int {
	n := 0
	for _, r := range srv.Requests() {
		if r.HasText(marker) {
			n++
		}
	}
	return n
}

// afterwards are the checks every case ends with: the manifest holds
// steps rows, each consistent (ok without an error, or an error saying
// what happened), and no transcript entry is lost: for every session the
// run used, the SQLite store's rows are the CLI's own JSONL, line by line.
func (sc *scene) afterwards(steps int) {
	sc.t.Helper()
	sc.rt.Close()
	checkManifest(sc.t, sc.runDir, steps)
	checkTranscripts(sc.t, sc.ws, sc.runDir, strict, sc.env["CLAUDE_CONFIG_DIR"], sc.captured())
}

// afterKill is afterwards for a case that SIGKILLs a CLI: the CLI's
// bookkeeping lines (last-prompt, atis-latch…: its own state, no
// conversation) written in the instant before the kill may not have been
// mirrored; every conversation entry must still be in the store.
func (sc *scene) afterKill(steps int) {
	sc.t.Helper()
	sc.rt.Close()
	checkManifest(sc.t, sc.runDir, steps)
	checkTranscripts(sc.t, sc.ws, sc.runDir, killed, sc.env["CLAUDE_CONFIG_DIR"], sc.captured())
}

type manifestRow struct {
	Step      string   `json:"step"`
	SessionID *string  `json:"session_id"`
	OK        bool     `json:"ok"`
	Error     *string  `json:"error"`
	Attempts  int      `json:"attempts"`
	Retired   []string `json:"retired"`
}

func readManifest(t *testing.T, runDir string) []manifestRow {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(runDir, flower.ManifestName))
	if err != nil {
		t.Fatalf("manifest: %v", err)
	}
	var rows []manifestRow
	if err := json.Unmarshal(data, &rows); err != nil {
		t.Fatalf("manifest is not a JSON list of rows: %v\n%s", err, data)
	}
	return rows
}

func checkManifest(t *testing.T, runDir string, steps int) []manifestRow {
	t.Helper()
	rows := readManifest(t, runDir)
	if len(rows) != steps {
		t.Errorf("manifest has %d rows, want %d: %+v", len(rows), steps, rows)
	}
	for _, r := range rows {
		hasErr := r.Error != nil && *r.Error != ""
		if r.Step == "" || r.OK == hasErr {
			t.Errorf("inconsistent manifest row: step %q ok %v error %v", r.Step, r.OK, r.Error)
		}
	}
	return rows
}

// captured is where capturingCLI copies the transcripts the CLI wrote.
func (sc *scene) captured() string {
	return filepath.Join(sc.runDir, "..", filepath.Base(sc.runDir)+"-cli")
}

// capturingCLI writes a wrapper of the real CLI that, when the CLI ends,
// copies the transcripts it wrote into dir. A resumed session runs in a
// temporary config directory the driver lays from the store and removes
// afterwards; the copy keeps that JSONL, the CLI's own, for the comparison.
// The wrapper catches TERM, INT and HUP (a handler, which the CLI does not
// inherit as an ignored signal), so a CLI ended by the driver is copied too.
func capturingCLI(t *testing.T, cli, dir string) string {
	t.Helper()
	return capturingCLIInto(t, cli, shq(dir))
}

// capturingCLIInto is capturingCLI copying into the folder the shell word
// dir names when the CLI ends: "$TMPDIR/capture" for a team's confined
// run, which can write nothing of the test's own.
func capturingCLIInto(t *testing.T, cli, dir string) string {
	t.Helper()
	script := "#!/bin/sh\ntrap ':' TERM INT HUP\n" + shq(cli) + " \"$@\"\nrc=$?\n" +
		"if [ -n \"$CLAUDE_CONFIG_DIR\" ] && [ -d \"$CLAUDE_CONFIG_DIR/projects\" ]; then\n" +
		"  mkdir -p " + dir + " && cp -R \"$CLAUDE_CONFIG_DIR/projects/.\" " + dir + "/\nfi\nexit $rc\n"
	p := filepath.Join(t.TempDir(), "claude")
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func shq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// checkTranscripts compares every main transcript in the store of runDir
// with the JSONL files the CLI wrote for it (in configDirs: its HOME's and
// the copies of resumed sessions' temporary ones), line by line: each file
// must follow the store's rows in order, and the longest (the last
// attempt's) must reach the store's end. The only rows a file may lack are
// synthetic API-error entries: the store keeps them, and a resume lays the
// session out without them (store.Pruning), so the model never sees them.
// A file line the store lacks is an entry lost.
func checkTranscripts(t *testing.T, ws, runDir string, m mode, configDirs ...string) {
	t.Helper()
	db, err := sqlite.Open(filepath.Join(runDir, "sessions.db"))
	if err != nil {
		t.Fatalf("open the store: %v", err)
	}
	defer db.Close()
	checkStoreTranscripts(t, db, []string{claude.ProjectKey(ws)}, m, configDirs...)
}

// checkStoreTranscripts is checkTranscripts on store s, for the CLI's
// transcripts of the workspaces whose project keys are pks (one per
// machine's checkout), looked up in s under the first.
func checkStoreTranscripts(t *testing.T, s claude.SessionStore, pks []string, m mode, configDirs ...string) {
	t.Helper()
	bySession := map[string][][]string{}
	for _, dir := range configDirs {
		for _, pk := range pks {
			files, _ := filepath.Glob(filepath.Join(dir, "projects", pk, "*.jsonl"))
			more, _ := filepath.Glob(filepath.Join(dir, pk, "*.jsonl")) // a captured copy
			for _, f := range append(files, more...) {
				sid := strings.TrimSuffix(filepath.Base(f), ".jsonl")
				bySession[sid] = append(bySession[sid], transcripttest.FileIDs(t, f))
			}
		}
	}
	if len(bySession) == 0 {
		t.Fatalf("the CLI wrote no transcript for %v in %v", pks, configDirs)
	}
	pk := pks[0]
	for sid, locals := range bySession {
		entries, err := s.Load(context.Background(), claude.SessionKey{ProjectKey: pk, SessionID: sid})
		if err != nil {
			t.Fatalf("load %s: %v", sid, err)
		}
		var stored []storedRow
		for _, e := range entries {
			if id := transcripttest.EntryID(t, e); id != "type:agent_metadata" {
				stored = append(stored, storedRow{id, isAPIError(e)})
			}
		}
		reached := false
		for _, local := range locals {
			n, end, ok := follow(local, stored, m)
			if !ok {
				t.Errorf("session %s: the CLI's JSONL line %d (%s) is not in the store in order\nJSONL: %v\nstore: %v",
					sid, n+1, local[n], local, stored)
			}
			reached = reached || (ok && end)
		}
		if !reached {
			t.Errorf("session %s: no JSONL of the CLI holds the store's last rows (%d rows): %v", sid, len(stored), stored)
		}
	}
}

// mode is how strictly checkTranscripts holds a JSONL file to the store.
type mode int

const (
	// strict: the file is the store's rows, but for API errors.
	strict mode = iota
	// killed: also, bookkeeping lines ("type:…", the CLI's own state, no
	// conversation) may be in a file and not in the store: a CLI resuming
	// a killed one's session writes some (its tools used) to its file
	// only. Every conversation entry must still be there: the driver
	// imports what a killed CLI wrote and never mirrored.
	killed
	// shared: two processes wrote to the session at once, so the store
	// interleaves their rows; each file's lines must still all be there,
	// in order.
	shared
)

type storedRow struct {
	id       string
	apiError bool
}

// follow walks local along stored: n is the lines matched, end says the
// store's rows after them are only API errors, ok that every line matched.
// Lines with a version 5 UUID are skipped: the CLI's are version 4, and a
// version 5 one is an entry the store made when it laid a resumed session
// out (store.Pruning heals a tool call the kill left without its result).
func follow(local []string, stored []storedRow, m mode) (n int, end, ok bool) {
	// skippable: laid by the store, or a killed CLI's bookkeeping line.
	skippable := func() bool {
		return n < len(local) && (isLaid(local[n]) || m == killed && strings.HasPrefix(local[n], "type:"))
	}
	for i := 0; i < len(stored); {
		switch {
		case n < len(local) && local[n] == stored[i].id:
			n, i = n+1, i+1
		case n < len(local) && isLaid(local[n]):
			n++
		case stored[i].apiError, m == shared: // laid out without it on a resume; the other writer's
			i++
		case n == len(local):
			return n, false, true // the file ends here: an earlier attempt's
		case skippable():
			n++
		default:
			return n, false, false
		}
	}
	for skippable() {
		n++
	}
	return n, n == len(local), n == len(local)
}

// isLaid reports a version 5 UUID.
func isLaid(id string) bool { return len(id) == 36 && id[14] == '5' }

func isAPIError(raw []byte) bool {
	var e struct {
		IsAPIError bool `json:"isApiErrorMessage"`
		Message    struct {
			Model string `json:"model"`
		} `json:"message"`
	}
	return json.Unmarshal(raw, &e) == nil && (e.IsAPIError || e.Message.Model == "<synthetic>")
}

// helperEnv names the helper process mode (see runHelper).
const helperEnv = "FLOWER_FAULTS_HELPER"
