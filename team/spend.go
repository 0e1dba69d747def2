package team

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/jackc/pgx/v5"

	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/store"
)

// A run's spend is counted from its transcripts, not only from what its
// processes reported: a process's `result` events and manifest rows cover
// the turns it finished, and an attempt whose machine died mid-turn
// reports nothing, while every request it made is in its transcripts (the
// CLI writes each answer with the request's usage) as far as they were
// written back to the database. The run's recorded cost is never below
// this sum, so budgets count a killed attempt's requests too.
//
// What no transcript in the database shows cannot be counted here: the
// requests a machine made after its last write-back before it died.

// spendLedger is the priced requests of a run's transcripts as the
// team's database holds them: each request once, by its message id (the
// CLI writes one answer's content blocks as several lines carrying the
// same id and usage; a forked or copied session carries earlier answers
// again).
type spendLedger struct {
	mu    sync.Mutex
	costs map[string]float64 // message id → what that request cost
	total float64
}

func newSpendLedger() *spendLedger { return &spendLedger{costs: map[string]float64{}} }

// add prices the requests among entries (transcript lines) not counted yet.
func (l *spendLedger) add(entries []json.RawMessage) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range entries {
		r, ok := claude.ReadTranscriptRequest(e)
		if !ok {
			continue
		}
		// An unknown model is priced as the CLI prices it: what it
		// reported for the request, so the sum still matches its own.
		cost, _ := claude.RequestCost(r.Model, r.Usage)
		if old, seen := l.costs[r.MessageID]; seen && old >= cost {
			continue
		} else if seen {
			l.total -= old
		}
		l.costs[r.MessageID] = cost
		l.total += cost
	}
}

// spent is the sum over every request counted, in US dollars.
func (l *spendLedger) spent() float64 {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.total
}

// transcriptSpend reads every transcript of a run in the team's database
// (each session of its project and each subagent's) and prices its
// requests: the run's spend as far as its transcripts reached the
// database.
func transcriptSpend(ctx context.Context, transcripts store.OneProject) (float64, error) {
	ks, err := keys(ctx, transcripts, "")
	if err != nil {
		return 0, fmt.Errorf("listing the run's transcripts: %w", err)
	}
	l := newSpendLedger()
	for _, k := range ks {
		entries, err := transcripts.Load(ctx, k)
		if err != nil {
			return 0, fmt.Errorf("reading the run's transcript %s: %w", k.SessionID, err)
		}
		l.add(entries)
	}
	return l.spent(), nil
}

// transcriptsSpent is what the run's transcripts in the database show it
// spent, every attempt's: 0 before the attempt laid them out.
func (a *attempt) transcriptsSpent() float64 {
	if a.rs == nil || a.rs.sessions == nil {
		return 0
	}
	return a.rs.sessions.spent.spent()
}

// countEarlierSpend raises the run's cost to what its transcripts show
// earlier attempts spent (a killed one reported nothing of its last turn)
// and records it; its process then gets only what is left of the budget.
// When that spend used up the budget the run stops here, as a run stopped
// by its budget at the end of an attempt does (done is true, err is the
// attempt's result).
func (a *attempt) countEarlierSpend(ctx context.Context) (done bool, err error) {
	spent := a.transcriptsSpent()
	a.mu.Lock()
	if spent > a.base {
		a.base = spent
	}
	a.run.Cost = max(a.run.Cost, spent)
	cost := a.run.Cost
	// Earlier attempts' spend: their workers' metrics counted it.
	a.costCounted = max(a.costCounted, cost)
	a.mu.Unlock()
	err = a.fenced(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, "update team_runs set cost_usd = greatest(cost_usd, $2), updated_at = now() where id = $1", a.run.ID, cost)
		return err
	})
	if err != nil {
		return true, err
	}
	if a.run.Budget > 0 && a.run.Cost >= a.run.Budget {
		return true, a.setState(ctx, Stopped, fmt.Sprintf("its budget of $%.2f is spent ($%.4f, counted from its transcripts); its work is on %s",
			a.run.Budget, a.run.Cost, a.run.Branch), true)
	}
	return false, nil
}
