package fakeapi

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// The blocks of the hand-computed cases. Each is the JSON a CLI sends,
// without its cache marker; its byte length is written beside it, counted
// by hand, so the expected figures below do not come from the code under
// test.
const (
	tool1  = `{"name":"Bash","input_schema":{}}`                                    // nTool bytes
	sys1   = `{"type":"text","text":"You are Claude."}`                             // 39
	user1  = `{"type":"text","text":"list the files"}`                              // 38
	asst1  = `{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}` // nAsst
	res1   = `{"type":"tool_result","tool_use_id":"t1","content":"a.go b.go"}`      // nRes
	user1b = `{"type":"text","text":"list the FILES"}`                              // 38
)

// The blocks' sizes, counted by hand.
const nTool, nSys, nUser, nAsst, nRes = 33, 40, 39, 68, 63

// mark adds the CLI's cache marker as its last member.
func mark(block string) string {
	return strings.TrimSuffix(block, "}") + `,"cache_control":{"type":"ephemeral"}}`
}

// body builds a request: tools, system blocks, then messages as
// role:block|block… strings.
func body(tools, system []string, messages ...string) []byte {
	var msgs []string
	for _, m := range messages {
		role, blocks, _ := strings.Cut(m, ":")
		msgs = append(msgs, fmt.Sprintf(`{"role":%q,"content":[%s]}`, role, strings.ReplaceAll(blocks, "|", ",")))
	}
	return fmt.Appendf(nil, `{"model":"m","max_tokens":100,"tools":[%s],"system":[%s],"messages":[%s]}`,
		strings.Join(tools, ","), strings.Join(system, ","), strings.Join(msgs, ","))
}

func TestHandCountedBlockSizes(t *testing.T) {
	for block, want := range map[string]int{tool1: nTool, sys1: nSys, user1: nUser, asst1: nAsst, res1: nRes, user1b: nUser} {
		if len(block) != want {
			t.Fatalf("%s is %d bytes, the cases below count %d", block, len(block), want)
		}
	}
}

func TestPromptCacheHandComputedCases(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	type step struct {
		at                 time.Duration
		body               []byte
		read, write, input int // bytes
	}
	cases := []struct {
		name  string
		steps []step
	}{{
		// The CLI's shape: the system block and the last message marked.
		// The second request reads all of the first (its marker moved
		// on), writes its new part.
		name: "a growing conversation reads all but the new part",
		steps: []step{
			{0, body([]string{tool1}, []string{mark(sys1)}, "user:"+mark(user1)), 0, nTool + nSys + nUser, 0},
			{10 * time.Second, body([]string{tool1}, []string{mark(sys1)}, "user:"+user1, "assistant:"+asst1, "user:"+mark(res1)),
				nTool + nSys + nUser, nAsst + nRes, 0},
		},
	}, {
		name: "a changed early message misses from there on",
		steps: []step{
			{0, body([]string{tool1}, []string{mark(sys1)}, "user:"+mark(user1)), 0, nTool + nSys + nUser, 0},
			{time.Second, body([]string{tool1}, []string{mark(sys1)}, "user:"+user1b, "assistant:"+asst1, "user:"+mark(res1)),
				nTool + nSys, nUser + nAsst + nRes, 0},
		},
	}, {
		name: "an expired entry is written again",
		steps: []step{
			{0, body([]string{tool1}, []string{mark(sys1)}, "user:"+mark(user1)), 0, nTool + nSys + nUser, 0},
			{5*time.Minute + time.Second, body([]string{tool1}, []string{mark(sys1)}, "user:"+user1, "assistant:"+asst1, "user:"+mark(res1)),
				0, nTool + nSys + nUser + nAsst + nRes, 0},
		},
	}, {
		name: "a read refreshes the TTL",
		steps: []step{
			{0, body(nil, []string{mark(sys1)}, "user:"+user1), 0, nSys, nUser},
			{4 * time.Minute, body(nil, []string{mark(sys1)}, "user:"+user1), nSys, 0, nUser},
			{8 * time.Minute, body(nil, []string{mark(sys1)}, "user:"+user1), nSys, 0, nUser},
		},
	}, {
		// Two breakpoints: the system block and the first message; what
		// follows the last one is plain input, and the second request
		// reads up to the later one.
		name: "two breakpoints, input after the last",
		steps: []step{
			{0, body([]string{tool1}, []string{mark(sys1)}, "user:"+mark(user1)+"|"+res1), 0, nTool + nSys + nUser, nRes},
			{time.Second, body([]string{tool1}, []string{mark(sys1)}, "user:"+mark(user1)+"|"+res1), nTool + nSys + nUser, 0, nRes},
		},
	}, {
		name: "no breakpoint: everything is input, nothing cached",
		steps: []step{
			{0, body([]string{tool1}, []string{sys1}, "user:"+user1), 0, 0, nTool + nSys + nUser},
			{time.Second, body([]string{tool1}, []string{sys1}, "user:"+user1), 0, 0, nTool + nSys + nUser},
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := NewPromptCache(nil)
			for i, s := range tc.steps {
				p, err := c.PriceAt(s.body, t0.Add(s.at))
				if err != nil {
					t.Fatal(err)
				}
				if p.ReadBytes != s.read || p.WriteBytes != s.write || p.InputBytes != s.input {
					t.Errorf("request %d: read/write/input = %d/%d/%d bytes, want %d/%d/%d",
						i+1, p.ReadBytes, p.WriteBytes, p.InputBytes, s.read, s.write, s.input)
				}
			}
		})
	}
}

func TestPricingUsageAndPrice(t *testing.T) {
	p := Pricing{ReadBytes: 4000, WriteBytes: 401, InputBytes: 3}
	u := p.Usage(40)
	want := Usage{CacheReadInputTokens: 1000, CacheCreationInputTokens: 101, InputTokens: 1, OutputTokens: 10}
	if u != want {
		t.Fatalf("usage = %+v, want %+v", u, want)
	}
	// 1 + 1.25×101 + 0.1×1000 + 5×10
	if got := u.InputEquivalents(); got != 277.25 {
		t.Errorf("price = %v input-token equivalents, want 277.25", got)
	}
	// The zones' prices are the same table.
	if Read.Price() != CacheReadPrice || Write.Price() != CacheWritePrice || Input.Price() != 1 {
		t.Errorf("zone prices %v %v %v", Read.Price(), Write.Price(), Input.Price())
	}
	if got := (Pricing{}).Usage(0).OutputTokens; got != 1 {
		t.Errorf("an empty reply is %d output tokens, want 1", got)
	}
}

func TestPromptCacheRefusesABodyThatIsNoRequest(t *testing.T) {
	c := NewPromptCache(nil)
	for _, b := range []string{``, `[]`, `{"messages":[{"role":"user","content":7}]}`, `{"system":[{"cache_control":`} {
		if _, err := c.Price([]byte(b)); err == nil {
			t.Errorf("%q priced without an error", b)
		}
	}
}

func TestPromptCacheClockAdvances(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	c := NewPromptCache(func() time.Time { return t0 })
	b := body(nil, []string{mark(sys1)}, "user:"+user1)
	if p, _ := c.Price(b); p.WriteBytes != nSys {
		t.Fatalf("first request wrote %d bytes", p.WriteBytes)
	}
	c.Advance(6 * time.Minute)
	if p, _ := c.Price(b); p.ReadBytes != 0 || p.WriteBytes != nSys {
		t.Errorf("after 6 simulated minutes: read %d, wrote %d; want a miss", p.ReadBytes, p.WriteBytes)
	}
	if got := c.Now().Sub(t0); got != 6*time.Minute {
		t.Errorf("clock moved %v, want 6m", got)
	}
}

func TestServerReportsCachedUsage(t *testing.T) {
	srv, err := Start(func(context.Context, *Request) Reply { return Say("done") })
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	srv.PriceWith(NewPromptCache(nil))
	first := body([]string{tool1}, []string{mark(sys1)}, "user:"+mark(user1))
	second := body([]string{tool1}, []string{mark(sys1)}, "user:"+user1, "assistant:"+asst1, "user:"+mark(res1))
	for _, b := range [][]byte{first, second} {
		if status, _, _ := mustPost(t, srv, string(b)); status != 200 {
			t.Fatalf("status %d", status)
		}
	}
	reqs := srv.Requests()
	want := []Usage{
		{CacheCreationInputTokens: Tokens(nTool + nSys + nUser), OutputTokens: 1},
		{CacheReadInputTokens: Tokens(nTool + nSys + nUser), CacheCreationInputTokens: Tokens(nAsst + nRes), OutputTokens: 1},
	}
	for i, r := range reqs {
		if r.Usage != want[i] {
			t.Errorf("request %d reported %+v, want %+v", i+1, r.Usage, want[i])
		}
	}
}

// The CLI sends an entry as a string when it is not the last and as a
// marked text block when it is: one prefix for the cache, as for the API.
func TestAStringContentIsTheSameAsItsTextBlock(t *testing.T) {
	c := NewPromptCache(nil)
	t0 := time.Now()
	asBlock := body(nil, []string{mark(sys1)}, "user:"+mark(user1))
	if _, err := c.PriceAt(asBlock, t0); err != nil {
		t.Fatal(err)
	}
	asString := []byte(`{"system":[` + mark(sys1) + `],"messages":[{"role":"user","content":"list the files"},{"role":"assistant","content":[` + mark(asst1) + `]}]}`)
	p, err := c.PriceAt(asString, t0.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if p.ReadBytes != nSys+nUser || p.WriteBytes != nAsst {
		t.Errorf("read %d, wrote %d; want the string read as its block (%d) and only the new block written (%d)",
			p.ReadBytes, p.WriteBytes, nSys+nUser, nAsst)
	}
}
