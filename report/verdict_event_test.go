package report

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flowerrun/flower"
)

// A judge now answers in structure: its step's text is whatever prose the
// model wrote beside the answer, and flower's decision is the verdict event
// the goal guard logs with the judge's label. The report shows the
// decision, never a reading of the prose.
func TestTheReportShowsFlowersDecisionNotTheJudgesProse(t *testing.T) {
	f := newFixture(t)
	at := func(s int) time.Time { return f.t0.Add(time.Duration(s) * time.Second) }
	rows := []flower.StepResult{
		{Step: "work", SessionID: "s-work", OK: true, CostUSD: 0.5, NumTurns: 2, Attempts: 1, StartedAt: at(20), EndedAt: at(200)},
		// The prose says achieved; the items said otherwise.
		{Step: "work·judge#1", SessionID: "s-judge", OK: true, CostUSD: 0.04, NumTurns: 1, Attempts: 1, StartedAt: at(210), EndedAt: at(220),
			Text: "## Conclusion\nachieved\n\nEverything looks good to me."},
	}
	if _, err := flower.WriteManifest(filepath.Join(f.runDir, flower.ManifestName), "run-1", rows); err != nil {
		t.Fatal(err)
	}
	ev, _ := json.Marshal(map[string]any{"run": "run-1", "step": "work", "kind": "verdict", "time": at(221),
		"text": "close enough\n\nflower found, reading the verdict:\n- item c2 was not judged",
		"payload": map[string]any{"step": "work", "round": 1, "rounds": 3, "state": "not_yet", "label": "work·judge#1",
			"failed": []string{"[c2] curl the staging API — not judged"}}})
	appendFile(t, filepath.Join(f.runDir, "events.jsonl"), string(ev)+"\n")
	r := gather(t, f.runDir)
	i := slices.IndexFunc(r.Verdicts, func(v Verdict) bool { return v.Step == "work·judge#1" })
	if i < 0 {
		t.Fatalf("verdicts %+v", r.Verdicts)
	}
	v := r.Verdicts[i]
	if v.State != "not_yet" || !slices.Equal(v.Failed, []string{"[c2] curl the staging API — not judged"}) || !strings.Contains(v.Reason, "item c2 was not judged") {
		t.Errorf("verdict %+v, want flower's decision (not_yet, c2 failed)", v)
	}
	if r.Outcome.State == Achieved {
		t.Errorf("the outcome is %q: the judge's prose was read", r.Outcome.State)
	}
	for _, m := range r.Timeline {
		if m.Kind == "verdict" && m.Step == "work·judge#1" && m.Text != "not_yet" {
			t.Errorf("the timeline says %q", m.Text)
		}
	}
}

// A round with no verdict event (flower recorded no decision: an older
// flower, a judge that failed) shows "no verdict": the judge's prose, even
// one that reads as a verdict document saying achieved, is never read for
// one (issue 42, point 7; 12 of 70 held-out prose verdicts were misread).
func TestARoundWithoutAVerdictEventShowsNoVerdict(t *testing.T) {
	f := newFixture(t)
	at := func(s int) time.Time { return f.t0.Add(time.Duration(s) * time.Second) }
	rows := []flower.StepResult{
		{Step: "work", SessionID: "s-work", OK: true, CostUSD: 0.5, NumTurns: 2, Attempts: 1, StartedAt: at(20), EndedAt: at(200)},
		{Step: "work·judge#1", SessionID: "s-judge", OK: true, CostUSD: 0.04, NumTurns: 1, Attempts: 1, StartedAt: at(210), EndedAt: at(220),
			Text: "## Conclusion\nachieved\n\n## Reason\nall pass\n\n## Not passed\n(none)"},
	}
	if _, err := flower.WriteManifest(filepath.Join(f.runDir, flower.ManifestName), "run-1", rows); err != nil {
		t.Fatal(err)
	}
	// The fixture's own events, its verdict event for this label among
	// them, go: this run logged no decision.
	b, err := os.ReadFile(filepath.Join(f.runDir, "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if !strings.Contains(line, `"kind":"verdict"`) {
			kept = append(kept, line)
		}
	}
	writeFile(t, filepath.Join(f.runDir, "events.jsonl"), strings.Join(kept, "\n")+"\n")
	r := gather(t, f.runDir)
	i := slices.IndexFunc(r.Verdicts, func(v Verdict) bool { return v.Step == "work·judge#1" })
	if i < 0 || r.Verdicts[i].State != "none" {
		t.Fatalf("verdicts %+v, want work·judge#1 with none", r.Verdicts)
	}
	if r.Outcome.State == Achieved || !r.Outcome.Unreadable {
		t.Errorf("the outcome %+v: the judge's prose was read", r.Outcome)
	}
	for _, lang := range []string{"en", "zh"} {
		r.Language = lang
		page := render(t, r)
		want := texts[lang]["state_none"]
		if !strings.Contains(section(page, "verdicts"), want) || !strings.Contains(section(page, "timeline"), want) {
			t.Errorf("%s: the verdicts and the timeline do not say %q", lang, want)
		}
	}
}
