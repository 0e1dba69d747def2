package flower

import (
	"bytes"
	"testing"

	"github.com/flowerrun/flower/claude/claudetest"
)

// autoMemoryMark is a line of the CLI's auto-memory instructions (CLI
// 2.1.332), present in the system prompt while auto memory is on.
const autoMemoryMark = "You have a persistent file-based memory"

// A portable run loads nothing from ~/.claude, and the CLI's auto memory is
// ~/.claude state whose instructions are 2.2 KB of every request's system
// prompt: the Runtime's sessions run without it, unless the variable is
// set. Before, the first case failed: the system prompt held the memory
// instructions.
func TestRealPortableRunHasNoAutoMemory(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		opts     []Option
		wantMemo bool
	}{
		{"portable", nil, false},
		{"the variable set to 0 wins", []Option{WithEnv(map[string]string{autoMemoryEnv: "0"})}, true},
		{"not portable", []Option{NotPortable()}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := claudetest.NewServer(t, claudetest.Script{"SCENARIO:memo": {claudetest.Say("noted")}}.Handler())
			rt := newTestRuntime(t, srv, tc.opts...)
			res, err := rt.Run(runCtx(t), testSpec(), "SCENARIO:memo", RunOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if res.Text != "noted" {
				t.Fatalf("result = %+v", res)
			}
			for i, r := range srv.Requests() {
				if got := bytes.Contains(r.Body, []byte(autoMemoryMark)); got != tc.wantMemo {
					t.Errorf("request %d carries the auto-memory instructions: %v, want %v", i, got, tc.wantMemo)
				}
			}
			if srv.Count() == 0 {
				t.Error("no request reached the fake API")
			}
		})
	}
}
