package judge

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/flowerrun/flower/doc"
)

var testItems = []Item{
	{ID: "c1", Text: "run go test ./..., all pass", Command: "go test ./..."},
	{ID: "c2", Text: "README names the flag"},
}

func reply(t *testing.T, s string) *Reply {
	t.Helper()
	r, err := ParseReply(json.RawMessage(s))
	if err != nil {
		t.Fatalf("ParseReply(%s): %v", s, err)
	}
	return r
}

func TestDecideTakesTheItemsNotTheConclusion(t *testing.T) {
	pass := `{"id":"c1","status":"passed","evidence":"go test ./... exit 0","reason":"ok"}`
	pass2 := `{"id":"c2","status":"passed","evidence":"README.md:12","reason":"ok"}`
	cases := []struct {
		name, reply string
		ms          []Measurement
		want        doc.State
		problem     string // a problem the person is told, "" for none
	}{
		{"every item passed with evidence", `{"items":[` + pass + `,` + pass2 + `],"conclusion":"achieved","reason":"all pass"}`, nil, doc.Achieved, ""},
		{"achieved while an item failed", `{"items":[` + pass + `,{"id":"c2","status":"failed","evidence":"README.md has no flag","reason":"missing"}],"conclusion":"achieved","reason":"close enough"}`, nil, doc.NotYet, "not every item passed"},
		{"achieved with an item missing", `{"items":[` + pass + `],"conclusion":"achieved","reason":"ok"}`, nil, doc.NotYet, "item c2 was not judged"},
		{"achieved with an item not run", `{"items":[` + pass + `,{"id":"c2","status":"not_run","evidence":"","reason":"item 2 not run this round"}],"conclusion":"achieved","reason":"ok"}`, nil, doc.NotYet, "not every item passed"},
		{"a pass without evidence", `{"items":[` + pass + `,{"id":"c2","status":"passed","evidence":"  ","reason":"trust me"}],"conclusion":"achieved","reason":"ok"}`, nil, doc.NotYet, "item c2 was passed without evidence"},
		{"ids the checklist lacks", `{"items":[` + pass + `,` + pass2 + `,{"id":"c9","status":"passed","evidence":"x","reason":"x"}],"conclusion":"achieved","reason":"ok"}`, nil, doc.NotYet, "c9"},
		{"an item judged twice", `{"items":[` + pass + `,{"id":"c2","status":"failed","evidence":"x","reason":"no"},` + pass2 + `],"conclusion":"not_yet","reason":"no"}`, nil, doc.NotYet, "item c2 was judged more than once"},
		{"a pass flower's measurement contradicts", `{"items":[` + pass + `,` + pass2 + `],"conclusion":"achieved","reason":"the log says ok"}`,
			[]Measurement{{Item: testItems[0], Exit: 1, Tail: "FAIL"}}, doc.NotYet, "flower ran `go test ./...` itself: Exit status: 1"},
		// Not the work's failure, but not a pass either: the output that says
		// so is the work's to forge.
		{"a failure for want of the network is not a pass", `{"items":[` + pass + `,` + pass2 + `],"conclusion":"achieved","reason":"ok"}`,
			[]Measurement{{Item: testItems[0], Exit: 1, Environment: "network"}}, doc.NotYet, "a failure. Its output reads like a want of the network (--check-network lets flower's measurement use it); that is the command's own output, not flower's finding, and it does not excuse the item"},
		{"no measurement on a machine without a sandbox", `{"items":[` + pass + `,` + pass2 + `],"conclusion":"achieved","reason":"ok"}`,
			[]Measurement{{Item: testItems[0], Exit: -1, Err: "no bubblewrap", Unmeasurable: true}}, doc.Achieved, ""},
		{"a measurement that could not run where one can", `{"items":[` + pass + `,` + pass2 + `],"conclusion":"achieved","reason":"ok"}`,
			[]Measurement{{Item: testItems[0], Exit: -1, Err: "flower was stopped before its turn"}}, doc.NotYet, "which flower could not run itself"},
		{"a measurement that passed", `{"items":[` + pass + `,` + pass2 + `],"conclusion":"achieved","reason":"ok"}`,
			[]Measurement{{Item: testItems[0], Exit: 0}}, doc.Achieved, ""},
		{"not yet though every item passed", `{"items":[` + pass + `,` + pass2 + `],"conclusion":"not_yet","reason":"the docs are thin"}`, nil, doc.NotYet, ""},
		{"unreachable with its grounds", `{"items":[{"id":"c1","status":"not_run","evidence":"uname: Linux","reason":"needs macOS"},` + pass2 + `],"conclusion":"unreachable","reason":"macOS only","missing":"a macOS machine","why_no_work":"the work cannot change the platform"}`, nil, doc.Unreachable, ""},
		{"unreachable without naming what is missing", `{"items":[{"id":"c1","status":"failed","evidence":"go vet: unreachable code","reason":"vet"},` + pass2 + `],"conclusion":"unreachable","reason":"go vet reports unreachable code"}`, nil, doc.NotYet, "without naming what is missing"},
		{"unreachable with a missing thing but no why", `{"items":[],"conclusion":"unreachable","reason":"x","missing":"the dependency"}`, nil, doc.NotYet, "without naming what is missing"},
	}
	for _, lang := range []doc.Lang{doc.English, doc.Chinese} {
		for _, tc := range cases {
			t.Run(string(lang)+"/"+tc.name, func(t *testing.T) {
				d := Decide(testItems, tc.ms, reply(t, tc.reply), lang)
				if d.State != tc.want || d.Verdict.State != tc.want {
					t.Fatalf("state %q (document %q), want %q; problems %q", d.State, d.Verdict.State, tc.want, d.Problems)
				}
				if d.Passed() != (tc.want == doc.Achieved) {
					t.Errorf("Passed() = %v", d.Passed())
				}
				if tc.problem == "" {
					if len(d.Problems) > 0 {
						t.Errorf("problems %q, want none", d.Problems)
					}
					return
				}
				if len(d.Problems) == 0 {
					t.Fatal("no problem told, want one")
				}
				if lang.IsEnglish() && !strings.Contains(strings.Join(d.Problems, "\n"), tc.problem) {
					t.Errorf("problems %q, want one saying %q", d.Problems, tc.problem)
				}
				if !strings.Contains(d.Verdict.Reason, d.Problems[0]) {
					t.Errorf("the verdict's reason does not carry the problem to the worker:\n%s", d.Verdict.Reason)
				}
			})
		}
	}
}

func TestDecideSaysAchievedNotMeasuredWhereNoCommandRan(t *testing.T) {
	// A command item passes on flower's own run; where none could be made
	// (no sandbox, a caller that measures nothing), an achieved round is
	// "achieved, not measured", naming the items and why, in the reason
	// the person and the next round read.
	all := `{"items":[{"id":"c1","status":"passed","evidence":"go test ./... exit 0","reason":"ok"},{"id":"c2","status":"passed","evidence":"README.md:12","reason":"ok"}],"conclusion":"achieved","reason":"all pass"}`
	notYet := `{"items":[{"id":"c1","status":"passed","evidence":"exit 0","reason":"ok"},{"id":"c2","status":"failed","evidence":"README.md has no flag","reason":"missing"}],"conclusion":"not_yet","reason":"the README"}`
	noSandbox := []Measurement{{Item: testItems[0], Exit: -1, Err: "bubblewrap (bwrap) is not installed", Unmeasurable: true}}
	cases := []struct {
		name       string
		reply      string
		ms         []Measurement
		unmeasured []string
		why        string
	}{
		{"no sandbox on this machine", all, noSandbox, []string{"c1"}, "bubblewrap (bwrap) is not installed"},
		{"a caller that measures nothing", all, nil, []string{"c1"}, "its caller gave no measurement"},
		{"measured and passed", all, []Measurement{{Item: testItems[0], Exit: 0}}, nil, ""},
		{"not achieved: nothing to say of measurement", notYet, noSandbox, nil, ""},
	}
	head := map[doc.Lang]string{doc.English: "achieved, not measured: flower could not run the commands of c1 itself", doc.Chinese: "已达成,但没有测量:flower 没能自己运行判定项 c1 的命令"}
	for _, lang := range []doc.Lang{doc.English, doc.Chinese} {
		for _, tc := range cases {
			t.Run(string(lang)+"/"+tc.name, func(t *testing.T) {
				d := Decide(testItems, tc.ms, reply(t, tc.reply), lang)
				if !slices.Equal(d.Unmeasured, tc.unmeasured) || !slices.Equal(d.Verdict.Unmeasured, tc.unmeasured) {
					t.Fatalf("unmeasured %q (verdict %q), want %q", d.Unmeasured, d.Verdict.Unmeasured, tc.unmeasured)
				}
				said := strings.Contains(d.Verdict.Reason, head[lang])
				if said != (tc.unmeasured != nil) {
					t.Errorf("the reason says achieved, not measured: %v, want %v:\n%s", said, tc.unmeasured != nil, d.Verdict.Reason)
				}
				if tc.why != "" && lang.IsEnglish() && !strings.Contains(d.Verdict.Reason, tc.why) {
					t.Errorf("the reason does not say why nothing was measured (%q):\n%s", tc.why, d.Verdict.Reason)
				}
				if len(d.Problems) > 0 {
					t.Errorf("problems %q: not measuring is no fault of the judge's", d.Problems)
				}
			})
		}
	}
}

func TestDecideNeverAchievesAGoalWithoutItems(t *testing.T) {
	d := Decide(nil, nil, reply(t, `{"items":[],"conclusion":"achieved","reason":"nothing to check"}`), doc.English)
	if d.Passed() {
		t.Fatal("a goal without items was achieved")
	}
}

func TestTheVerdictDocumentIsRenderedInEachLanguage(t *testing.T) {
	r := `{"items":[{"id":"c1","status":"failed","evidence":"go test exit 1","reason":"TestX fails"},{"id":"c2","status":"passed","evidence":"README.md:3","reason":"ok"}],"conclusion":"not_yet","reason":"one test fails"}`
	done := `{"items":[{"id":"c1","status":"passed","evidence":"exit 0","reason":"ok"},{"id":"c2","status":"passed","evidence":"README.md:3","reason":"ok"}],"conclusion":"achieved","reason":"all pass"}`
	noWay := `{"items":[{"id":"c1","status":"not_run","evidence":"uname -a: Linux","reason":"macOS only"},{"id":"c2","status":"passed","evidence":"README.md:3","reason":"ok"}],"conclusion":"unreachable","reason":"needs macOS","missing":"a macOS machine","why_no_work":"the platform is not the work's"}`
	cases := []struct {
		lang  doc.Lang
		reply string
		want  []string
	}{
		{doc.English, r, []string{"## Conclusion\n\nnot yet", "## Reason\n\none test fails", "## Not passed\n\n- [c1] run go test ./..., all pass — TestX fails"}},
		{doc.Chinese, r, []string{"## 结论\n\n未达成", "## 理由\n\none test fails", "## 未通过\n\n- [c1] run go test ./..., all pass — TestX fails"}},
		{doc.English, done, []string{"## Conclusion\n\nachieved", "## Not passed\n\n(empty)"}},
		{doc.Chinese, done, []string{"## 结论\n\n已达成", "## 未通过\n\n(空)"}},
		{doc.English, noWay, []string{"## Conclusion\n\nunreachable", "Missing: a macOS machine", "Why no work can supply it: the platform is not the work's"}},
		{doc.Chinese, noWay, []string{"## 结论\n\n无法达成", "缺少:a macOS machine"}},
	}
	for _, tc := range cases {
		d := Decide(testItems, nil, reply(t, tc.reply), tc.lang)
		md := d.Verdict.ToMarkdown(tc.lang)
		for _, w := range tc.want {
			if !strings.Contains(md, w) {
				t.Errorf("%s: the document lacks %q:\n%s", tc.lang, w, md)
			}
		}
		// The document reads back as the state it was rendered from, so an
		// older reader of run files sees the same conclusion.
		if back := doc.ParseVerdict(md); back.State != d.State {
			t.Errorf("%s: the document reads back as %q, rendered from %q", tc.lang, back.State, d.State)
		}
	}
}

func TestParseReplyRefusesWhatTheSchemaRefuses(t *testing.T) {
	for name, raw := range map[string]string{
		"empty":                 ``,
		"null":                  `null`,
		"cut off":               `{"items":[{"id":"c1","status":"passed","evi`,
		"not an object":         `"achieved"`,
		"no items":              `{"conclusion":"achieved","reason":"x"}`,
		"no conclusion":         `{"items":[],"reason":"x"}`,
		"no reason":             `{"items":[],"conclusion":"achieved"}`,
		"a conclusion in words": `{"items":[],"conclusion":"Achieved*","reason":"x"}`,
		"a status in words":     `{"items":[{"id":"c1","status":"PASS","evidence":"x","reason":"x"}],"conclusion":"achieved","reason":"x"}`,
		"an item without an id": `{"items":[{"id":" ","status":"passed","evidence":"x","reason":"x"}],"conclusion":"achieved","reason":"x"}`,
		"an unknown field":      `{"items":[],"conclusion":"achieved","reason":"x","confidence":0.9}`,
		"two values":            `{"items":[],"conclusion":"not_yet","reason":"x"}{"items":[],"conclusion":"achieved","reason":"x"}`,
		"huge":                  `{"items":[],"conclusion":"not_yet","reason":"` + strings.Repeat("x", maxReplyBytes) + `"}`,
	} {
		if _, err := ParseReply(json.RawMessage(raw)); !errors.Is(err, ErrUnreadable) {
			t.Errorf("%s: err = %v, want ErrUnreadable", name, err)
		}
	}
}

func TestParseGoalReplyAndTheGoalFileKeepTheItems(t *testing.T) {
	raw := `{"statement":"a CLI that greets","checklist":[` +
		`{"id":"c1","text":"go test ./... passes","command":"go test ./..."},` +
		"{\"id\":\"c2\",\"text\":\"the greeting names the user\",\"command\":\"echo `whoami` | grep -q .\"}," +
		`{"id":"c3","text":"README explains it"},` +
		`{"id":"c4","text":"runs on macOS","unverifiable":"this machine is Linux [no Darwin kernel]"},` +
		`{"id":"c5","text":"the installer signs","command":"make sign","unverifiable":"no signing key here"}]}`
	g, err := ParseGoalReply(json.RawMessage(raw))
	if err != nil {
		t.Fatal(err)
	}
	for _, lang := range []doc.Lang{doc.English, doc.Chinese} {
		goal := g.Goal(lang)
		back := Items(doc.ParseGoal(goal.ToMarkdown(lang)))
		if len(back) != 5 {
			t.Fatalf("%s: %d items read back from\n%s", lang, len(back), goal.ToMarkdown(lang))
		}
		for i, want := range g.Checklist {
			// Every field: the round's judge reads the items back from
			// the goal file, so an item that loses its unverifiable tag
			// here is held against the goal forever.
			if back[i] != want {
				t.Errorf("%s: item %d read back as %+v, want %+v", lang, i, back[i], want)
			}
		}
		if u := doc.ParseGoal(goal.ToMarkdown(lang)).Unverifiable(); len(u) != 2 || !strings.Contains(u[0], "[c4]") {
			t.Errorf("%s: unverifiable items %q, want c4 and c5", lang, u)
		}
		if cmds := Commands(back); len(cmds) != 3 {
			t.Errorf("%s: commands %v, want c1 and c2", lang, cmds)
		}
	}
}

func TestAnOlderGoalFileGetsIdsByPositionAndNoCommands(t *testing.T) {
	g := doc.ParseGoal("## 目标\nhello\n\n## 判定清单\n- 运行 `cat hello.txt`,看到 hello\n- 运行 ls,看到 hello.txt")
	items := Items(g)
	if len(items) != 2 || items[0].ID != "c1" || items[1].ID != "c2" || items[0].Command != "" {
		t.Fatalf("items %+v", items)
	}
}

func TestParseGoalReplyRefusesBadGoals(t *testing.T) {
	many := make([]string, MaxItems+1)
	for i := range many {
		many[i] = `{"id":"c` + strings.Repeat("1", 1) + string(rune('a'+i%26)) + string(rune('a'+i/26)) + `","text":"x"}`
	}
	for name, raw := range map[string]string{
		"no statement":    `{"statement":" ","checklist":[{"id":"c1","text":"x"}]}`,
		"no items":        `{"statement":"x","checklist":[]}`,
		"a repeated id":   `{"statement":"x","checklist":[{"id":"c1","text":"x"},{"id":"c1","text":"y"}]}`,
		"an id with a ]":  `{"statement":"x","checklist":[{"id":"c]1","text":"x"}]}`,
		"an empty text":   `{"statement":"x","checklist":[{"id":"c1","text":" "}]}`,
		"a command split": `{"statement":"x","checklist":[{"id":"c1","text":"x","command":"make\nmake test"}]}`,
		"too many items":  `{"statement":"x","checklist":[` + strings.Join(many, ",") + `]}`,
		"cut off":         `{"statement":"x","checklist":[{"id":"c1"`,
	} {
		if _, err := ParseGoalReply(json.RawMessage(raw)); !errors.Is(err, ErrUnreadable) {
			t.Errorf("%s: err = %v, want ErrUnreadable", name, err)
		}
	}
}

func TestTheSchemasAreJSONSchemaObjects(t *testing.T) {
	for name, s := range map[string]json.RawMessage{"verdict": VerdictSchema, "goal": GoalSchema} {
		var v map[string]any
		if err := json.Unmarshal(s, &v); err != nil || v["type"] != "object" {
			t.Errorf("%s schema: %v %v", name, err, v["type"])
		}
	}
}

func TestEveryGoalCarriesTheInvariantOnce(t *testing.T) {
	for _, lang := range []doc.Lang{doc.English, doc.Chinese} {
		bare, err := ParseGoalReply(json.RawMessage(`{"statement":"a CLI that greets","checklist":[{"id":"c1","text":"x"}]}`))
		if err != nil {
			t.Fatal(err)
		}
		if s := bare.Goal(lang).Statement; !strings.HasSuffix(s, Invariant(lang)) {
			t.Errorf("%s: the statement lacks the invariant:\n%s", lang, s)
		}
		b, _ := json.Marshal(map[string]any{"statement": "a CLI that greets.\n" + Invariant(lang), "checklist": []map[string]string{{"id": "c1", "text": "x"}}})
		written, err := ParseGoalReply(b)
		if err != nil {
			t.Fatal(err)
		}
		if s := written.Goal(lang).Statement; strings.Count(s, Invariant(lang)) != 1 {
			t.Errorf("%s: the invariant is not there once:\n%s", lang, s)
		}
	}
}

// Decide's mechanical rules (issue 42, point 6): each case failed before
// (ended achieved, or unreachable) but the control.
func TestDecideMechanicalRules(t *testing.T) {
	items := []Item{
		{ID: "c1", Text: "go test passes", Command: "go test ./..."},
		{ID: "c2", Text: "README names the flag"},
	}
	unverifiable := []Item{items[0], {ID: "c2", Text: "runs on macOS", Unverifiable: "this is Linux"}}
	pass := `{"id":"c1","status":"passed","evidence":"go test ./... exit 0","reason":"ok"}`
	pass2 := `{"id":"c2","status":"passed","evidence":"README.md:12","reason":"ok"}`
	with := func(c2evidence string) string {
		b, _ := json.Marshal(c2evidence)
		return `{"items":[` + pass + `,{"id":"c2","status":"passed","evidence":` + string(b) + `,"reason":"ok"}],"conclusion":"achieved","reason":"ok"}`
	}
	measuredOK := []Measurement{{Item: items[0], Exit: 0}}
	stopped := []Measurement{{Item: items[0], Exit: -1, Err: "flower was stopped before its turn"}}
	cases := []struct {
		name    string
		items   []Item
		reply   string
		ms      []Measurement
		want    doc.State
		problem string
	}{
		{"the control: every item passed and measured", items, with("README.md:12"), measuredOK, doc.Achieved, ""},
		{"a duplicate id passed, then failed", items, `{"items":[` + pass + `,` + pass2 + `,{"id":"c2","status":"failed","evidence":"README.md has no flag","reason":"no"}],"conclusion":"achieved","reason":"ok"}`,
			measuredOK, doc.NotYet, "judged more than once"},
		{"evidence of a zero-width space only", items, with("\u200b"), measuredOK, doc.NotYet, "control or text-direction characters"},
		{"evidence of a byte-order mark only", items, with("\ufeff"), measuredOK, doc.NotYet, "control or text-direction characters"},
		{"evidence without a letter or digit", items, with("-- ... --"), measuredOK, doc.NotYet, "passed without evidence"},
		{"an RTL override turning FAIL around", items, with("README.md:12 \u202eLIAF"), measuredOK, doc.NotYet, "control or text-direction characters"},
		{"an escape sequence in evidence", items, with("README.md:12 \u001b[2K"), measuredOK, doc.NotYet, "control or text-direction characters"},
		{"an item marked unverifiable passed", unverifiable, with("README.md:12"), measuredOK, doc.Achieved, ""},
		{"an item marked unverifiable left out", unverifiable, `{"items":[` + pass + `],"conclusion":"achieved","reason":"ok"}`, measuredOK, doc.Achieved, ""},
		{"an item marked unverifiable beside a failure", unverifiable, `{"items":[{"id":"c1","status":"failed","evidence":"exit 1","reason":"x"}],"conclusion":"achieved","reason":"ok"}`,
			[]Measurement{{Item: items[0], Exit: 1}}, doc.NotYet, "not every item passed"},
		{"every item marked unverifiable", []Item{{ID: "c2", Text: "runs on macOS", Unverifiable: "this is Linux"}},
			`{"items":[{"id":"c2","status":"passed","evidence":"README.md:12","reason":"ok"}],"conclusion":"achieved","reason":"ok"}`, nil, doc.NotYet, "every item is marked unverifiable"},
		{"unreachable while every item passed", items, `{"items":[` + pass + `,` + pass2 + `],"conclusion":"unreachable","reason":"x","missing":"a Mac","why_no_work":"the platform"}`,
			measuredOK, doc.NotYet, "while nothing was run, or while every item passed"},
		{"unreachable while nothing was run", items, `{"items":[{"id":"c1","status":"not_run","evidence":"not run","reason":"x"},` + pass2 + `],"conclusion":"unreachable","reason":"x","missing":"a Mac","why_no_work":"the platform"}`,
			stopped, doc.NotYet, "while nothing was run"},
		{"the control: unreachable with a failure measured", items, `{"items":[{"id":"c1","status":"failed","evidence":"exit 1: needs darwin","reason":"x"},` + pass2 + `],"conclusion":"unreachable","reason":"x","missing":"a Mac","why_no_work":"the platform"}`,
			[]Measurement{{Item: items[0], Exit: 1, Tail: "needs darwin"}}, doc.Unreachable, ""},
		{"a command item flower could not run where it can", items, with("README.md:12"), stopped, doc.NotYet, "passes only on flower's own run"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(tc.items, tc.ms, reply(t, tc.reply), doc.English)
			if d.State != tc.want {
				t.Fatalf("state %q, want %q; problems %q", d.State, tc.want, d.Problems)
			}
			if got := strings.Join(d.Problems, "\n"); tc.problem != "" && !strings.Contains(got, tc.problem) {
				t.Errorf("problems %q, want one saying %q", d.Problems, tc.problem)
			}
			// An item marked unverifiable never passes: an achieved round
			// is "achieved, except" it, named with its reason.
			wantExcept := 0
			if d.State == doc.Achieved && tc.items[len(tc.items)-1].Unverifiable != "" {
				wantExcept = 1
			}
			if len(d.Except) != wantExcept || len(d.Verdict.Except) != wantExcept {
				t.Errorf("except %q (verdict %q), want %d", d.Except, d.Verdict.Except, wantExcept)
			}
			if wantExcept == 1 && (!strings.Contains(d.Except[0], "[c2] runs on macOS — this is Linux") ||
				!strings.Contains(d.Verdict.Reason, "achieved, except") || !strings.Contains(d.Verdict.Reason, "this is Linux")) {
				t.Errorf("except %q, reason %q: want the item, its reason and the words", d.Except, d.Verdict.Reason)
			}
			for _, r := range d.Verdict.Reason + strings.Join(d.Verdict.Failed, "") {
				if r == '\u202e' || r == '\u200b' || r == '\ufeff' || r == 0x1b {
					t.Errorf("the verdict keeps the character %U", r)
				}
			}
		})
	}
}

// The structured answer is read strictly (issue 42, point 6): a key twice
// in one object, or a schema's key in other letters, is refused (the
// judge is asked again) rather than read as encoding/json would (the
// last one wins; "Status" is "status").
func TestParseReplyRefusesDuplicateAndCaseFoldedKeys(t *testing.T) {
	for name, raw := range map[string]string{
		"a status twice":         `{"items":[{"id":"c1","status":"failed","status":"passed","evidence":"x","reason":"x"}],"conclusion":"not_yet","reason":"x"}`,
		"a conclusion twice":     `{"items":[],"conclusion":"not_yet","reason":"x","conclusion":"achieved"}`,
		"Status in capitals":     `{"items":[{"id":"c1","Status":"passed","evidence":"x","reason":"x"}],"conclusion":"not_yet","reason":"x"}`,
		"CONCLUSION in capitals": `{"items":[],"CONCLUSION":"achieved","reason":"x"}`,
	} {
		if _, err := ParseReply(json.RawMessage(raw)); !errors.Is(err, ErrUnreadable) {
			t.Errorf("%s: %v, want it refused as unreadable", name, err)
		}
	}
	if _, err := ParseGoalReply(json.RawMessage(`{"statement":"x","checklist":[{"id":"c1","text":"a","Text":"b"}]}`)); !errors.Is(err, ErrUnreadable) {
		t.Errorf("a goal with Text beside text: %v, want it refused", err)
	}
	// The control: the same answers spelt right are read.
	if _, err := ParseReply(json.RawMessage(`{"items":[{"id":"c1","status":"passed","evidence":"x","reason":"x"}],"conclusion":"not_yet","reason":"x"}`)); err != nil {
		t.Errorf("a well-formed answer: %v", err)
	}
}

func TestAFlaggedChangeHoldsAnAchievedRoundForThePerson(t *testing.T) {
	// The flags decide, not the judge: an achieved round with any flag
	// keeps them (each with its file and line) for the outcome, and its
	// reason lists them; a round not achieved is left as it is.
	all := `{"items":[{"id":"c1","status":"passed","evidence":"exit 0","reason":"ok"},{"id":"c2","status":"passed","evidence":"README.md:12","reason":"ok"}],"conclusion":"achieved","reason":"all pass"}`
	notYet := `{"items":[{"id":"c1","status":"passed","evidence":"exit 0","reason":"ok"},{"id":"c2","status":"failed","evidence":"no flag","reason":"missing"}],"conclusion":"not_yet","reason":"the README"}`
	flags := []Flag{{Kind: "test skipped", Where: "hello_test.go:12: t.Skip()"}, {Kind: "failure silenced: || true", Where: "check.sh:2: make test || true"}}
	ran := []Measurement{{Item: testItems[0], Exit: 0}}
	for _, lang := range []doc.Lang{doc.English, doc.Chinese} {
		d := Decide(testItems, ran, reply(t, all), lang)
		d.Flag(flags, lang)
		want := []string{"[test skipped] hello_test.go:12: t.Skip()", "[failure silenced: || true] check.sh:2: make test || true"}
		if !slices.Equal(d.Flags, want) || !slices.Equal(d.Verdict.Flags, want) {
			t.Errorf("%s: flags %q (verdict %q), want %q", lang, d.Flags, d.Verdict.Flags, want)
		}
		for _, w := range want {
			if !strings.Contains(d.Verdict.Reason, w) {
				t.Errorf("%s: the reason does not list %q:\n%s", lang, w, d.Verdict.Reason)
			}
		}
		d = Decide(testItems, ran, reply(t, all), lang)
		d.Flag(nil, lang)
		if d.Flags != nil || d.Verdict.Flags != nil || d.State != doc.Achieved {
			t.Errorf("%s: no flags, yet %q, state %q", lang, d.Flags, d.State)
		}
		d = Decide(testItems, ran, reply(t, notYet), lang)
		d.Flag(flags, lang)
		if d.Flags != nil || d.State != doc.NotYet {
			t.Errorf("%s: a round not achieved took flags %q (state %q)", lang, d.Flags, d.State)
		}
	}
}
