package judge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/flowerrun/flower/doc"
)

// Answer is what a judge session returned, as far as the judgement needs
// it: whether the session succeeded, and its structured answer.
type Answer struct {
	OK bool
	// Error says why the session failed; "" when it did not.
	Error string
	// Structured is the result's structured_output; nil when none came.
	Structured json.RawMessage
	// Calls counts the StructuredOutput calls of the session's last turn:
	// with more than one, which answer counts cannot be told.
	Calls int
}

// Round is one round to judge: the goal, the workspace as the round left
// it, and how to ask a fresh judge.
type Round struct {
	Goal *doc.Goal
	// Changes is where the change report looks; its Items are the goal's.
	Changes ChangeInput
	// Measure bounds flower's own runs of the goal's command items.
	Measure MeasureOptions
	Lang    doc.Lang
	// Prompt builds the judge's prompt from the change report and flower's
	// measurements (the goal and the worker's reply are the caller's).
	Prompt func(changes, measured string) string
	// Ask runs a fresh judge session on prompt. It is called at most
	// twice; an error ends the judgement with that error (the judge could
	// not start, or ctx ended).
	Ask func(ctx context.Context, prompt string) (Answer, error)
}

// FailedError is a judgement without a verdict: the judge failed, or its
// answer could not be read, twice. Nothing it wrote counts.
type FailedError struct{ Why string }

func (e *FailedError) Error() string { return "the judge failed twice: " + e.Why }

// Judge is the goal guard's judgement of one round: the change report
// since the goal was set, flower's own measurements of the command items
// (taken before the judge reads anything), a fresh judge asked for a
// structured answer, asked once more, told why, when it fails or its
// answer cannot be read, and the decision from the items. The error is a
// *FailedError after two failures, or Ask's.
func Judge(ctx context.Context, r Round) (Decision, error) {
	items := Items(r.Goal)
	in := r.Changes
	in.Items, in.Lang = items, r.Lang
	changes := Changes(ctx, in)
	ms := Measure(ctx, in.Workspace, Commands(items), r.Measure)
	prompt := r.Prompt(changes.Report, RenderMeasurements(ms, r.Lang))
	why, p := "", prompt
	for range 2 {
		a, err := r.Ask(ctx, p)
		if err != nil {
			return Decision{}, err
		}
		if !a.OK {
			why, p = firstNonEmpty(a.Error, "the session failed"), prompt
			continue
		}
		reply, err := ReadAnswer(a, ParseReply)
		if err != nil {
			why, p = err.Error(), prompt+"\n\n"+AskAgain(r.Lang, err)
			continue
		}
		d := Decide(items, ms, reply, r.Lang)
		d.Flag(changes.Flags, r.Lang)
		return d, nil
	}
	return Decision{}, &FailedError{Why: why}
}

// ReadAnswer reads a session's structured answer with parse: none, more
// than one StructuredOutput call, or one parse refuses is an error
// wrapping ErrUnreadable, never a guess from the prose.
func ReadAnswer[T any](a Answer, parse func(json.RawMessage) (T, error)) (T, error) {
	var zero T
	switch {
	case a.Calls > 1:
		return zero, fmt.Errorf("%w: %d answers in one turn; give exactly one", ErrUnreadable, a.Calls)
	case len(a.Structured) == 0:
		return zero, fmt.Errorf("%w: the answer did not come through the StructuredOutput tool", ErrUnreadable)
	}
	return parse(a.Structured)
}

// AskAgain is what a judge asked again is told: why its answer could not
// be read, and how to answer.
func AskAgain(lang doc.Lang, err error) string {
	why := strings.TrimPrefix(err.Error(), ErrUnreadable.Error()+": ")
	if errors.Is(err, ErrUnreadable) {
		return fmt.Sprintf(textsFor(lang).askAgain, why)
	}
	return fmt.Sprintf(textsFor(lang).askAgain, err)
}
