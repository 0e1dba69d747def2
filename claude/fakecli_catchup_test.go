package claude_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/claude/claudetest"
)

// A CLI writes an entry to its local JSONL before it mirrors it: killed in
// between, the entry is only in the file. These scripts write files and
// frames out of step, as such a CLI leaves them, and then end.
func init() {
	appendLines := func(path string, lines ...string) {
		os.MkdirAll(filepath.Dir(path), 0o700)
		f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			panic(err)
		}
		f.WriteString(strings.Join(lines, "\n") + "\n")
		f.Close()
	}
	paths := func() (main, sub string) {
		cwd, _ := os.Getwd()
		dir := filepath.Join(os.Getenv("CLAUDE_CONFIG_DIR"), "projects", claude.ProjectKey(cwd))
		return filepath.Join(dir, fakeSession+".jsonl"), filepath.Join(dir, fakeSession, "subagents", "agent-a1.jsonl")
	}
	frame := func(f *fake, path string, lines ...string) {
		var entries []json.RawMessage
		for _, l := range lines {
			entries = append(entries, json.RawMessage(l))
		}
		f.send(map[string]any{"type": "transcript_mirror", "filePath": path, "entries": entries})
	}
	// unmirrored-<end>: u1, a mode line and s1 are mirrored; u2, the same
	// mode line again, a title, u3 and s2 only written (with the CLI's own
	// api-request line and, last, a line torn by the kill). <end> is how
	// the CLI ends.
	for _, end := range []string{"sigkill", "exit1", "clean"} {
		fakeScripts["unmirrored-"+end] = func(f *fake) {
			f.handshake()
			f.prompt()
			main, sub := paths()
			mode := `{"type":"mode","mode":"plan"}`
			appendLines(main, `{"type":"user","uuid":"u1"}`, `{"type":"api-request","body":"x"}`, mode,
				`{"type":"assistant","uuid":"u2"}`, mode, `{"type":"custom-title","title":"t"}`, `{"type":"user","uuid":"u3"}`)
			appendLines(sub, `{"type":"user","uuid":"s1","isSidechain":true}`, `{"type":"assistant","uuid":"s2","isSidechain":true}`)
			frame(f, main, `{"type":"user","uuid":"u1"}`, mode)
			frame(f, sub, `{"type":"user","uuid":"s1","isSidechain":true}`)
			switch end {
			case "clean":
				f.result("done", false)
				f.waitEOF()
				os.Exit(0)
			case "exit1":
				f.out.Flush()
				os.Exit(1)
			}
			fh, _ := os.OpenFile(main, os.O_APPEND|os.O_WRONLY, 0o600)
			fh.WriteString(`{"type":"user","uu`)
			fh.Close()
			f.out.Flush()
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
	}
	// unframed: the CLI said its session id at init and was killed before
	// any frame left it.
	fakeScripts["unframed"] = func(f *fake) {
		f.handshake()
		f.prompt()
		f.send(map[string]any{"type": "system", "subtype": "init", "session_id": fakeSession, "uuid": "i1"})
		main, _ := paths()
		appendLines(main, `{"type":"queue-operation","op":"enqueue"}`, `{"type":"user","uuid":"u1"}`)
		f.out.Flush()
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
	}
	// resumed-unmirrored: a resumed session's file holds what the driver laid
	// out; the CLI appends u9 and a title, mirrors neither and dies.
	fakeScripts["resumed-unmirrored"] = func(f *fake) {
		f.handshake()
		f.prompt()
		main, _ := paths()
		appendLines(main, `{"type":"assistant","uuid":"u9"}`, `{"type":"custom-title","title":"after"}`)
		f.out.Flush()
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
	}
}

// catchUpOptions runs scenario in a directory of its own; key is its
// session's main transcript.
func catchUpOptions(t *testing.T, scenario string, store claude.SessionStore) (opts claude.Options, key claude.SessionKey) {
	opts = fakeOptions(t, scenario)
	opts.BaseEnv = append(opts.BaseEnv, "CLAUDE_CONFIG_DIR="+t.TempDir(), "HOME="+t.TempDir())
	opts.SessionStore = store
	opts.Cwd = t.TempDir()
	return opts, claude.SessionKey{ProjectKey: claude.ProjectKey(opts.Cwd), SessionID: fakeSession}
}

// drain runs one query to its end, whatever error ends it: these CLIs die.
func drain(ctx context.Context, prompt string, opts claude.Options) (mirrorErrors []string) {
	for m := range claude.Query(ctx, prompt, opts) {
		if s, ok := m.(*claude.SystemMessage); ok && s.MirrorError != nil {
			mirrorErrors = append(mirrorErrors, s.MirrorError.Error)
		}
	}
	return mirrorErrors
}

func TestFakeMirrorCatchesUpFromTheLocalTranscriptAfterAKill(t *testing.T) {
	for _, tc := range []struct {
		end       string
		main, sub string
	}{
		// Killed or failed: every line of the files is in the store once,
		// in the file's order (the repeated mode line too), but the CLI's
		// own api-request record and the torn line.
		{"sigkill", "u1,type:mode,u2,type:mode,type:custom-title,u3", "s1,s2"},
		{"exit1", "u1,type:mode,u2,type:mode,type:custom-title,u3", "s1,s2"},
		// A clean exit mirrored all the CLI meant to: the files are not read.
		{"clean", "u1,type:mode", "s1"},
	} {
		t.Run(tc.end, func(t *testing.T) {
			store := claudetest.NewMemoryStore()
			opts, mainKey := catchUpOptions(t, "unmirrored-"+tc.end, store)
			subKey := mainKey
			subKey.Subpath = "subagents/agent-a1"
			if errs := drain(testCtx(t), "go", opts); len(errs) > 0 {
				t.Fatalf("mirror errors: %v", errs)
			}
			if got := ids(t, store, mainKey); got != tc.main {
				t.Errorf("main transcript in the store = %q, want %q", got, tc.main)
			}
			if got := ids(t, store, subKey); got != tc.sub {
				t.Errorf("subagent transcript in the store = %q, want %q", got, tc.sub)
			}
		})
	}
}

func TestFakeMirrorCatchesUpASessionThatSentNoFrame(t *testing.T) {
	store := claudetest.NewMemoryStore()
	opts, key := catchUpOptions(t, "unframed", store)
	drain(testCtx(t), "go", opts)
	got := ids(t, store, key)
	if got != "type:queue-operation,u1" {
		t.Fatalf("store = %q, want the whole file (the session is known from its init message)", got)
	}
}

func TestFakeMirrorCatchUpOnAResumeSkipsWhatWasLaidOut(t *testing.T) {
	store := claudetest.NewMemoryStore()
	opts, key := catchUpOptions(t, "resumed-unmirrored", store)
	laid := []json.RawMessage{
		json.RawMessage(`{"type":"user","uuid":"u1","text":"<a & b>"}`),
		json.RawMessage(`{"type":"custom-title","title":"before"}`),
	}
	if err := store.Append(context.Background(), key, laid); err != nil {
		t.Fatal(err)
	}
	opts.Resume = fakeSession
	drain(testCtx(t), "go on", opts)
	if got := ids(t, store, key); got != "u1,type:custom-title,u9,type:custom-title" {
		t.Fatalf("store = %q, want the two laid entries once and the CLI's two new ones", got)
	}
}
