package fakeapi

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
)

// Responder produces the reply for one scripted turn. Reply, Func and
// FailFirst are Responders.
type Responder interface {
	Respond(req *Request) Reply
}

// Respond returns r itself, so a fixed Reply is a Responder.
func (r Reply) Respond(*Request) Reply { return r }

// Func is a Responder computed from the request (to echo a tool result,
// for instance).
type Func func(req *Request) Reply

// Respond calls f.
func (f Func) Respond(req *Request) Reply { return f(req) }

// FailFirst returns a Responder that answers its first n calls with fault
// and every later call with then: Overloaded() twice, then success, tests
// the CLI's retries. The count lives in the returned value, so build a
// fresh one (or a fresh Script) per test.
func FailFirst(n int, fault *Fault, then Responder) Responder {
	return &failFirst{n: int64(n), fault: fault, then: then}
}

type failFirst struct {
	n     int64
	fault *Fault
	then  Responder
	calls atomic.Int64
}

func (f *failFirst) Respond(req *Request) Reply {
	if f.calls.Add(1) <= f.n {
		return Reply{Fault: f.fault}
	}
	return f.then.Respond(req)
}

// Script maps a marker string to the turns of a scenario. A request is
// matched against the most recent user prompt that contains a marker (the
// longest marker wins when several occur in it); its turn index is the
// number of assistant messages after that prompt (Request.Turn). So a
// scenario needs no server state: it works across --resume, and a
// subagent, whose first prompt is the Agent tool's prompt, follows the rule
// its own marker selects.
//
// A prompt with no marker, or a turn past the end of its list, gets a plain
// text reply starting "fake: no rule" (end_turn), so nothing hangs.
//
//	s := fakeapi.Script{
//		"SCENARIO:touch": {
//			fakeapi.NewReply(fakeapi.ToolUse("", "Bash", map[string]any{"command": "touch f"})),
//			fakeapi.Say("done"),
//		},
//	}
//	srv := claudetest.NewServer(t, s.Handler())
type Script map[string][]Responder

// Handler returns a Handler that answers by the script. It is safe for
// concurrent use as long as the Responders are.
func (s Script) Handler() Handler {
	return func(_ context.Context, req *Request) Reply { return s.Reply(req) }
}

// Reply returns the script's reply to req.
func (s Script) Reply(req *Request) Reply {
	var marker string
	i, text := req.lastPrompt(func(text string) bool {
		for m := range s {
			if strings.Contains(text, m) {
				return true
			}
		}
		return false
	})
	if i < 0 {
		return Say(fmt.Sprintf("fake: no rule for prompt %q", req.LastUserText()))
	}
	for m := range s {
		if strings.Contains(text, m) && (len(m) > len(marker) || len(m) == len(marker) && m < marker) {
			marker = m
		}
	}
	turns := s[marker]
	turn := req.assistantsAfter(i)
	if turn >= len(turns) {
		return Say(fmt.Sprintf("fake: no rule for %s turn %d (the script has %d)", marker, turn, len(turns)))
	}
	return turns[turn].Respond(req)
}
