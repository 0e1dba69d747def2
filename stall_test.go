package flower

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/flowerrun/flower/claude"
)

// stallFired reports whether the watch ended ctx within d.
func stallFired(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return true
	case <-time.After(d):
		return false
	}
}

func TestStallWatchWaitsOutRunningToolsOnly(t *testing.T) {
	ctx, stop := context.WithCancelCause(context.Background())
	defer stop(nil)
	const bound = 100 * time.Millisecond
	w := newStallWatch(bound, stop)
	defer w.close()
	w.saw(&claude.AssistantMessage{Content: []claude.ContentBlock{&claude.ToolUseBlock{ID: "t1"}}})
	if stallFired(ctx, 4*bound) {
		t.Fatal("the watch fired while a tool call was running")
	}
	w.saw(&claude.UserMessage{Content: []claude.ContentBlock{&claude.ToolResultBlock{ToolUseID: "t1"}}})
	if !stallFired(ctx, 20*bound) {
		t.Fatal("the watch did not fire after the tool's result and a silence past the bound")
	}
	var stall *StallError
	if !errors.As(context.Cause(ctx), &stall) || stall.Silence != bound {
		t.Errorf("cause %v, want a *StallError of %s", context.Cause(ctx), bound)
	}
	if got := stallOr(ctx, context.Canceled); !errors.As(got, &stall) {
		t.Errorf("stallOr = %v, want the stall", got)
	}
	if ClassifyFailure(Failure{Err: stall}) != ErrorTransient {
		t.Error("a stall must be retried (transient)")
	}
}

func TestStallWatchOff(t *testing.T) {
	ctx, stop := context.WithCancelCause(context.Background())
	defer stop(nil)
	w := newStallWatch(-1, stop)
	w.saw(&claude.ResultMessage{})
	w.close()
	if stallFired(ctx, 50*time.Millisecond) {
		t.Error("a negative bound must turn the watch off")
	}
	if DefaultResilience().StallTimeout != DefaultStallTimeout {
		t.Error("the default stall bound is not DefaultStallTimeout")
	}
}

func TestStallWatchCountsASubagentsSilence(t *testing.T) {
	ctx, stop := context.WithCancelCause(context.Background())
	defer stop(nil)
	w := newStallWatch(100*time.Millisecond, stop)
	defer w.close()
	w.saw(&claude.AssistantMessage{Content: []claude.ContentBlock{&claude.ToolUseBlock{ID: "a1", Name: "Agent"}}})
	if !stallFired(ctx, 2*time.Second) {
		t.Error("a subagent silent past the bound was not taken as a stall")
	}
}
