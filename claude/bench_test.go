package claude_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/flowerrun/flower/claude"
)

// BenchmarkHookRoundTrip measures the driver's own overhead on a scripted
// session of 200 PreToolUse callbacks: from reading a hook_callback line to
// writing its reply, inside this process (pipes and the CLI excluded).
func BenchmarkHookRoundTrip(b *testing.B) {
	var mu sync.Mutex
	var lat []time.Duration
	claude.SetControlTrace(func(received, replied time.Time) {
		mu.Lock()
		lat = append(lat, replied.Sub(received))
		mu.Unlock()
	})
	defer claude.SetControlTrace(nil)
	opts := fakeOptions(b, "bench-hooks")
	opts.Hooks = map[string][]claude.HookMatcher{claude.PreToolUse: {{Matcher: "Bash", Hooks: []claude.HookFunc{
		func(ctx context.Context, in *claude.HookInput) (*claude.HookOutput, error) {
			if in.ToolName != "Bash" {
				return claude.Deny("unexpected tool"), nil
			}
			return nil, nil
		}}}}}
	b.ResetTimer()
	for range b.N {
		for m, err := range claude.Query(context.Background(), "go", opts) {
			if err != nil {
				b.Fatal(err)
			}
			if r, ok := m.(*claude.ResultMessage); ok && r.Result != "200 calls" {
				b.Fatalf("result %q", r.Result)
			}
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	if len(lat) == 0 {
		b.Fatal("no hook round trips traced")
	}
	p50 := lat[len(lat)/2]
	p99 := lat[len(lat)*99/100]
	b.ReportMetric(float64(p50.Microseconds()), "p50-µs/hook")
	b.ReportMetric(float64(p99.Microseconds()), "p99-µs/hook")
	b.ReportMetric(float64(len(lat))/float64(b.N), "hooks/session")
}
