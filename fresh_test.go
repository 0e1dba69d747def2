package flower

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
)

// A Fresh step starts a new session on every run: the lineage never
// carries a session into it, not even one an earlier version recorded,
// and never records its own.
func TestFakeAFreshStepIsNeverCarriedNorRemembered(t *testing.T) {
	t.Parallel()
	f := newFakeFlow(t)
	steps := []Step{
		{Name: "judge", Spec: wfSpec(), Prompt: Text("judge it"), Fresh: true},
		{Name: "work", Spec: wfSpec(), Prompt: Text("work on it"), ResumePrompt: Text("carry on")},
	}
	planted := ""
	for run := 1; run <= 2; run++ {
		wf := &Workflow{Steps: steps}
		c, err := wf.Run(runCtx(t), f.runtime(), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, failed := c.FailedAt(); failed {
			t.Fatalf("run %d failed", run)
		}
		if _, ok := c.Session("judge"); !ok {
			t.Errorf("run %d: the fresh step's session is missing from this run's ctx (ResumeFrom needs it)", run)
		}
		lin := OpenLineage(f.runDir, f.ws)
		if run == 1 {
			if keys := slices.Sorted(maps.Keys(lin.Steps())); !slices.Equal(keys, []string{"work"}) {
				t.Errorf("lineage steps = %v; a fresh step is never remembered", keys)
			}
			// As an earlier flower wrote it: the judge in the lineage.
			planted, _ = c.Session("judge")
			if err := lin.Remember("judge", planted); err != nil {
				t.Fatal(err)
			}
		} else if sid, _ := lin.Session("judge"); sid != planted {
			t.Errorf("the fresh step's session %s replaced the recorded %s; a fresh step is never remembered", sid, planted)
		}
	}
	judges := f.callsMatching("judge it")
	if len(judges) != 2 {
		t.Fatalf("judge calls = %d", len(judges))
	}
	for i, j := range judges {
		if sid, _ := j.resumed(); sid != "" {
			t.Errorf("run %d: the fresh step resumed %s", i+1, sid)
		}
	}
	if carried := f.callsMatching("carry on"); len(carried) != 1 {
		t.Errorf("the ordinary step must still be carried: %d carry-on calls", len(carried))
	}
}

func TestAFreshStepThatResumesAnotherIsRefused(t *testing.T) {
	wf := &Workflow{Steps: []Step{
		{Name: "a", Prompt: Text("a")},
		{Name: "b", Prompt: Text("b"), Fresh: true, ResumeFrom: "a"},
	}}
	_, err := wf.Run(context.Background(), &Runtime{}, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "step b is Fresh and resumes step a") {
		t.Fatalf("err = %v", err)
	}
}
