package judge

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/flowerrun/flower/doc"
)

// Status is the judge's finding on one checklist item.
type Status string

// The statuses. Only Passed counts towards achieved.
const (
	Passed Status = "passed"
	Failed Status = "failed"
	NotRun Status = "not_run"
)

// ItemVerdict is the judge's finding on one item of the goal's checklist.
type ItemVerdict struct {
	ID     string `json:"id"`
	Status Status `json:"status"`
	// Evidence is what the judge saw: the command run and its exit status,
	// flower's measurement it relied on, or the file and lines it read. A
	// pass without evidence is not a pass.
	Evidence string `json:"evidence"`
	Reason   string `json:"reason"`
}

// Reply is a round judge's structured answer.
type Reply struct {
	Items      []ItemVerdict `json:"items"`
	Conclusion doc.State     `json:"conclusion"`
	Reason     string        `json:"reason"`
	// Missing and WhyNoWork are an unreachable conclusion's grounds: what
	// is missing, and why no round of work can supply it. Without both an
	// unreachable is not a stop.
	Missing   string `json:"missing,omitempty"`
	WhyNoWork string `json:"why_no_work,omitempty"`
}

// GoalReply is the goal step's structured answer.
type GoalReply struct {
	Statement string `json:"statement"`
	Checklist []Item `json:"checklist"`
}

// MaxItems bounds a checklist: a longer one checks process, not outcome,
// and a reply that long is more likely a runaway than a goal.
const MaxItems = 40

// maxReplyBytes bounds a structured answer flower reads.
const maxReplyBytes = 256 << 10

var idPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,31}$`)

// VerdictSchema is the JSON schema of a round judge's answer (Reply), for
// the CLI's --json-schema.
var VerdictSchema = json.RawMessage(`{"type":"object","additionalProperties":false,` +
	`"required":["items","conclusion","reason"],"properties":{` +
	`"items":{"type":"array","description":"one entry for every checklist item, by its id",` +
	`"items":{"type":"object","additionalProperties":false,"required":["id","status","evidence","reason"],"properties":{` +
	`"id":{"type":"string"},` +
	`"status":{"type":"string","enum":["passed","failed","not_run"]},` +
	`"evidence":{"type":"string","description":"what was run and its exit status, or which file and lines were read"},` +
	`"reason":{"type":"string"}}}},` +
	`"conclusion":{"type":"string","enum":["achieved","not_yet","unreachable"]},` +
	`"reason":{"type":"string"},` +
	`"missing":{"type":"string","description":"unreachable only: what is missing"},` +
	`"why_no_work":{"type":"string","description":"unreachable only: why no round of work can supply it"}}}`)

// GoalSchema is the JSON schema of the goal step's answer (GoalReply).
var GoalSchema = json.RawMessage(`{"type":"object","additionalProperties":false,` +
	`"required":["statement","checklist"],"properties":{` +
	`"statement":{"type":"string","minLength":1},` +
	`"checklist":{"type":"array","minItems":1,"maxItems":40,"items":{"type":"object","additionalProperties":false,` +
	`"required":["id","text"],"properties":{` +
	`"id":{"type":"string","pattern":"^[A-Za-z0-9][A-Za-z0-9_.-]{0,31}$"},` +
	`"text":{"type":"string","minLength":1},` +
	`"command":{"type":"string","description":"the shell command whose exit status decides the item, run from the workspace root; empty for an item checked by reading"},` +
	`"unverifiable":{"type":"string","description":"why the item cannot be verified on this machine; empty when it can"}}}}}}`)

// ErrUnreadable wraps every reason a structured answer cannot be read.
var ErrUnreadable = errors.New("the structured answer cannot be read")

// strict decodes raw into v, refusing unknown fields, trailing data and
// oversized input: the schema is flower's, and a field it does not know is
// a reply to some other question.
func strict(raw json.RawMessage, v any) error {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return fmt.Errorf("%w: there is none", ErrUnreadable)
	}
	if len(raw) > maxReplyBytes {
		return fmt.Errorf("%w: %d bytes, more than %d", ErrUnreadable, len(raw), maxReplyBytes)
	}
	if err := exactKeys(raw); err != nil {
		return fmt.Errorf("%w: %v", ErrUnreadable, err)
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return fmt.Errorf("%w: %v", ErrUnreadable, err)
	}
	if d.More() {
		return fmt.Errorf("%w: more than one JSON value", ErrUnreadable)
	}
	return nil
}

// schemaKeys are the keys of flower's structured answers, as the schemas
// spell them.
var schemaKeys = map[string]bool{
	"items": true, "conclusion": true, "reason": true, "missing": true, "why_no_work": true,
	"id": true, "status": true, "evidence": true,
	"statement": true, "checklist": true, "text": true, "command": true, "unverifiable": true,
}

// exactKeys refuses what encoding/json reads leniently: a key twice in
// one object (the last would win, a "passed" hiding a "failed") and a
// schema's key in other letters ("Status" read as "status").
func exactKeys(raw json.RawMessage) error {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	type frame struct {
		object bool
		keys   map[string]bool
		key    bool // the next string token is a key
	}
	var stack []*frame
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return nil // the decoder that follows says what is wrong
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if k, isKey := tok.(string); isKey && top != nil && top.object && top.key {
			switch {
			case top.keys[k]:
				return fmt.Errorf("the key %q appears twice in one object", k)
			case !schemaKeys[k] && schemaKeys[strings.ToLower(k)]:
				return fmt.Errorf("the key %q is spelt %q in the schema", k, strings.ToLower(k))
			}
			top.keys[k] = true
			top.key = false
			continue
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{object: true, keys: map[string]bool{}, key: true})
			continue
		case json.Delim('['):
			stack = append(stack, &frame{})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		// A value ended: in an object, a key comes next.
		if len(stack) > 0 && stack[len(stack)-1].object {
			stack[len(stack)-1].key = true
		}
	}
}

// ParseReply reads a round judge's structured answer and checks it against
// VerdictSchema's rules. It does not compare the items with the goal:
// Decide does.
func ParseReply(raw json.RawMessage) (*Reply, error) {
	var w struct {
		Items      *[]ItemVerdict `json:"items"`
		Conclusion *doc.State     `json:"conclusion"`
		Reason     *string        `json:"reason"`
		Missing    string         `json:"missing"`
		WhyNoWork  string         `json:"why_no_work"`
	}
	if err := strict(raw, &w); err != nil {
		return nil, err
	}
	switch {
	case w.Items == nil:
		return nil, fmt.Errorf("%w: no items", ErrUnreadable)
	case w.Conclusion == nil:
		return nil, fmt.Errorf("%w: no conclusion", ErrUnreadable)
	case w.Reason == nil:
		return nil, fmt.Errorf("%w: no reason", ErrUnreadable)
	}
	switch *w.Conclusion {
	case doc.Achieved, doc.NotYet, doc.Unreachable:
	default:
		return nil, fmt.Errorf("%w: conclusion %q is none of achieved, not_yet, unreachable", ErrUnreadable, *w.Conclusion)
	}
	for i, it := range *w.Items {
		switch it.Status {
		case Passed, Failed, NotRun:
		default:
			return nil, fmt.Errorf("%w: item %d (%q): status %q is none of passed, failed, not_run", ErrUnreadable, i+1, it.ID, it.Status)
		}
		if strings.TrimSpace(it.ID) == "" {
			return nil, fmt.Errorf("%w: item %d has no id", ErrUnreadable, i+1)
		}
	}
	return &Reply{Items: *w.Items, Conclusion: *w.Conclusion, Reason: *w.Reason, Missing: w.Missing, WhyNoWork: w.WhyNoWork}, nil
}

// ParseGoalReply reads the goal step's structured answer: a statement and
// one to MaxItems items, each with a distinct id.
func ParseGoalReply(raw json.RawMessage) (*GoalReply, error) {
	var g GoalReply
	if err := strict(raw, &g); err != nil {
		return nil, err
	}
	g.Statement = strings.TrimSpace(g.Statement)
	switch {
	case g.Statement == "":
		return nil, fmt.Errorf("%w: no statement", ErrUnreadable)
	case len(g.Checklist) == 0:
		return nil, fmt.Errorf("%w: an empty checklist", ErrUnreadable)
	case len(g.Checklist) > MaxItems:
		return nil, fmt.Errorf("%w: %d checklist items, more than %d", ErrUnreadable, len(g.Checklist), MaxItems)
	}
	seen := map[string]bool{}
	for i := range g.Checklist {
		it := &g.Checklist[i]
		it.ID, it.Text = strings.TrimSpace(it.ID), flat(it.Text)
		it.Command, it.Unverifiable = strings.TrimSpace(it.Command), flat(it.Unverifiable)
		switch {
		case !idPattern.MatchString(it.ID):
			return nil, fmt.Errorf("%w: item %d: id %q is not a short name (letters, digits, _ . -)", ErrUnreadable, i+1, it.ID)
		case seen[it.ID]:
			return nil, fmt.Errorf("%w: id %q is used twice", ErrUnreadable, it.ID)
		case it.Text == "":
			return nil, fmt.Errorf("%w: item %s has no text", ErrUnreadable, it.ID)
		case strings.ContainsAny(it.Command, "\n\r"):
			return nil, fmt.Errorf("%w: item %s: the command spans lines; give one shell line (join with && or ;)", ErrUnreadable, it.ID)
		}
		seen[it.ID] = true
	}
	return &g, nil
}

// Goal is the answer as the goal document the goal file keeps. The
// statement ends with the invariant (Invariant) whether or not the judge
// wrote it: a goal that does not forbid weakening its checks invites it.
func (g *GoalReply) Goal(lang doc.Lang) *doc.Goal {
	statement := g.Statement
	if inv := Invariant(lang); !strings.Contains(flat(statement), inv) {
		statement = strings.TrimSpace(statement) + "\n\n" + inv
	}
	out := &doc.Goal{Statement: statement}
	for _, it := range g.Checklist {
		out.Checks = append(out.Checks, it.Line(lang))
	}
	return out
}

// flat folds whitespace runs, newlines included, into single spaces: an
// item is one list line in the goal file.
func flat(s string) string { return strings.Join(strings.Fields(s), " ") }

// Decision is flower's reading of a round: the gate's state, decided from
// the items, and the verdict document rendered from them.
type Decision struct {
	// State is Achieved only when every item of the goal is present and
	// passed with evidence, none contradicted by flower's measurement, and
	// the judge concluded achieved; an item the goal marked unverifiable
	// never passes and is left out (Except), unless every item is one.
	// Unreachable only with its grounds.
	State doc.State
	// Verdict is the seed's verdict document (conclusion, reason, not
	// passed), for the person and the next round.
	Verdict *doc.Verdict
	// Problems say, in the run's language, why the judge's conclusion was
	// not taken as it stood (an item missing, unknown or contradicted, a
	// conclusion its items deny, an unreachable without grounds). The person
	// is told them, and so is the worker.
	Problems []string
	// Missing and WhyNoWork are an accepted unreachable's grounds.
	Missing, WhyNoWork string
	// Unmeasured are the command items an achieved round passed on the
	// judge's reading alone, flower having no run of theirs (no sandbox on
	// this machine, a caller that measures nothing): the round is
	// "achieved, not measured", and the verdict says so (Verdict.Unmeasured).
	Unmeasured []string
	// Flags are the change report's flags an achieved round was held to
	// (Flag): the round needs the person's look.
	Flags []string
	// Except are the items the goal marked unverifiable on this machine,
	// "[id] text — why", of an achieved round: they did not pass, and the
	// round is "achieved, except" them (Verdict.Except).
	Except []string
}

// Flag holds an achieved round to the change report's flags: with any, it
// needs the person's look (Verdict.Flags), whatever the judge said; the
// reason lists them. Another state is left as it is (the worker reads the
// flags in the next round's change report).
func (d *Decision) Flag(flags []Flag, lang doc.Lang) {
	if d.State != doc.Achieved || len(flags) == 0 {
		return
	}
	lines := make([]string, len(flags))
	for i, f := range flags {
		lines[i] = f.String()
	}
	d.Flags = lines
	d.Verdict.Flags = lines
	d.Verdict.Reason = strings.TrimSpace(d.Verdict.Reason + "\n\n" + fmt.Sprintf(textsFor(lang).needsLook, len(lines)) + "\n- " + strings.Join(lines, "\n- "))
}

// Passed reports whether the round passes.
func (d Decision) Passed() bool { return d.State == doc.Achieved }

// Decide reads a judge's reply against the goal's items and flower's own
// measurements (nil when none were taken). Words never decide: the state
// follows the items, and a conclusion more hopeful than its items is not
// taken.
func Decide(items []Item, ms []Measurement, r *Reply, lang doc.Lang) Decision {
	t := textsFor(lang)
	var problems, failed []string
	// An item judged more than once keeps its first finding that is
	// not a pass: a pass never outvotes a failure of the same item.
	byID := map[string]ItemVerdict{}
	tampered := map[string]bool{}
	for _, iv := range r.Items {
		var cut bool
		if iv.Evidence, cut = visibleText(iv.Evidence); cut {
			tampered[iv.ID] = true
		}
		first, dup := byID[iv.ID]
		if dup {
			if !slices.Contains(problems, fmt.Sprintf(t.twice, iv.ID)) {
				problems = append(problems, fmt.Sprintf(t.twice, iv.ID))
			}
			if first.Status != Passed {
				continue
			}
		}
		byID[iv.ID] = iv
	}
	known := map[string]bool{}
	for _, it := range items {
		known[it.ID] = true
	}
	var unknown []string
	for _, iv := range r.Items {
		if !known[iv.ID] && !slices.Contains(unknown, iv.ID) {
			unknown = append(unknown, iv.ID)
		}
	}
	if len(unknown) > 0 {
		problems = append(problems, fmt.Sprintf(t.unknown, strings.Join(unknown, ", ")))
	}
	measured := map[string]Measurement{}
	// Whether flower ran a command of the goal: where it measures nothing
	// (no sandbox here, a caller without measurements) it cannot tell,
	// and the judge's account stands.
	ran := ms == nil
	for _, m := range ms {
		measured[m.Item.ID] = m
		ran = ran || m.Unmeasurable || m.Err == "" && !m.TimedOut && m.Exit >= 0
	}
	allPassed := true
	var unmeasured, except []string
	unmeasuredWhy := "" // why the first unmeasured item was not measured
	for _, it := range items {
		iv, ok := byID[it.ID]
		line := "[" + it.ID + "] " + it.Text
		switch {
		case it.Unverifiable != "":
			// It cannot pass, whatever the judge said, nor hold the goal
			// back: an achieved round is "achieved, except" this item.
			except = append(except, line+" — "+it.Unverifiable)
		case !ok:
			allPassed = false
			problems = append(problems, fmt.Sprintf(t.absent, it.ID))
			failed = append(failed, line+" — "+t.notJudged)
		case iv.Status != Passed:
			allPassed = false
			failed = append(failed, line+" — "+firstNonEmpty(flat(iv.Reason), string(iv.Status)))
		case tampered[it.ID]:
			allPassed = false
			why := fmt.Sprintf(t.stripped, it.ID)
			problems = append(problems, why)
			failed = append(failed, line+" — "+why)
		case !hasLetterOrDigit(iv.Evidence):
			allPassed = false
			problems = append(problems, fmt.Sprintf(t.noEvidence, it.ID))
			failed = append(failed, line+" — "+t.noEvidenceShort)
		default:
			m, ok := measured[it.ID]
			switch {
			case !ok || m.Unmeasurable:
				// Nothing measured here (no sandbox on this machine, or a
				// caller that measures nothing): the judge's reading
				// stands, and an achieved round says it was not measured.
				if it.Command != "" {
					unmeasured = append(unmeasured, it.ID)
					if unmeasuredWhy == "" {
						unmeasuredWhy = cmp.Or(oneLine(m.Err, 200), "its caller gave no measurement")
					}
				}
			case m.Err != "":
				allPassed = false
				why := fmt.Sprintf(t.notMeasured, it.ID, m.Item.Command, m.Err)
				problems = append(problems, why)
				failed = append(failed, line+" — "+why)
			case m.Failed():
				allPassed = false
				why := fmt.Sprintf(t.contradicted, it.ID, m.Item.Command, m.Outcome(lang))
				problems = append(problems, why)
				failed = append(failed, line+" — "+why)
			}
		}
	}
	state := r.Conclusion
	switch r.Conclusion {
	case doc.Achieved:
		switch {
		case !allPassed || len(unknown) > 0 || len(items) == 0:
			state = doc.NotYet
			problems = append(problems, t.contradicts)
		case len(except) == len(items):
			state = doc.NotYet
			problems = append(problems, t.noneVerifiable)
		}
	case doc.Unreachable:
		// Something was run: one of flower's measurements, or, where the
		// goal has no command, nothing could be.
		commands := len(Commands(items)) > 0
		switch {
		case strings.TrimSpace(r.Missing) == "" || strings.TrimSpace(r.WhyNoWork) == "":
			state = doc.NotYet
			problems = append(problems, t.groundless)
		case allPassed || commands && !ran:
			state = doc.NotYet
			problems = append(problems, t.nothingRun)
		}
	}
	if state != doc.Achieved {
		unmeasured, except = nil, nil
	}
	reason := strings.TrimSpace(r.Reason)
	if len(except) > 0 {
		reason = strings.TrimSpace(reason + "\n\n" + t.except + "\n- " + strings.Join(except, "\n- "))
	}
	if len(unmeasured) > 0 {
		reason = strings.TrimSpace(reason + "\n\n" + fmt.Sprintf(t.unmeasured, strings.Join(unmeasured, ", "), unmeasuredWhy))
	}
	if state == doc.Unreachable {
		reason = strings.TrimSpace(reason + "\n\n" + fmt.Sprintf(t.grounds, flat(r.Missing), flat(r.WhyNoWork)))
	}
	if len(problems) > 0 {
		reason = strings.TrimSpace(reason + "\n\n" + t.problemsHead + "\n- " + strings.Join(problems, "\n- "))
	}
	d := Decision{State: state, Problems: problems, Unmeasured: unmeasured, Except: except,
		Verdict: &doc.Verdict{State: state, Reason: reason, Failed: failed, Unmeasured: unmeasured, Except: except}}
	if len(unmeasured) > 0 {
		d.Verdict.UnmeasuredWhy = unmeasuredWhy
	}
	if state == doc.Unreachable {
		d.Missing, d.WhyNoWork = flat(r.Missing), flat(r.WhyNoWork)
	}
	return d
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if strings.TrimSpace(x) != "" {
			return x
		}
	}
	return ""
}

// visibleText is s without control characters (but newline and tab),
// zero-width ones and those that change the direction text is shown in
// (an RTL override shows "FAIL" as "LIAF"), and whether any was cut.
func visibleText(s string) (string, bool) {
	cut := false
	out := strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\t':
			return r
		case unicode.IsControl(r), unicode.Is(unicode.Cf, r), r == '\u2028', r == '\u2029':
			// Cf holds the zero-width characters (U+200B–U+200F,
			// U+2060, U+FEFF) and the direction marks, embeddings,
			// overrides and isolates (U+202A–U+202E, U+2066–U+2069).
			cut = true
			return -1
		}
		return r
	}, s)
	return out, cut
}

// hasLetterOrDigit reports whether s holds anything one can read.
func hasLetterOrDigit(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) })
}
