package flower

import (
	"fmt"
	"strings"
	"testing"

	"github.com/flowerrun/flower/claude/claudetest"
	"github.com/flowerrun/flower/claude/fakeapi"
)

// A resume rewrites old glances into expiry notes once: the next resume,
// after a newer glance, must send every note already sent byte for byte
// the same, or its first request misses the prompt cache from the first
// note on and writes the history again. Before the ages were recorded, the
// third process's notes said one round older (第 10 轮前 where the second
// had sent 第 9 轮前), and this test failed on each of them.
func TestRealSecondResumeSendsTheSameExpiryNotes(t *testing.T) {
	t.Parallel()
	// Glances at different folders: the loop guard refuses a call repeated
	// with the same input and result.
	dirs := strings.Fields("bin etc usr var tmp opt srv mnt root home")
	next := 0
	glances := func(n int, done string) []fakeapi.Responder {
		var out []fakeapi.Responder
		for range n {
			out = append(out, bashReply("ls -d /"+dirs[next]))
			next++
		}
		return append(out, claudetest.Say(done))
	}
	srv := claudetest.NewServer(t, claudetest.Script{
		"SCENARIO:glance-one":   glances(9, "one"),
		"SCENARIO:glance-two":   glances(1, "two"),
		"SCENARIO:glance-three": glances(0, "three"),
	}.Handler())
	rt := newTestRuntime(t, srv)
	ctx := runCtx(t)
	res, err := rt.Run(ctx, testSpec(), "SCENARIO:glance-one", RunOptions{})
	if err != nil || res.Text != "one" {
		t.Fatalf("first process: %+v, %v", res, err)
	}
	sid := res.SessionID
	ends := []int{srv.Count()}
	for _, step := range []string{"two", "three"} {
		res, err := rt.Run(ctx, testSpec(), "SCENARIO:glance-"+step, RunOptions{Resume: sid})
		if err != nil || res.Text != step {
			t.Fatalf("resume for %s: %+v, %v", step, res, err)
		}
		ends = append(ends, srv.Count())
	}
	reqs := srv.Requests()
	notes := func(r *fakeapi.Request) map[string]string {
		out := map[string]string{}
		for _, b := range r.ToolResults() {
			if strings.Contains(b.Content, "的结果已过期") {
				out[b.ToolUseID] = b.Content
			}
		}
		return out
	}
	// The second process's last request and the third's first.
	second, third := notes(reqs[ends[1]-1]), notes(reqs[ends[1]])
	if len(second) != 3 || len(third) != 4 {
		t.Fatalf("expiry notes: %d sent by the second process, %d by the third; want 3 and 4 (9 glances, then 10, the newest 6 kept)", len(second), len(third))
	}
	for id, note := range second {
		if third[id] != note {
			t.Errorf("the note of %s changed between resumes:\n  second %s\n  third  %s", id, note, third[id])
		}
	}
	// The first three keep the ages of the load that expired them; the
	// fourth is new.
	for i, age := range []int{9, 8, 7, 7} {
		want := fmt.Sprintf("[`ls -d /%s` 的结果已过期(第 %d 轮前),当前状态可能已变。需要请重新执行]", dirs[i], age)
		found := false
		for _, note := range third {
			found = found || note == want
		}
		if !found {
			t.Errorf("no note %q among the third process's: %q", want, third)
		}
	}
}
