package flower

// English throughout: every text flower can show a human or feed the
// model, collected from every table and every producer, speaks the run's
// language; and a whole English run leaves no Chinese character in any
// request, event or file.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode"

	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/claude/claudetest"
	"github.com/flowerrun/flower/doc"
	"github.com/flowerrun/flower/event"
	"github.com/flowerrun/flower/guard"
	"github.com/flowerrun/flower/store"
	"github.com/flowerrun/flower/workbench"
)

// hasHan reports a Chinese character or CJK punctuation (、。「」,:…).
func hasHan(s string) bool {
	for _, r := range s {
		if unicode.Is(unicode.Han, r) || (r >= 0x3000 && r <= 0x303f) || (r >= 0xff00 && r <= 0xffef) {
			return true
		}
	}
	return false
}

// stringsOf collects every string field of v, recursively, named by path.
func stringsOf(prefix string, v reflect.Value, out map[string]string) {
	switch v.Kind() {
	case reflect.String:
		out[prefix] = v.String()
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			stringsOf(prefix+"."+v.Type().Field(i).Name, v.Field(i), out)
		}
	case reflect.Slice, reflect.Array:
		for i := 0; i < v.Len(); i++ {
			stringsOf(fmt.Sprintf("%s[%d]", prefix, i), v.Index(i), out)
		}
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			stringsOf(prefix, v.Elem(), out)
		}
	}
}

// userTexts gathers what flower's packages can emit in lang: the tables
// (whole, by reflection, so a new field is checked the day it is added)
// and the texts the producers build from them.
func userTexts(t *testing.T, lang Lang) map[string]string {
	t.Helper()
	out := map[string]string{}
	stringsOf("runtime", reflect.ValueOf(textsFor(lang)), out)
	stringsOf("prompts", reflect.ValueOf(PromptsFor(lang)), out)
	stringsOf("guard", reflect.ValueOf(guard.TextsFor(lang)), out)
	stringsOf("workbench", reflect.ValueOf(workbench.TextsFor(lang)), out)

	p := HandoffPolicy{Window: 200_000}
	out["StopReason.generations"] = p.StopReason(lang, 8, 0)
	out["StopReason.degraded"] = p.StopReason(lang, 1, MaxDegradedInARow)
	r := Resilience{Lang: lang, MaxOfflineWait: 1, ProbeInterval: 1}
	out["OfflineNote"] = r.OfflineNote()
	out["OfflineNote.minutes"] = Resilience{Lang: lang}.OfflineNote()
	up := false
	r.Probe = func(context.Context, string, int) bool { v := up; up = true; return v }
	r.MaxOfflineWait = time.Minute
	var notes []string
	if err := r.waitOnline(context.Background(), "h", 1, func(s string) { notes = append(notes, s) }); err != nil || len(notes) != 2 {
		t.Fatalf("waitOnline: %v, %q", err, notes)
	}
	out["waitOnline.down"], out["waitOnline.back"] = notes[0], notes[1]
	out["MissingCredentialsError"] = (&MissingCredentialsError{UserEnv: "/home/u/.config/flower/.env", Lang: lang}).Error()
	env := Environment{Lang: lang, LookupEnv: func(k string) (string, bool) {
		if k == "ANTHROPIC_API_KEY" {
			return "sk-ant-0123456789", true
		}
		return "", false
	}}
	out["DescribeCredentials"] = strings.Join(env.DescribeCredentials(), "\n")
	if err := env.CheckCredentials(); err != nil {
		t.Fatal(err)
	}
	if err := (Environment{Lang: lang, LookupEnv: func(string) (string, bool) { return "", false }}).CheckCredentials(); err != nil {
		out["CheckCredentials"] = err.Error()
	}

	// The fallback error of an attempt that ended with nothing to say.
	res := NewStepResult("s")
	a := res.BeginAttempt()
	a.Lang = lang
	a.Fold(event.New(event.Result, "error", map[string]any{"is_error": true}))
	a.Finish(nil)
	out["Attempt.fallback"] = res.Error

	// The documents flower writes and feeds the successor.
	h := doc.Degraded(lang, "work", "build it", textsFor(lang).tooFull)
	out["Degraded.markdown"] = h.ToMarkdown(lang)
	out["Degraded.prompt"] = h.PromptBlock(lang)
	out["Handoff.missing"] = strings.Join(doc.ParseHandoff("").Missing(lang), "/")
	out["Brief.markdown"] = doc.ParseBrief("").ToMarkdown(lang)
	out["Goal.markdown"] = doc.ParseGoal("").ToMarkdown(lang)
	out["Verdict.markdown"] = doc.ParseVerdict("").ToMarkdown(lang)

	out["event.compaction"] = event.NormalizeIn(lang, mustParseMessage(t,
		`{"type":"system","subtype":"compact_boundary","session_id":"s","compact_metadata":{"trigger":"auto","pre_tokens":9,"post_tokens":1}}`))[0].Text
	rep := store.Report{Cleared: 1, Kept: 2, CharsSaved: 400, Expired: 1, SpillFailed: 1, APIErrorsDropped: 1,
		InterruptsNeutralized: 1, OrphansHealed: 1, DenialsDropped: 1}
	out["store.Report"] = rep.Text(string(lang))
	out["store.Report.empty"] = store.Report{}.Text(string(lang))
	out["OracleName"] = OracleName(lang)
	return out
}

func TestEveryUserTextSpeaksTheRunsLanguage(t *testing.T) {
	for name, text := range userTexts(t, English) {
		if strings.TrimSpace(text) == "" {
			t.Errorf("English %s is empty", name)
		}
		if hasHan(text) {
			t.Errorf("English %s has Chinese in it: %q", name, text)
		}
	}
	zh := userTexts(t, Chinese)
	for name, text := range zh {
		if strings.TrimSpace(text) == "" {
			t.Errorf("Chinese %s is empty", name)
		}
	}
	// The Chinese literals the seed gives, exactly.
	for name, want := range map[string]string{
		"runtime.retryWith":   "已打断,带着你的话续跑",
		"runtime.retryBare":   "已打断,继续跑",
		"runtime.tooFull":     "上下文已经装不下,连交接都跑不了一轮",
		"runtime.done":        "上下文满了,写交接换新会话(%s)",
		"runtime.writing":     "上下文 %s/%s —— 正在写交接…",
		"runtime.near":        "上下文 %s/%s · 还有约 %s 到换代",
		"OfflineNote.minutes": "网络在 60 分钟 内未恢复",
		"event.compaction":    "压缩(auto) 9 → 1 tokens",
	} {
		if zh[name] != want {
			t.Errorf("Chinese %s = %q, want the seed's %q", name, zh[name], want)
		}
	}
}

// TestRealEnglishRunHasNoChineseAnywhere runs a coordinator that dispatches
// a worker, fills its context, hands off, and whose successor fails once and
// is retried, all in English.
func TestRealEnglishRunHasNoChineseAnywhere(t *testing.T) {
	t.Parallel()
	handoffPrompt := PromptsFor(English).Handoff[:20]
	const englishHandoff = "## Doing now\nwiring the CLI\n## Decided\nGo\n## Dead ends\nnone\n## Next step\nwrite main.go\n## Scene\nmain.go"
	var failedOnce atomic.Bool
	srv := claudetest.NewServer(t, func(ctx context.Context, r *claudetest.Request) claudetest.Reply {
		switch {
		case r.Subagent && len(r.ToolResults()) == 0:
			return bashReply("echo worker")
		case r.Subagent:
			return claudetest.Say("Done: echoed. Evidence: the output. Open: nothing. Next: none.")
		case r.HasText(handoffPrompt):
			return claudetest.Say(englishHandoff)
		case r.HasText("wiring the CLI"): // the successor
			if failedOnce.CompareAndSwap(false, true) {
				return claudetest.Reply{Fault: claudetest.ServerError()}
			}
			return claudetest.Say("finished in English")
		case len(r.ToolResults()) == 0:
			return claudetest.NewReply(claudetest.ToolUse("", "Agent", map[string]any{
				"description": "echo", "prompt": "SUBAGENT:echo", "subagent_type": "coder", "run_in_background": false}))
		default:
			rep := claudetest.Say("the worker reported")
			rep.Usage = claudetest.Usage{InputTokens: 60_000, OutputTokens: 5}
			return rep
		}
	})
	ws := t.TempDir()
	rt := newTestRuntimeIn(t, ws, srv, WithLanguage(English), WithDefaultWorkbench(),
		WithHandoff(HandoffPolicy{Window: 100_000}), WithEnv(map[string]string{"CLAUDE_CODE_MAX_RETRIES": "0"}))
	lead := Coordinator("lead", "", map[string]claude.AgentDefinition{
		"coder": Worker("runs commands", "You run commands.", WithLang(English)),
	}, WithLang(English))
	var log eventLog
	res, err := rt.Run(runCtx(t), lead, "SCENARIO:english", RunOptions{OnEvent: log.add})
	if err != nil {
		t.Fatal(err)
	}
	if !res.OK || res.Text != "finished in English" || len(res.Retired) != 1 || res.Attempts != 2 || !res.Resumed {
		t.Fatalf("result = %+v (want a handoff and one retry)", res)
	}
	if len(log.of(event.Handoff, "done")) != 1 || len(log.of(event.Retry, "")) == 0 {
		t.Fatalf("handoff and retry events missing")
	}
	worked := false
	for i, r := range srv.Requests() {
		worked = worked || r.Subagent
		if hasHan(string(r.Body)) {
			t.Errorf("request %d has Chinese in it", i)
		}
	}
	if !worked {
		t.Error("the worker never ran")
	}
	for _, e := range log.evs {
		b, _ := json.Marshal(e)
		if hasHan(string(b)) {
			t.Errorf("event has Chinese in it: %s", b)
		}
	}
	for _, root := range []string{rt.RunDir(), rt.Workbench().Root()} {
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				t.Error(err)
			} else if bytes.IndexByte(b, 0) >= 0 {
				// sessions.db and its WAL: binary pages, whose bytes can
				// spell a CJK rune by chance; their entries are read below.
			} else if hasHan(string(b)) {
				t.Errorf("%s has Chinese in it: %s", p, hanContext(string(b)))
			}
			return nil
		})
	}
	for _, sid := range append(slices.Clone(res.Retired), res.SessionID) {
		entries, err := rt.Store().Load(runCtx(t), claude.SessionKey{ProjectKey: rt.ProjectKey(), SessionID: sid})
		if err != nil || len(entries) == 0 {
			t.Fatalf("stored session %s: %d entries, %v", sid, len(entries), err)
		}
		b, _ := json.Marshal(entries)
		if hasHan(string(b)) {
			t.Errorf("the stored session %s has Chinese in it: %s", sid, hanContext(string(b)))
		}
	}
	if _, err := os.Stat(filepath.Join(rt.Workbench().Notes(), "handoff-lead.md")); err != nil {
		t.Errorf("the English handoff file: %v", err)
	}
}

// hanContext shows where the first Chinese character of s is.
func hanContext(s string) string {
	for i, r := range s {
		if hasHan(string(r)) {
			return fmt.Sprintf("%q", s[max(0, i-80):min(len(s), i+80)])
		}
	}
	return ""
}

// TestEnglishResumeExpiresInEnglish: what an English run's store writes
// into a resumed history is English, the pointer note of an expired
// spilled glance included (it was the Chinese default).
func TestEnglishResumeExpiresInEnglish(t *testing.T) {
	rt, err := New(t.TempDir(), WithRunDir(t.TempDir()), WithLanguage(English),
		WithEnv(map[string]string{"ANTHROPIC_API_KEY": "sk-ant-fake"}))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	key := claude.SessionKey{ProjectKey: "p", SessionID: "0b9b3c2e-1d7e-4b8e-9b1a-2f6a8c0d4e11"}
	var entries []json.RawMessage
	parent := any(nil)
	add := func(uuid, typ string, message any) {
		e, _ := json.Marshal(map[string]any{"type": typ, "uuid": uuid, "parentUuid": parent, "sessionId": key.SessionID,
			"timestamp": "2026-12-01T10:00:00.000Z", "cwd": "/w", "message": message})
		entries, parent = append(entries, e), uuid
	}
	call := func(i int, cmd, output string) {
		id := fmt.Sprintf("toolu_%d", i)
		add(fmt.Sprintf("a%d", i), "assistant", map[string]any{"role": "assistant", "content": []any{
			map[string]any{"type": "tool_use", "id": id, "name": "Bash", "input": map[string]any{"command": cmd}}}})
		add(fmt.Sprintf("r%d", i), "user", map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "tool_result", "tool_use_id": id, "content": output}}})
	}
	add("u0", "user", map[string]any{"role": "user", "content": "look around"})
	call(0, "cat src/a.go", "[Output of 9000 chars saved to .flower/spill/0123456789abcdef.txt: Read it for all, Grep to search]\nFirst 400 chars: package a")
	for i := 1; i <= 7; i++ {
		call(i, "git status", "clean")
	}
	ctx := t.Context()
	if err := rt.Store().Append(ctx, key, entries); err != nil {
		t.Fatal(err)
	}
	loaded, err := rt.Store().Load(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	var expired string
	for _, e := range loaded {
		if s := string(e); strings.Contains(s, "expired (") && strings.Contains(s, "0123456789abcdef") {
			expired = s
		}
	}
	if expired == "" || hasHan(expired) || !strings.Contains(expired, "(its output then is in .flower/spill/0123456789abcdef.txt)") {
		t.Errorf("the expired spilled glance reads %s; want English naming its spill file", expired)
	}
}
