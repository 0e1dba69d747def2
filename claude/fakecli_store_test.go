package claude_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/claude/claudetest"
	"github.com/flowerrun/flower/internal/transcripttest"
)

const fakeSession = "11111111-2222-3333-4444-555555555555"

func init() {
	// mirror: main and subagent frames, one outside the projects folder, and
	// a late subagent frame after the result.
	fakeScripts["mirror"] = func(f *fake) {
		f.handshake()
		f.prompt()
		projects := filepath.Join(os.Getenv("CLAUDE_CONFIG_DIR"), "projects")
		main := filepath.Join(projects, "-proj", fakeSession+".jsonl")
		sub := filepath.Join(projects, "-proj", fakeSession, "subagents", "agent-a1.jsonl")
		frame := func(path string, uuids ...string) {
			var entries []any
			for _, u := range uuids {
				entries = append(entries, map[string]any{"type": "user", "uuid": u})
			}
			f.send(map[string]any{"type": "transcript_mirror", "filePath": path, "entries": entries})
		}
		frame(main, "m1", "m2")
		frame(sub, "s1")
		frame("/elsewhere/x.jsonl", "lost")
		frame(main, "m3")
		f.result("turn done", false)
		frame(sub, "s2")
		f.waitEOF()
	}
	// resume-inspect reports the config directory the driver laid out.
	fakeScripts["resume-inspect"] = func(f *fake) {
		f.handshake()
		f.prompt()
		dir := os.Getenv("CLAUDE_CONFIG_DIR")
		var lines []string
		filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
			if err != nil || info.IsDir() {
				return nil
			}
			b, _ := os.ReadFile(p)
			rel, _ := filepath.Rel(dir, p)
			lines = append(lines, fmt.Sprintf("%s %o %s", rel, info.Mode().Perm(), strings.TrimSpace(string(b))))
			return nil
		})
		sort.Strings(lines)
		var resume string
		for _, a := range os.Args {
			if strings.HasPrefix(a, "--resume=") || a == "--continue" {
				resume += a + " "
			}
		}
		f.result(dir+"\n"+resume+"\n"+strings.Join(lines, "\n"), false)
		f.waitEOF()
	}
}

// recordingStore wraps a MemoryStore, failing or stalling appends on demand
// and noting when each append happened.
type recordingStore struct {
	*claudetest.MemoryStore
	failFirst atomic.Int32
	stall     time.Duration
	attempts  atomic.Int32
	mu        sync.Mutex
	tries     map[string]int // entry uuid -> appends that carried it
}

func (s *recordingStore) Append(ctx context.Context, key claude.SessionKey, entries []json.RawMessage) error {
	s.attempts.Add(1)
	s.mu.Lock()
	if s.tries == nil {
		s.tries = map[string]int{}
	}
	for _, e := range entries {
		var id struct{ UUID string }
		_ = json.Unmarshal(e, &id)
		s.tries[id.UUID]++
	}
	s.mu.Unlock()
	if s.failFirst.Add(-1) >= 0 {
		return errors.New("transient failure")
	}
	if s.stall > 0 {
		select {
		case <-time.After(s.stall):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return s.MemoryStore.Append(ctx, key, entries)
}

func mirrorOptions(t *testing.T, store claude.SessionStore) claude.Options {
	opts := fakeOptions(t, "mirror")
	opts.BaseEnv = append(opts.BaseEnv, "CLAUDE_CONFIG_DIR="+t.TempDir())
	opts.SessionStore = store
	return opts
}

func ids(t *testing.T, s claude.SessionStore, key claude.SessionKey) string {
	entries, err := s.Load(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, transcripttest.EntryID(t, e))
	}
	return strings.Join(out, ",")
}

func TestFakeMirrorMapsFramesToKeysAndFlushesBeforeTheResult(t *testing.T) {
	for _, mode := range []claude.FlushMode{claude.FlushBatched, claude.FlushEager} {
		t.Run(string(mode), func(t *testing.T) {
			store := &recordingStore{MemoryStore: claudetest.NewMemoryStore()}
			opts := mirrorOptions(t, store)
			opts.SessionStoreFlush = mode
			mainKey := claude.SessionKey{ProjectKey: "-proj", SessionID: fakeSession}
			subKey := claude.SessionKey{ProjectKey: "-proj", SessionID: fakeSession, Subpath: "subagents/agent-a1"}
			var atResult string
			for m, err := range claude.Query(testCtx(t), "go", opts) {
				if err != nil {
					t.Fatal(err)
				}
				if _, ok := m.(*claude.ResultMessage); ok {
					atResult = ids(t, store, mainKey)
				}
			}
			if atResult != "m1,m2,m3" {
				t.Errorf("when the result was delivered the store held %q, want m1,m2,m3", atResult)
			}
			if got := ids(t, store, subKey); got != "s1,s2" {
				t.Errorf("subagent transcript = %q, want s1,s2 (the late frame flushed at the end)", got)
			}
			if got, _ := store.ListSessions(context.Background(), "-proj"); len(got) != 1 {
				t.Errorf("sessions = %v; the frame outside the projects folder must be dropped", got)
			}
		})
	}
}

func TestFakeMirrorRetriesTransientFailures(t *testing.T) {
	store := &recordingStore{MemoryStore: claudetest.NewMemoryStore()}
	store.failFirst.Store(2)
	var mirrorErrors []string
	for m, err := range claude.Query(testCtx(t), "go", mirrorOptions(t, store)) {
		if err != nil {
			t.Fatal(err)
		}
		if s, ok := m.(*claude.SystemMessage); ok && s.MirrorError != nil {
			mirrorErrors = append(mirrorErrors, s.MirrorError.Error)
		}
	}
	if len(mirrorErrors) != 0 {
		t.Fatalf("mirror errors %v; two failures are within the three attempts", mirrorErrors)
	}
	if got := ids(t, store, claude.SessionKey{ProjectKey: "-proj", SessionID: fakeSession}); got != "m1,m2,m3" {
		t.Fatalf("stored %q", got)
	}
}

func TestFakeMirrorDoesNotRetryATimeout(t *testing.T) {
	store := &recordingStore{MemoryStore: claudetest.NewMemoryStore(), stall: time.Hour}
	opts := mirrorOptions(t, store)
	opts.StoreTimeout = 100 * time.Millisecond
	var mirrorErrors []*claude.MirrorError
	var mu sync.Mutex
	for m, err := range claude.Query(testCtx(t), "go", opts) {
		if err != nil {
			t.Fatal(err)
		}
		if s, ok := m.(*claude.SystemMessage); ok && s.MirrorError != nil {
			mu.Lock()
			mirrorErrors = append(mirrorErrors, s.MirrorError)
			mu.Unlock()
		}
	}
	// The store does not declare itself idempotent: no entry is sent twice
	// (the late subagent frame may join the flush at the result or come in
	// one of its own). The loss is reported once per transcript.
	store.mu.Lock()
	if len(store.tries) != 5 {
		t.Errorf("entries tried = %v, want the 5 mirrored ones", store.tries)
	}
	for id, n := range store.tries {
		if n != 1 {
			t.Errorf("entry %s was sent %d times: a timed-out append was retried", id, n)
		}
	}
	store.mu.Unlock()
	if len(mirrorErrors) != 2 || !strings.Contains(mirrorErrors[0].Error, "timed out") ||
		mirrorErrors[0].Lost+mirrorErrors[1].Lost != 5 {
		t.Fatalf("mirror errors = %+v %+v, want two reports of 5 entries lost in all", mirrorErrors[0], mirrorErrors[len(mirrorErrors)-1])
	}
}

func TestFakeResumeLaysOutTheStoredSession(t *testing.T) {
	home := t.TempDir()
	cfg := filepath.Join(home, ".claude")
	os.MkdirAll(cfg, 0o700)
	os.WriteFile(filepath.Join(cfg, ".credentials.json"), []byte(`{"claudeAiOauth":{"accessToken":"at","refreshToken":"SECRET-REFRESH"}}`), 0o600)
	os.WriteFile(filepath.Join(home, ".claude.json"), []byte(`{"userID":"u"}`), 0o600)
	os.WriteFile(filepath.Join(cfg, "settings.json"), []byte(`{"model":"opus","enabledPlugins":{"x":true},"extraKnownMarketplaces":{},"env":{"CLAUDE_CONFIG_DIR":"/bad","KEEP":"1"}}`), 0o600)

	store := claudetest.NewMemoryStore()
	cwd := t.TempDir()
	pk := claude.ProjectKey(cwd)
	ctx := context.Background()
	main := claude.SessionKey{ProjectKey: pk, SessionID: fakeSession}
	store.Append(ctx, main, []json.RawMessage{json.RawMessage(`{"type":"user","uuid":"m1"}`)})
	store.Append(ctx, claude.SessionKey{ProjectKey: pk, SessionID: fakeSession, Subpath: "subagents/agent-a1"},
		[]json.RawMessage{json.RawMessage(`{"type":"user","uuid":"s1","isSidechain":true}`),
			json.RawMessage(`{"type":"agent_metadata","agentType":"tester","toolUseId":"t1"}`)})
	store.Append(ctx, claude.SessionKey{ProjectKey: pk, SessionID: fakeSession, Subpath: "../../escape"},
		[]json.RawMessage{json.RawMessage(`{"type":"user","uuid":"evil"}`)})

	opts := fakeOptions(t, "resume-inspect")
	opts.BaseEnv = append(opts.BaseEnv, "HOME="+home)
	opts.Cwd = cwd
	opts.SessionStore = store
	opts.Resume = fakeSession
	msgs, err := collect(t, testCtx(t), "go", opts)
	if err != nil {
		t.Fatal(err)
	}
	report := lastResult(t, msgs).Result
	lines := strings.Split(report, "\n")
	tmp, args, files := lines[0], lines[1], strings.Join(lines[2:], "\n")
	if tmp == cfg || !strings.Contains(tmp, "claude-resume-") {
		t.Fatalf("CLAUDE_CONFIG_DIR = %q, want a temporary directory", tmp)
	}
	if strings.TrimSpace(args) != "--resume="+fakeSession {
		t.Errorf("resume args = %q", args)
	}
	for _, want := range []string{
		"projects/" + pk + "/" + fakeSession + `.jsonl 600 {"type":"user","uuid":"m1"}`,
		"projects/" + pk + "/" + fakeSession + `/subagents/agent-a1.jsonl 600 {"type":"user","uuid":"s1","isSidechain":true}`,
		"projects/" + pk + "/" + fakeSession + `/subagents/agent-a1.meta.json 600 {"agentType":"tester","toolUseId":"t1"}`,
		`.credentials.json 600 {"claudeAiOauth":{"accessToken":"at"}}`,
		`.claude.json 600 {"userID":"u"}`,
		`settings.json 600 {"env":{"KEEP":"1"},"model":"opus"}`,
	} {
		if !strings.Contains(files, want) {
			t.Errorf("the laid-out directory lacks\n  %s\nit holds:\n%s", want, files)
		}
	}
	if strings.Contains(files, "SECRET-REFRESH") || strings.Contains(files, "evil") {
		t.Errorf("the refresh token or an unsafe subpath leaked:\n%s", files)
	}
	if _, err := os.Stat(tmp); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the temporary directory was not removed after the CLI exited: %v", err)
	}
}

func TestFakeResumeOfAnUnknownSessionStartsNormally(t *testing.T) {
	opts := fakeOptions(t, "resume-inspect")
	opts.BaseEnv = append(opts.BaseEnv, "CLAUDE_CONFIG_DIR=/my/config")
	opts.SessionStore = claudetest.NewMemoryStore()
	opts.Resume = fakeSession
	msgs, err := collect(t, testCtx(t), "go", opts)
	if err != nil {
		t.Fatal(err)
	}
	if dir := strings.SplitN(lastResult(t, msgs).Result, "\n", 2)[0]; dir != "/my/config" {
		t.Errorf("CLAUDE_CONFIG_DIR = %q; with nothing stored the CLI should run on its own config", dir)
	}
}

func TestFakeStoreErrorOnResumeIsClear(t *testing.T) {
	opts := fakeOptions(t, "resume-inspect")
	opts.SessionStore = brokenStore{}
	opts.Resume = fakeSession
	_, err := collect(t, testCtx(t), "go", opts)
	if err == nil || !strings.Contains(err.Error(), "session store") || !strings.Contains(err.Error(), "disk I/O error") {
		t.Fatalf("err = %v", err)
	}
}

type brokenStore struct{}

func (brokenStore) Append(context.Context, claude.SessionKey, []json.RawMessage) error {
	return errors.New("disk I/O error")
}
func (brokenStore) Load(context.Context, claude.SessionKey) ([]json.RawMessage, error) {
	return nil, errors.New("disk I/O error")
}

func init() {
	// resume-mirror mirrors one new entry of the resumed session, as the
	// CLI does after writing it to its (temporary) transcript.
	fakeScripts["resume-mirror"] = func(f *fake) {
		f.handshake()
		f.prompt()
		dir := os.Getenv("CLAUDE_CONFIG_DIR")
		matches, _ := filepath.Glob(filepath.Join(dir, "projects", "*", fakeSession+".jsonl"))
		if len(matches) == 1 {
			line := `{"type":"user","uuid":"new-1"}` + "\n"
			fh, _ := os.OpenFile(matches[0], os.O_APPEND|os.O_WRONLY, 0)
			fh.WriteString(line)
			fh.Close()
			f.send(map[string]any{"type": "transcript_mirror", "filePath": matches[0], "entries": []any{map[string]any{"type": "user", "uuid": "new-1"}}})
		}
		f.result(dir, false)
		f.waitEOF()
	}
}

// appendFailing loads from a MemoryStore but refuses every append.
type appendFailing struct{ *claudetest.MemoryStore }

func (appendFailing) Append(context.Context, claude.SessionKey, []json.RawMessage) error {
	return errors.New("disk full")
}

func TestFakeResumedTranscriptIsKeptWhenTheStoreMissedEntries(t *testing.T) {
	for _, failing := range []bool{false, true} {
		t.Run(map[bool]string{false: "store ok", true: "store failing"}[failing], func(t *testing.T) {
			mem := claudetest.NewMemoryStore()
			cwd := t.TempDir()
			key := claude.SessionKey{ProjectKey: claude.ProjectKey(cwd), SessionID: fakeSession}
			if err := mem.Append(context.Background(), key, []json.RawMessage{json.RawMessage(`{"type":"user","uuid":"m1"}`)}); err != nil {
				t.Fatal(err)
			}
			opts := fakeOptions(t, "resume-mirror")
			opts.BaseEnv = append(opts.BaseEnv, "HOME="+t.TempDir())
			opts.Cwd, opts.Resume = cwd, fakeSession
			opts.SessionStore = claude.SessionStore(mem)
			if failing {
				opts.SessionStore = appendFailing{mem}
			}
			msgs, err := collect(t, testCtx(t), "go", opts)
			if err != nil {
				t.Fatal(err)
			}
			dir := lastResult(t, msgs).Result
			_, statErr := os.Stat(dir)
			if failing {
				b, err := os.ReadFile(filepath.Join(dir, "projects", key.ProjectKey, fakeSession+".jsonl"))
				if err != nil || !strings.Contains(string(b), "new-1") {
					t.Fatalf("the only full copy was not kept: %v", err)
				}
				os.RemoveAll(dir)
			} else if !errors.Is(statErr, os.ErrNotExist) {
				t.Errorf("with every entry stored the temporary directory must go: %v", statErr)
			}
		})
	}
}
