package claude_test

import (
	"context"
	"math"
	"testing"

	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/claude/claudetest"
	"github.com/flowerrun/flower/claude/fakeapi"
)

// transcriptCost sums RequestCost over every assistant message of the
// session's transcripts in store (main and subagents), once per message id.
func transcriptCost(t *testing.T, store *claudetest.MemoryStore, project, session string) (float64, int) {
	t.Helper()
	ctx := context.Background()
	subs, err := store.ListSubkeys(ctx, project, session)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	total := 0.0
	for _, sub := range append([]string{""}, subs...) {
		entries, err := store.Load(ctx, claude.SessionKey{ProjectKey: project, SessionID: session, Subpath: sub})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			r, ok := claude.ReadTranscriptRequest(e)
			if !ok || seen[r.MessageID] {
				continue
			}
			seen[r.MessageID] = true
			c, known := claude.RequestCost(r.Model, r.Usage)
			if !known && r.Model != "<synthetic>" {
				t.Errorf("the price table does not know the model %q", r.Model)
			}
			total += c
		}
	}
	return total, len(seen)
}

// The price table is the CLI's: for each model, a session that calls a
// tool and a subagent, with the fake API reporting cache reads and writes
// as a prompt cache would, costs by the table's sum over its transcript
// exactly what the CLI reports as total_cost_usd.
func TestRealPriceTableMatchesTheCLIsReportedCost(t *testing.T) {
	t.Parallel()
	for _, model := range []string{"", "claude-opus-4-6", "claude-sonnet-4-5-20250929", "claude-haiku-4-5", "claude-sonnet-5-5", "claude-fable-5-1"} {
		t.Run(model, func(t *testing.T) {
			t.Parallel()
			srv := claudetest.NewServer(t, subagentScript().Handler())
			srv.PriceWith(fakeapi.NewPromptCache(nil))
			store := claudetest.NewMemoryStore()
			opts := realOptions(t, srv)
			opts.Model = model
			opts.SessionStore = store
			opts.Agents = map[string]claude.AgentDefinition{"tester": {Description: "Runs checks", Prompt: "You are the tester.", Tools: []string{"Bash"}}}
			msgs, err := collect(t, realCtx(t), "SCENARIO:dispatch", opts)
			if err != nil {
				t.Fatal(err)
			}
			res := lastResult(t, msgs)
			got, n := transcriptCost(t, store, claude.ProjectKey(opts.Cwd), res.SessionID)
			var models []string
			for m := range res.ModelUsage {
				models = append(models, m)
			}
			t.Logf("model %v: %d requests in the transcripts ($%.6f), the API answered %d, the CLI reports $%.6f", models, n, got, srv.Count(), res.TotalCostUSD)
			if n < 3 {
				t.Fatalf("only %d requests in the transcripts", n)
			}
			if math.Abs(got-res.TotalCostUSD) > 1e-9 {
				t.Errorf("the table prices the transcripts at $%.9f; the CLI reports $%.9f", got, res.TotalCostUSD)
			}
		})
	}
}
