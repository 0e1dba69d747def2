package flower

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

const bequestMarker = "给下一个接手这个仓库"

// argValue is the value of --flag=value or --flag value in args.
func argValue(args []string, flag string) string {
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, flag+"="); ok {
			return v
		}
		if a == flag && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

// The bequest runs without the human channel and without the Agent tool:
// nobody may be there to answer, and a hand-over does no new work.
func TestFakeTheBequestHasNoChannelAndNoAgent(t *testing.T) {
	t.Parallel()
	f := newFakeFlow(t)
	f.script(starterRules(fakeDone))
	f.runStarter("帮我做一个 hello", f.options(), nil)
	beq := f.callsMatching(bequestMarker)
	if len(beq) != 1 {
		t.Fatalf("bequest calls: %d", len(beq))
	}
	work := f.callsMatching("照这份需求做")[0]
	allowed := argValue(beq[0].Args, "--allowedTools")
	for _, tool := range []string{AskTool, InboxTool, "Agent"} {
		if !strings.Contains(argValue(work.Args, "--allowedTools"), tool) {
			t.Fatalf("the work session lacks %s; the test's premise is gone: %q", tool, work.Args)
		}
		if slices.Contains(strings.Split(allowed, ","), tool) {
			t.Errorf("the bequest is allowed %s: %s", tool, allowed)
		}
	}
	if disallowed := argValue(beq[0].Args, "--disallowedTools"); !strings.Contains(disallowed, "Agent") || !strings.Contains(disallowed, AskTool) {
		t.Errorf("the bequest's disallowed tools %q lack Agent or the ask tool", disallowed)
	}
	if argValue(beq[0].Args, "--agents") != "" || strings.Contains(strings.Join(beq[0].Args, " "), `"human"`) {
		t.Errorf("the bequest still carries workers or the human server: %q", beq[0].Args)
	}
}

// One attempt, whatever the Runtime's resilience: a bequest that fails
// is replaced by the mechanical one at once.
func TestFakeTheBequestMakesOneAttempt(t *testing.T) {
	t.Parallel()
	f := newFakeFlow(t)
	f.script(starterRules(fakeDone))
	if err := os.WriteFile(filepath.Join(f.calls, "fail"), []byte(bequestMarker), 0o600); err != nil {
		t.Fatal(err)
	}
	wf, err := StarterFlow("帮我做一个 hello", f.options())
	if err != nil {
		t.Fatal(err)
	}
	rt := f.runtime(WithWorkbench(wf.Workbench), WithResilience(Resilience{MaxAttempts: 4, BaseDelay: time.Millisecond, MaxDelay: time.Millisecond, Probe: fastResilience.Probe}))
	if _, err := wf.Run(runCtx(t), rt, nil, nil); err != nil {
		t.Fatal(err)
	}
	if n := len(f.callsMatching(bequestMarker)); n != 1 {
		t.Errorf("bequest calls = %d; the bequest makes one attempt", n)
	}
	if got := readText(t, filepath.Join(f.ws, "CLAUDE.md")); !strings.Contains(got, "flower 交代(机械版本)") {
		t.Errorf("no mechanical bequest after the failed one:\n%s", got)
	}
}

// The bequest has a deadline of its own: a model that does not answer in
// time is replaced by the mechanical hand-over.
func TestFakeTheBequestHasItsOwnDeadline(t *testing.T) {
	old := bequestTimeout
	bequestTimeout = 2 * time.Second
	defer func() { bequestTimeout = old }()
	f := newFakeFlow(t)
	f.script(starterRules(fakeDone))
	if err := os.WriteFile(filepath.Join(f.calls, "hold"), []byte(bequestMarker), 0o600); err != nil {
		t.Fatal(err)
	}
	f.runStarter("帮我做一个 hello", f.options(), nil)
	if _, err := os.Stat(filepath.Join(f.calls, "held-1")); err != nil {
		t.Fatalf("the bequest call was never held: %v", err)
	}
	// The held call waits 30 s for a release that never comes, then
	// answers: only the deadline makes the hand-over mechanical.
	rows, err := ReadManifest(filepath.Join(f.runDir, ManifestName))
	if err != nil {
		t.Fatal(err)
	}
	if last := rows[len(rows)-1]; last.Step != "干活·交代" || !strings.Contains(last.Error, "deadline") {
		t.Errorf("the bequest's row: %s %q; want its deadline", last.Step, last.Error)
	}
	if got := readText(t, filepath.Join(f.ws, "CLAUDE.md")); !strings.Contains(got, "flower 交代(机械版本)") {
		t.Errorf("no mechanical bequest after the deadline:\n%s", got)
	}
}
