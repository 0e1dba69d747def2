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

// Always returns a Responder that answers its turn and every later one of
// its scenario: a scenario that reads the request (what the tool results
// say, what a human typed) instead of counting turns needs one entry, and
// an interrupted turn that the CLI resends does not run it out of turns.
func Always(r Responder) Responder { return always{r} }

type always struct{ Responder }

// Script maps a marker string to the turns of a scenario. A request is
// matched against the most recent user prompt that contains a marker (the
// longest marker wins when several occur in it); its turn index is the
// number of assistant messages after that prompt (Request.Turn). So a
// scenario needs no server state: it works across --resume, and a
// subagent, whose first prompt is the Agent tool's prompt, follows the rule
// its own marker selects.
//
// A prompt with no marker, or a turn past the end of its list, gets a plain
// text reply starting "fake: no rule" (end_turn), so nothing hangs;
// HandlerOr and ReplyOr give such requests a reply of the caller's instead.
// A list that ends with Always answers every turn past its end with it.
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

// HandlerOr is Handler with fallback answering the requests the script has
// no rule for.
func (s Script) HandlerOr(fallback Responder) Handler {
	return func(_ context.Context, req *Request) Reply { return s.ReplyOr(req, fallback) }
}

// Reply returns the script's reply to req.
func (s Script) Reply(req *Request) Reply {
	if r, ok := s.rule(req); ok {
		return r.Respond(req)
	}
	return s.noRule(req)
}

// ReplyOr returns the script's reply to req, or fallback's when the script
// has no rule for it.
func (s Script) ReplyOr(req *Request, fallback Responder) Reply {
	if r, ok := s.rule(req); ok {
		return r.Respond(req)
	}
	return fallback.Respond(req)
}

// rule finds the Responder of req: the marker of its most recent marked
// prompt (the longest marker when several occur in it), the turn within.
func (s Script) rule(req *Request) (Responder, bool) {
	marker, i := s.marker(req)
	if i < 0 {
		return nil, false
	}
	turns := s[marker]
	turn := req.assistantsAfter(i)
	if turn < len(turns) {
		return turns[turn], true
	}
	if n := len(turns); n > 0 {
		if a, ok := turns[n-1].(always); ok {
			return a.Responder, true
		}
	}
	return nil, false
}

// marker returns the marker of req's most recent marked prompt and that
// prompt's index; -1 when no prompt holds a marker.
func (s Script) marker(req *Request) (string, int) {
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
		return "", -1
	}
	for m := range s {
		if strings.Contains(text, m) && (len(m) > len(marker) || len(m) == len(marker) && m < marker) {
			marker = m
		}
	}
	return marker, i
}

// noRule is the reply to a request the script has no rule for.
func (s Script) noRule(req *Request) Reply {
	marker, i := s.marker(req)
	if i < 0 {
		return Say(fmt.Sprintf("fake: no rule for prompt %q", req.LastUserText()))
	}
	return Say(fmt.Sprintf("fake: no rule for %s turn %d (the script has %d)", marker, req.assistantsAfter(i), len(s[marker])))
}
