package claude_test

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/flowerrun/flower/claude"
)

// What the fake API cannot report (the 1-hour cache, a long prompt, the
// US inference region, web searches), priced by the CLI's rules.
func TestRequestCostFollowsTheCLIsRules(t *testing.T) {
	usage := func(s string) claude.RequestUsage {
		var u claude.RequestUsage
		if err := json.Unmarshal([]byte(s), &u); err != nil {
			t.Fatal(err)
		}
		return u
	}
	for _, c := range []struct {
		name, model, usage string
		want               float64
		known              bool
	}{
		{"plain", "claude-sonnet-4-6", `{"input_tokens":1000000,"output_tokens":1000000}`, 3 + 15, true},
		{"dated first-party id", "claude-opus-4-1-20250805", `{"output_tokens":1000000}`, 75, true},
		{"provider id", "us.anthropic.claude-haiku-4-5-20251001-v1:0", `{"input_tokens":1000000}`, 1, true},
		{"alias with context suffix", "opus[1m]", `{"cache_read_input_tokens":1000000}`, 0.2, true},
		{"5-minute writes", "claude-opus-5", `{"cache_creation_input_tokens":1000000}`, 6.25, true},
		{"1-hour writes", "claude-opus-5", `{"cache_creation_input_tokens":1000000,"cache_creation":{"ephemeral_5m_input_tokens":600000,"ephemeral_1h_input_tokens":400000}}`, 0.6*6.25 + 0.4*10, true},
		{"long prompt", "claude-haiku-5-5", `{"input_tokens":100001,"output_tokens":1000000}`, 0.100001*0.5 + 2.5, true},
		{"short prompt", "claude-haiku-5-5", `{"input_tokens":100000,"output_tokens":1000000}`, 0.1*0.1 + 0.5, true},
		{"US region", "claude-sonnet-5", `{"input_tokens":1000000,"inference_geo":"us"}`, 2 * 1.1, true},
		{"web search", "claude-sonnet-5", `{"server_tool_use":{"web_search_requests":3}}`, 0.03, true},
		{"a newer opus is not an older one", "claude-opus-5-7", `{"output_tokens":1000000}`, 25, false},
		{"unknown", "claude-fake", `{"input_tokens":1000000}`, 5, false},
	} {
		got, known := claude.RequestCost(c.model, usage(c.usage))
		if math.Abs(got-c.want) > 1e-9 || known != c.known {
			t.Errorf("%s: RequestCost(%q, %s) = %v, %v; want %v, %v", c.name, c.model, c.usage, got, known, c.want, c.known)
		}
	}
}

func TestReadTranscriptRequest(t *testing.T) {
	line := `{"type":"assistant","uuid":"u1","message":{"id":"msg_1","model":"claude-opus-5","content":[{"type":"text","text":"x"}],"usage":{"input_tokens":3,"output_tokens":9}}}`
	r, ok := claude.ReadTranscriptRequest(json.RawMessage(line))
	if !ok || r.MessageID != "msg_1" || r.Model != "claude-opus-5" || r.Usage.InputTokens != 3 || r.Usage.OutputTokens != 9 {
		t.Errorf("read %+v, %v", r, ok)
	}
	for _, l := range []string{`{"type":"user","message":{"id":"m","usage":{}}}`, `{"type":"assistant","message":{"model":"m","usage":{}}}`, `{"type":"assistant","message":{"id":"m"}}`, `not json`} {
		if _, ok := claude.ReadTranscriptRequest(json.RawMessage(l)); ok {
			t.Errorf("%s read as a request", l)
		}
	}
}
