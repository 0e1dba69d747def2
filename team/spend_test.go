package team_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/claude/claudetest"
	"github.com/flowerrun/flower/internal/pgtest"
	"github.com/flowerrun/flower/team"
)

// pricedWorld is a world whose fake API reports usage of its own for
// every answer (priced decides it for each reply), so the test can price
// every request the API answered.
func pricedWorld(t *testing.T, priced func(r *claudetest.Request, reply claudetest.Reply) claudetest.Usage) *world {
	return pricedWorldOn(t, pgtest.Database(t), priced)
}

// pricedWorldOn is pricedWorld on the database db.
func pricedWorldOn(t *testing.T, db string, priced func(r *claudetest.Request, reply claudetest.Reply) claudetest.Usage) *world {
	w := newWorldOn(t, db)
	w.srv = claudetest.NewServer(t, func(ctx context.Context, r *claudetest.Request) claudetest.Reply {
		reply := w.model.reply(ctx, r)
		if reply.Fault == nil {
			reply.Usage = priced(r, reply)
		}
		return reply
	})
	for i, kv := range w.env {
		if strings.HasPrefix(kv, "ANTHROPIC_BASE_URL=") {
			w.env[i] = "ANTHROPIC_BASE_URL=" + w.srv.URL
		}
	}
	return w
}

// varied is a usage of every kind that differs from request to request.
func varied() func(*claudetest.Request, claudetest.Reply) claudetest.Usage {
	var n atomic.Int64
	return func(*claudetest.Request, claudetest.Reply) claudetest.Usage {
		i := int(n.Add(1))
		return claudetest.Usage{InputTokens: 100 + i, OutputTokens: 20 + 3*i, CacheReadInputTokens: 1000 * i, CacheCreationInputTokens: 50 + i}
	}
}

// answered is what the requests the fake API answered cost by the CLI's
// prices, and how many there were; since only those after since.
func answered(t *testing.T, srv *claudetest.Server, since time.Time) (float64, int) {
	t.Helper()
	total, n := 0.0, 0
	for _, r := range srv.Requests() {
		if r.Err != nil || r.Usage == (claudetest.Usage{}) || r.At.Before(since) {
			continue
		}
		c, known := claude.RequestCost(r.Model, claude.RequestUsage{Usage: claude.Usage{InputTokens: r.Usage.InputTokens, OutputTokens: r.Usage.OutputTokens,
			CacheCreationInputTokens: r.Usage.CacheCreationInputTokens, CacheReadInputTokens: r.Usage.CacheReadInputTokens}})
		if !known {
			t.Errorf("the price table does not know the model %q the CLI asked for", r.Model)
		}
		total += c
		n++
	}
	return total, n
}

// probes is what the CLI's quota probes (max_tokens 16, no tools) cost:
// requests no transcript holds.
func probes(srv *claudetest.Server) float64 {
	total := 0.0
	for _, r := range srv.Requests() {
		if r.Err == nil && r.MaxTokens == 16 && len(r.Tools) == 0 {
			c, _ := claude.RequestCost(r.Model, claude.RequestUsage{Usage: claude.Usage{InputTokens: r.Usage.InputTokens, OutputTokens: r.Usage.OutputTokens,
				CacheCreationInputTokens: r.Usage.CacheCreationInputTokens, CacheReadInputTokens: r.Usage.CacheReadInputTokens}})
			total += c
		}
	}
	return total
}

// killMidToolCall starts machine A on the run, kills its whole process
// tree in the middle of the slow tool call (after a write-back) and starts
// machine B to take the run over; it returns when the kill happened.
func killMidToolCall(t *testing.T, w *world) time.Time {
	t.Helper()
	const rescue = 8 * time.Second
	a := w.worker("machine-a", "--rescue", rescue.String())
	w.waitMarker(markerName, 3*time.Minute)
	w.worker("machine-b", "--rescue", rescue.String())
	// A write-back of the slow call's transcript line (a loaded machine
	// takes longer than a fixed pause), then the machine dies.
	tm := w.open()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		var n int
		err := tm.Pool().QueryRow(context.Background(), `select count(*) from session_entries where store_key like 'run:%' and position($1::bytea in payload) > 0`,
			[]byte(markerName)).Scan(&n)
		if err == nil && n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the slow call's transcript line never reached the database (%v)", err)
		}
	}
	killed := time.Now()
	stopTree(a.cmd.Process.Pid, syscall.SIGKILL)
	<-a.done
	a.done <- nil // for the cleanup
	return killed
}

func TestAKilledAttemptsRequestsAreInTheRunsCost(t *testing.T) {
	t.Parallel()
	w := pricedWorld(t, varied())
	tm := w.open()
	id := w.submit("task-1 slow")
	killed := killMidToolCall(t, w)
	r := waitFor(t, tm, 4*time.Minute, "r1 ended", allEnded)[0]
	if r.State != team.Achieved {
		t.Fatalf("%s ended %s: %s", r.Name(), r.State, r.Reason)
	}
	if got := startedBy(t, tm, id); strings.Join(got, ",") != "machine-a,machine-b" {
		t.Fatalf("started by %v, want machine-a then machine-b", got)
	}
	all, total := answered(t, w.srv, time.Time{})
	afterKill, _ := answered(t, w.srv, killed)
	inDB, err := team.TranscriptSpend(context.Background(), w.db, id)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the fake API answered %d requests ($%.6f), $%.6f of it after the kill; the transcripts in the database show $%.6f; the run's recorded cost: $%.6f",
		total, all, afterKill, inDB, r.Cost)
	// Every request a transcript can hold is in the database's
	// transcripts (the CLI's quota probes, max_tokens 16, are in none),
	// and the recorded cost is not below them.
	inTranscripts := all - probes(w.srv)
	if math.Abs(inDB-inTranscripts) > 1e-9 {
		t.Errorf("the transcripts in the database show $%.9f; the API answered $%.9f of requests a transcript holds", inDB, inTranscripts)
	}
	if r.Cost < inDB-1e-9 {
		t.Errorf("the run's recorded cost is $%.9f, below its transcripts' $%.9f (machine A's requests before it was killed: $%.9f)", r.Cost, inDB, all-afterKill)
	}
}

func TestABudgetAKilledAttemptSpentStopsTheRun(t *testing.T) {
	t.Parallel()
	// The slow tool call's request costs $0.90 and every request after it
	// $0.20: machine A is killed in the call before its turn ends, so its
	// process never reports the $0.90; machine B's process gets only what
	// is left of the $1 budget, and its first request spends it.
	var slowHandedOut atomic.Bool
	w := pricedWorld(t, func(r *claudetest.Request, reply claudetest.Reply) claudetest.Usage {
		price, _ := claude.PriceOf(r.Model)
		usd := func(d float64) claudetest.Usage {
			return claudetest.Usage{InputTokens: 10, OutputTokens: int(math.Round(d / price.Output * 1e6))}
		}
		for _, b := range reply.Blocks {
			if in, ok := b.Input.(map[string]any); ok && b.Type == "tool_use" && strings.Contains(fmt.Sprint(in["command"]), markerName) {
				slowHandedOut.Store(true)
				return usd(0.90)
			}
		}
		if slowHandedOut.Load() {
			return usd(0.20)
		}
		return claudetest.Usage{InputTokens: 10, OutputTokens: 5}
	})
	tm := w.open()
	id := w.submit("task-1 slow", "--budget", "1")
	killMidToolCall(t, w)
	r := waitFor(t, tm, 4*time.Minute, "r1 ended", allEnded)[0]
	spent, _ := answered(t, w.srv, time.Time{})
	spent -= probes(w.srv)
	if r.State != team.Stopped || !strings.Contains(r.Reason, "budget") || r.Cost < 1 || math.Abs(r.Cost-spent) > 1e-9 {
		t.Errorf("%s ended %s, $%v of $%v (the API answered $%v): %s", r.Name(), r.State, r.Cost, r.Budget, spent, r.Reason)
	}
	if got := startedBy(t, tm, id); strings.Join(got, ",") != "machine-a,machine-b" {
		t.Errorf("started by %v, want machine-a then machine-b", got)
	}
}
