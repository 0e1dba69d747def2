package store

import (
	"bytes"
	"reflect"
	"regexp"
	"testing"
)

// fxFull holds one of everything the layers act on: a bulky Read
// result, an ephemeral result, an API error between two turns, an interrupted
// result, three permission denials and an orphan tool_use at the end.
func fxFull() *fxTranscript {
	var f fxTranscript
	f.prompt("u0", "build the thing")
	f.read("a0", "toolu_0", "/work/ws/main.go")
	f.result("r0", "toolu_0", layerBigText("main.go", 3000), false)
	f.bash("a1", "toolu_1", "git status")
	f.result("r1", "toolu_1", "On branch main\nnothing to commit", false)
	f.text("a2", "Let me think.")
	f.apiError("e0")
	f.prompt("u1", "go on")
	f.bash("a3", "toolu_3", "go test ./...")
	f.result("r3", "toolu_3", "[Request interrupted by user for tool use]", true)
	for _, id := range []string{"4", "5", "6"} {
		f.bash("a"+id, "toolu_"+id, "rm -rf build")
		f.denial("d"+id, "toolu_"+id)
	}
	f.bash("a7", "toolu_7", "make build")
	return &f
}

func TestPruneDropsAPIErrorsAndRelinks(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(e map[string]any)
	}{
		{"isApiErrorMessage and <synthetic>", func(map[string]any) {}},
		{"isApiErrorMessage alone", func(e map[string]any) { e["message"].(map[string]any)["model"] = "claude-opus-5-5" }},
		{"<synthetic> alone", func(e map[string]any) { delete(e, "isApiErrorMessage") }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var f fxTranscript
			f.prompt("u0", "hi")
			f.text("a0", "working")
			tc.mutate(f.apiError("e0"))
			f.prompt("u1", "again")
			s := mustPruning(t, fxStore(t, f.rows(t)), t.TempDir(), TrimPolicy{}, PrunePolicy{}, EphemeralPolicy{})
			es := layerDecode(t, layerLoad(t, s, fxKey))
			if got := layerUUIDs(es); !reflect.DeepEqual(got, []string{"u0", "a0", "u1"}) {
				t.Fatalf("entries = %v, want the API error gone", got)
			}
			if p := layerEntry(t, es, "u1")["parentUuid"]; p != "a0" {
				t.Errorf("u1.parentUuid = %v, want a0 (its grandparent)", p)
			}
			if got := s.TrimReport(); got != "删掉 1 条 API 错误消息" {
				t.Errorf("TrimReport = %q", got)
			}
		})
	}
}

func TestPruneNeutralizesInterrupts(t *testing.T) {
	tests := []struct {
		name    string
		content any
		isErr   bool
		want    bool
	}{
		{"string content", "[Request interrupted by user for tool use]", true, true},
		{"text blocks", []any{map[string]any{"type": "text", "text": "[Request interrupted by user]"}}, true, true},
		{"not an error", "[Request interrupted by user for tool use]", false, false},
		{"another error", "exit status 1", true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var f fxTranscript
			f.bash("a0", "toolu_0", "go test ./...")
			f.result("r0", "toolu_0", tc.content, tc.isErr)
			rows := f.rows(t)
			s := mustPruning(t, fxStore(t, rows), t.TempDir(), TrimPolicy{}, PrunePolicy{}, EphemeralPolicy{})
			out := layerLoad(t, s, fxKey)
			if !tc.want {
				if !bytes.Equal(out[1], rows[1]) || s.LastReport().InterruptsNeutralized != 0 {
					t.Errorf("result changed: %s", out[1])
				}
				return
			}
			es := layerDecode(t, out)
			b := layerResult(t, es, "r0")
			want := map[string]any{"tool_use_id": "toolu_0", "type": "tool_result", "content": DefaultInterruptText, "is_error": false}
			if !reflect.DeepEqual(b, want) {
				t.Errorf("block = %v, want %v", b, want)
			}
			if _, ok := layerEntry(t, es, "r0")["toolUseResult"]; !ok {
				t.Error("toolUseResult was removed from a neutralized entry")
			}
			if got := s.LastReport().InterruptsNeutralized; got != 1 {
				t.Errorf("InterruptsNeutralized = %d", got)
			}
		})
	}
}

var layerUUIDv5 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestPruneHealsOrphans(t *testing.T) {
	t.Run("with a child", func(t *testing.T) {
		var f fxTranscript
		f.prompt("u0", "build")
		f.bash("a0", "toolu_0", "make build")
		f.prompt("u1", "what happened?")
		base := fxStore(t, f.rows(t))
		s := mustPruning(t, base, t.TempDir(), TrimPolicy{}, PrunePolicy{}, EphemeralPolicy{})
		out := layerLoad(t, s, fxKey)
		es := layerDecode(t, out)
		if len(es) != 4 || es[1]["uuid"] != "a0" || es[3]["uuid"] != "u1" {
			t.Fatalf("entries = %v, want u0 a0 <heal> u1", layerUUIDs(es))
		}
		h := es[2]
		hid, _ := h["uuid"].(string)
		if !layerUUIDv5.MatchString(hid) {
			t.Errorf("heal uuid %q is not a UUID", hid)
		}
		if h["parentUuid"] != "a0" || es[3]["parentUuid"] != hid {
			t.Errorf("chain = a0 <- %v (%v) <- u1 (%v)", hid, h["parentUuid"], es[3]["parentUuid"])
		}
		if h["type"] != "user" || h["sessionId"] != fxKey.SessionID || h["isSidechain"] != false {
			t.Errorf("heal entry envelope = %v", h)
		}
		want := []map[string]any{{"type": "tool_result", "tool_use_id": "toolu_0", "content": DefaultOrphanText, "is_error": false}}
		if got := layerBlocks(h); !reflect.DeepEqual(got, want) {
			t.Errorf("heal content = %v, want %v", got, want)
		}
		again := layerLoad(t, s, fxKey)
		if !bytes.Equal(again[2], out[2]) {
			t.Errorf("a second load inserted a different entry:\n%s\n%s", again[2], out[2])
		}
		if got := s.TrimReport(); got != "补上 1 个缺失的工具结果" {
			t.Errorf("TrimReport = %q", got)
		}
	})
	t.Run("at the end, custom text", func(t *testing.T) {
		var f fxTranscript
		f.bash("a0", "toolu_0", "make build")
		s := mustPruning(t, fxStore(t, f.rows(t)), t.TempDir(), TrimPolicy{}, PrunePolicy{OrphanText: "cut off"}, EphemeralPolicy{})
		es := layerDecode(t, layerLoad(t, s, fxKey))
		if len(es) != 2 || es[1]["parentUuid"] != "a0" || layerBlocks(es[1])[0]["content"] != "cut off" {
			t.Errorf("entries = %v", es)
		}
	})
	t.Run("parallel calls, the second unanswered", func(t *testing.T) {
		var f fxTranscript
		f.bash("a0", "toolu_0", "make a")
		f.bash("a1", "toolu_1", "make b")
		f.result("r0", "toolu_0", "done", false)
		s := mustPruning(t, fxStore(t, f.rows(t)), t.TempDir(), TrimPolicy{}, PrunePolicy{}, EphemeralPolicy{})
		es := layerDecode(t, layerLoad(t, s, fxKey))
		if len(es) != 4 || es[2]["parentUuid"] != "a1" || es[3]["uuid"] != "r0" || es[3]["parentUuid"] != es[2]["uuid"] {
			t.Fatalf("entries = %v", es)
		}
		if layerBlocks(es[2])[0]["tool_use_id"] != "toolu_1" {
			t.Errorf("healed the wrong call: %v", layerBlocks(es[2]))
		}
	})
	t.Run("a result before the call does not count", func(t *testing.T) {
		var f fxTranscript
		f.result("r0", "toolu_0", "stale", false)
		f.bash("a0", "toolu_0", "make a")
		s := mustPruning(t, fxStore(t, f.rows(t)), t.TempDir(), TrimPolicy{}, PrunePolicy{}, EphemeralPolicy{})
		es := layerDecode(t, layerLoad(t, s, fxKey))
		if len(es) != 3 || es[2]["parentUuid"] != "a0" || s.LastReport().OrphansHealed != 1 {
			t.Errorf("entries = %v, report %+v", layerUUIDs(es), s.LastReport())
		}
	})
	t.Run("a result that comes later is enough", func(t *testing.T) {
		var f fxTranscript
		f.bash("a0", "toolu_0", "make a")
		f.prompt("u0", "meanwhile")
		f.result("r0", "toolu_0", "done", false)
		rows := f.rows(t)
		s := mustPruning(t, fxStore(t, rows), t.TempDir(), TrimPolicy{}, PrunePolicy{}, EphemeralPolicy{})
		if out := layerLoad(t, s, fxKey); len(out) != len(rows) || s.LastReport().OrphansHealed != 0 {
			t.Errorf("healed a call that has a result: %+v", s.LastReport())
		}
	})
}

// fxDenials: three permission denials; the first call shares its
// message with a text block, the first denial carries a text block too, and
// an assistant reply hangs below the second denial.
func fxDenials() *fxTranscript {
	var f fxTranscript
	f.prompt("u0", "clean up")
	f.assistant("a0",
		map[string]any{"type": "text", "text": "I will clean up."},
		fxToolUseBlock("toolu_0", "Bash", map[string]any{"command": "rm -rf build"}))
	d0 := f.denial("d0", "toolu_0")
	d0["message"].(map[string]any)["content"] = append(d0["message"].(map[string]any)["content"].([]any),
		map[string]any{"type": "text", "text": "Use the build script instead."})
	f.bash("a1", "toolu_1", "rm -rf dist")
	f.denial("d1", "toolu_1")
	f.text("a1b", "Denied again.")
	f.bash("a2", "toolu_2", "rm -rf out")
	f.denial("d2", "toolu_2")
	f.prompt("u3", "stop deleting")
	return &f
}

func TestPruneKeepsTheNewestDenials(t *testing.T) {
	f := fxDenials()
	rows := f.rows(t)
	s := mustPruning(t, fxStore(t, rows), t.TempDir(), TrimPolicy{}, PrunePolicy{}, EphemeralPolicy{})
	out := layerLoad(t, s, fxKey)
	es := layerDecode(t, out)
	if got, want := layerUUIDs(es), []string{"u0", "a0", "d0", "a1b", "a2", "d2", "u3"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("entries = %v, want %v", got, want)
	}
	if got := layerBlocks(layerEntry(t, es, "a0")); len(got) != 1 || got[0]["type"] != "text" {
		t.Errorf("a0 blocks = %v, want only its text", got)
	}
	d0 := layerEntry(t, es, "d0")
	if got := layerBlocks(d0); len(got) != 1 || got[0]["type"] != "text" {
		t.Errorf("d0 blocks = %v, want only its text", got)
	}
	if _, ok := d0["toolUseResult"]; ok {
		t.Error("d0 kept its toolUseResult")
	}
	if p := layerEntry(t, es, "a1b")["parentUuid"]; p != "d0" {
		t.Errorf("a1b.parentUuid = %v, want d0 (past the dropped d1 and a1)", p)
	}
	for _, u := range []string{"a2", "d2", "u3"} {
		if !bytes.Equal(out[layerIndex(es, u)], rows[layerIndex(layerDecode(t, rows), u)]) {
			t.Errorf("%s changed", u)
		}
	}
	if got := s.TrimReport(); got != "删掉 2 个旧的权限拒绝" {
		t.Errorf("TrimReport = %q", got)
	}

	counts := []struct {
		policy PrunePolicy
		want   int
	}{
		{PrunePolicy{KeepDenials: 2}, 1},
		{PrunePolicy{KeepDenials: -1}, 3},
		{PrunePolicy{KeepDenials: 5}, 0},
		{PrunePolicy{KeepAllDenials: true}, 0},
	}
	for _, c := range counts {
		s := mustPruning(t, fxStore(t, rows), t.TempDir(), TrimPolicy{}, c.policy, EphemeralPolicy{})
		layerLoad(t, s, fxKey)
		if got := s.LastReport().DenialsDropped; got != c.want {
			t.Errorf("%+v: dropped %d, want %d", c.policy, got, c.want)
		}
	}
}

func TestPruneCountsOnlyPermissionRuleDenials(t *testing.T) {
	f := fxDenials()
	f.entries[4]["toolDenialKind"] = "user-rejected" // d1
	rows := f.rows(t)
	s := mustPruning(t, fxStore(t, rows), t.TempDir(), TrimPolicy{}, PrunePolicy{}, EphemeralPolicy{})
	es := layerDecode(t, layerLoad(t, s, fxKey))
	if !layerHas(es, "d1") || !layerHas(es, "a1") || len(layerBlocks(layerEntry(t, es, "a0"))) != 1 {
		t.Errorf("entries = %v: d1 (user-rejected) must stay, d0's call must go", layerUUIDs(es))
	}
	if got := s.LastReport().DenialsDropped; got != 1 {
		t.Errorf("dropped %d, want 1", got)
	}
}

func layerIndex(es []map[string]any, uuid string) int {
	for i, e := range es {
		if e["uuid"] == uuid {
			return i
		}
	}
	return -1
}

func TestPruneRelinksMidChainDrops(t *testing.T) {
	var f fxTranscript
	f.apiError("e0") // a dropped root
	f.prompt("u0", "hi")
	f.text("a0", "working")
	f.apiError("e1")
	f.apiError("e2")
	f.prompt("u1", "again")
	side := f.prompt("u2", "a branch off e1")
	side["parentUuid"] = "e1"
	s := mustPruning(t, fxStore(t, f.rows(t)), t.TempDir(), TrimPolicy{}, PrunePolicy{}, EphemeralPolicy{})
	es := layerDecode(t, layerLoad(t, s, fxKey))
	want := map[string]any{"u0": nil, "a0": "u0", "u1": "a0", "u2": "a0"}
	if len(es) != len(want) {
		t.Fatalf("entries = %v", layerUUIDs(es))
	}
	for u, p := range want {
		if got := layerEntry(t, es, u)["parentUuid"]; got != p {
			t.Errorf("%s.parentUuid = %v, want %v", u, got, p)
		}
	}
	if s.LastReport().APIErrorsDropped != 3 {
		t.Errorf("report = %+v", s.LastReport())
	}
}

func TestPruneSwitchesDisableOnlyTheirPart(t *testing.T) {
	rows := fxFull().rows(t)
	full := Report{APIErrorsDropped: 1, InterruptsNeutralized: 1, OrphansHealed: 1, DenialsDropped: 2}
	tests := []struct {
		name   string
		policy PrunePolicy
		want   Report
	}{
		{"defaults", PrunePolicy{}, full},
		{"KeepAPIErrors", PrunePolicy{KeepAPIErrors: true}, Report{InterruptsNeutralized: 1, OrphansHealed: 1, DenialsDropped: 2}},
		{"KeepInterrupts", PrunePolicy{KeepInterrupts: true}, Report{APIErrorsDropped: 1, OrphansHealed: 1, DenialsDropped: 2}},
		{"KeepOrphans", PrunePolicy{KeepOrphans: true}, Report{APIErrorsDropped: 1, InterruptsNeutralized: 1, DenialsDropped: 2}},
		{"KeepAllDenials", PrunePolicy{KeepAllDenials: true}, Report{APIErrorsDropped: 1, InterruptsNeutralized: 1, OrphansHealed: 1}},
		{"Disabled", PrunePolicy{Disabled: true}, Report{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := mustPruning(t, fxStore(t, rows), t.TempDir(), TrimPolicy{KeepRecent: -1}, tc.policy, EphemeralPolicy{KeepRecent: -1})
			out := layerLoad(t, s, fxKey)
			got := s.LastReport()
			if got.Cleared != 1 || got.Expired != 1 {
				t.Errorf("a prune switch changed trimming or expiry: %+v", got)
			}
			got.Cleared, got.Expired, got.Kept, got.CharsSaved = 0, 0, 0, 0
			if got != tc.want {
				t.Errorf("report = %+v, want %+v", got, tc.want)
			}
			es := layerDecode(t, out)
			if layerHas(es, "e0") != tc.policy.KeepAPIErrors && !tc.policy.Disabled {
				t.Errorf("e0 present = %v", layerHas(es, "e0"))
			}
			interrupted := layerResult(t, es, "r3")["is_error"] == true
			if interrupted != (tc.policy.KeepInterrupts || tc.policy.Disabled) {
				t.Errorf("r3 is_error = %v", interrupted)
			}
		})
	}
}

func TestPruneNeverTouchesProtectedEntries(t *testing.T) {
	var f fxTranscript
	f.prompt("u0", "hi")
	metaErr := f.apiError("e0")
	metaErr["isMeta"] = true
	f.bash("a0", "toolu_0", "go test ./...")
	compact := f.result("c0", "toolu_0", "[Request interrupted by user for tool use]", true)
	compact["isCompactSummary"] = true
	f.bash("a1", "toolu_1", "rm -rf x")
	f.denial("d1", "toolu_1")["isMeta"] = true
	f.bash("a2", "toolu_2", "rm -rf y")
	f.denial("d2", "toolu_2")
	rows := f.rows(t)
	s := mustPruning(t, fxStore(t, rows), t.TempDir(), TrimPolicy{}, PrunePolicy{KeepDenials: -1}, EphemeralPolicy{})
	out := layerLoad(t, s, fxKey)
	es := layerDecode(t, out)
	for _, u := range []string{"e0", "c0", "d1", "a1"} {
		i := layerIndex(es, u)
		if i < 0 || !bytes.Equal(out[i], rows[layerIndex(layerDecode(t, rows), u)]) {
			t.Errorf("protected entry %s (or the call of a protected denial) changed or vanished", u)
		}
	}
	if layerHas(es, "d2") || layerHas(es, "a2") {
		t.Errorf("the unprotected denial stayed: %v", layerUUIDs(es))
	}
}

func TestPruneRelinksAProtectedChildOfADroppedEntry(t *testing.T) {
	var f fxTranscript
	f.prompt("u0", "hi")
	f.apiError("e0")
	meta := f.prompt("m0", "<local-command-caveat>…</local-command-caveat>")
	meta["isMeta"] = true
	rows := f.rows(t)
	s := mustPruning(t, fxStore(t, rows), t.TempDir(), TrimPolicy{}, PrunePolicy{}, EphemeralPolicy{})
	es := layerDecode(t, layerLoad(t, s, fxKey))
	m := layerEntry(t, es, "m0")
	if m["parentUuid"] != "u0" {
		t.Errorf("m0.parentUuid = %v, want u0", m["parentUuid"])
	}
	orig := layerEntry(t, layerDecode(t, rows), "m0")
	if !reflect.DeepEqual(m["message"], orig["message"]) {
		t.Errorf("m0's content changed")
	}
}

func TestPruningForwardsItsPolicies(t *testing.T) {
	s := mustPruning(t, newLayerMemStore(), t.TempDir(), TrimPolicy{}, PrunePolicy{KeepDenials: 3}, EphemeralPolicy{})
	if got := s.PrunePolicy(); got.KeepDenials != 3 || got.OrphanText != DefaultOrphanText {
		t.Errorf("PrunePolicy() = %+v", got)
	}
	if s.TrimPolicy() != DefaultTrimPolicy() || s.EphemeralPolicy() != DefaultEphemeralPolicy() {
		t.Errorf("policies = %+v %+v", s.TrimPolicy(), s.EphemeralPolicy())
	}
}

// CLI 2.1.3xx words an interrupted result as a refusal ("STOP … wait for the
// user") and puts the "[Request interrupted …]" marker in a later user
// entry, past an attachment.
func TestPruneNeutralizesInterruptsMarkedByALaterEntry(t *testing.T) {
	for _, marked := range []bool{true, false} {
		t.Run(map[bool]string{true: "marked", false: "a plain refusal"}[marked], func(t *testing.T) {
			var f fxTranscript
			f.bash("a0", "toolu_0", "make test")
			f.result("r0", "toolu_0", "The user doesn't want to proceed with this tool use. STOP what you are doing and wait for the user.", true)
			f.add(f.envelope("attachment", "att0"))
			if marked {
				f.prompt("m0", "[Request interrupted by user for tool use]")
			}
			s := mustPruning(t, fxStore(t, f.rows(t)), t.TempDir(), TrimPolicy{}, PrunePolicy{}, EphemeralPolicy{})
			es := layerDecode(t, layerLoad(t, s, fxKey))
			b := layerResult(t, es, "r0")
			if got := b["content"] == DefaultInterruptText; got != marked {
				t.Errorf("neutralized = %v, want %v (block %v)", got, marked, b)
			}
			if marked && layerEntry(t, es, "m0") == nil {
				t.Error("the marker entry itself must stay")
			}
		})
	}
}
