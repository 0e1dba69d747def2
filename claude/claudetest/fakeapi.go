// Package claudetest holds test doubles for the claude package: a scripted
// fake Anthropic Messages API on 127.0.0.1 (NewServer, Script: package
// fakeapi under test names), the pinned real CLI's locator and hermetic
// environment (CLIPath, Env), and SessionStore helpers.
package claudetest

import (
	"testing"

	"github.com/flowerrun/flower/claude/fakeapi"
)

// The fake Messages API lives in package fakeapi, which links no testing
// code (flower demo runs on it); these names keep the tests' spelling.
type (
	Server     = fakeapi.Server
	Handler    = fakeapi.Handler
	Request    = fakeapi.Request
	Message    = fakeapi.Message
	Block      = fakeapi.Block
	Reply      = fakeapi.Reply
	ReplyBlock = fakeapi.ReplyBlock
	Usage      = fakeapi.Usage
	Fault      = fakeapi.Fault
	Responder  = fakeapi.Responder
	Func       = fakeapi.Func
	Script     = fakeapi.Script
)

// Replies, blocks and faults: see package fakeapi.
var (
	Start         = fakeapi.Start
	Say           = fakeapi.Say
	NewReply      = fakeapi.NewReply
	Text          = fakeapi.Text
	ToolUse       = fakeapi.ToolUse
	FailFirst     = fakeapi.FailFirst
	Always        = fakeapi.Always
	UsageLimited  = fakeapi.UsageLimited
	Overloaded    = fakeapi.Overloaded
	ServerError   = fakeapi.ServerError
	RateLimited   = fakeapi.RateLimited
	PromptTooLong = fakeapi.PromptTooLong
	ConnReset     = fakeapi.ConnReset

	StructuredOutput      = fakeapi.StructuredOutput
	StructuredOutputBlock = fakeapi.StructuredOutputBlock
)

// The CLI's structured output (--json-schema): see package fakeapi.
const (
	StructuredOutputTool = fakeapi.StructuredOutputTool
	StructuredNudge      = fakeapi.StructuredNudge
)

// NewServer starts a fake Messages API answering with h, reports its own
// errors (a reply it cannot render, a panicking handler) to t, and closes it
// when the test ends. A nil h answers every request with Script{}'s
// "fake: no rule".
func NewServer(t testing.TB, h Handler) *Server {
	t.Helper()
	s, err := fakeapi.Start(h)
	if err != nil {
		t.Fatalf("claudetest: %v", err)
	}
	s.Report(t.Errorf)
	t.Cleanup(s.Close)
	return s
}
