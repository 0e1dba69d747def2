package faults

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/flowerrun/flower/internal/fakecli"
)

// runHelper runs the test binary as a helper process of a case (mode is
// $FLOWER_FAULTS_HELPER) and returns its exit code.
func runHelper(mode string) int {
	switch mode {
	case "usage-limit-cli":
		return usageLimitCLI()
	case "disk-full":
		return diskFullHelper()
	default:
		fmt.Fprintf(os.Stderr, "faults: unknown helper mode %q\n", mode)
		return 2
	}
}

// usageLimitCLI is a scripted `claude` for the usage-limit case: CLI 2.1.332
// sends rate_limit_event (with resetsAt) only to subscription accounts,
// never against an API key, so the real CLI cannot show a usage-limit
// rejection offline. Its first session is rejected with a limit resetting
// $FAULT_RESET_IN seconds later; a resumed one succeeds.
func usageLimitCLI() int {
	if fakecli.AnsweredVersion() {
		return 0
	}
	s := fakecli.Connect()
	s.Read() // the prompt
	const sid = "0fa0175e-0000-4000-8000-000000000001"
	s.Init(sid)
	drain := func(code int) int {
		s.Drain()
		return code
	}
	if slices.Contains(os.Args, "--resume="+sid) {
		s.Say(sid, "resumed after the reset")
		s.Success(sid, "resumed after the reset")
		return drain(0)
	}
	secs, _ := strconv.Atoi(os.Getenv("FAULT_RESET_IN"))
	reset := time.Now().Add(time.Duration(secs) * time.Second).Unix()
	text := "You've hit your session limit · resets soon"
	s.Send(map[string]any{"type": "rate_limit_event", "session_id": sid, "uuid": "r",
		"rate_limit_info": map[string]any{"status": "rejected", "resetsAt": reset, "rateLimitType": "five_hour"}})
	s.Send(map[string]any{"type": "assistant", "session_id": sid, "uuid": "a1", "parent_tool_use_id": nil, "error": "rate_limit",
		"message": map[string]any{"id": "m1", "model": "<synthetic>", "content": []any{map[string]any{"type": "text", "text": text}}}})
	s.Send(map[string]any{"type": "result", "subtype": "success", "is_error": true, "duration_ms": 1, "duration_api_ms": 1,
		"num_turns": 1, "result": text, "session_id": sid, "api_error_status": 429, "terminal_reason": "api_error"})
	return drain(1)
}
