package flower

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"strings"
)

// PromptFiles holds the rule texts and fixed prompts as shipped, one folder
// per language: prompts/zh/*.md and prompts/en/*.md (the files LoadPrompts
// reads). Read them to see exactly what the model is told; copy a
// folder, edit it and load it with LoadPrompts to replace them.
//
//go:embed prompts
var PromptFiles embed.FS

// Prompts are the texts flower feeds the model: the five rule texts the
// roles carry and the fixed prompts of the runtime and the workflow. A
// placeholder is a word in braces, filled by the method named on the field.
//
// The original flower gives none of the rule texts, only the points they
// must carry; both languages are written anew from those points. Resume in
// Chinese is the original's literal.
type Prompts struct {
	// CoordinatorRules (coordinator.md) head the coordinator's
	// instructions: dispatch, don't touch; relay the workbench rule; inbox
	// after milestones, ask only at real forks; a check that looks wrong
	// goes to the person, never changed.
	CoordinatorRules string
	// WorkerRules (worker.md) follow a worker's prompt: the four-part
	// report of at most 30 lines, scripts/ with "# desc:"; no check gamed,
	// and a check that looks wrong said so, not changed.
	WorkerRules string
	// ClarifierRules (clarifier.md) head the clarifier's instructions: ask
	// only what changes the answer, one question at a time, then the
	// four-part brief.
	ClarifierRules string
	// JudgeRules (judge.md) head the judge's instructions, both answered
	// through structured output: A. set a goal, its statement carrying the
	// invariant that no check is weakened, and its checklist items with
	// ids and commands; B. judge a round: every item passed, failed or
	// not run with its evidence, then achieved, not yet or unreachable.
	// They name the kinds of gaming, and a check passed by gaming fails.
	JudgeRules string
	// OracleRules (oracle.md) head the oracle's instructions: read-only
	// answers beside a running run.
	OracleRules string

	// Handoff (handoff.md) asks a session whose context is nearly full for
	// its five-part handoff: {used} and {window}, see HandoffPrompt.
	Handoff string
	// SetGoal (set_goal.md) asks a judge to turn a brief into a goal:
	// {brief}, see SetGoalPrompt.
	SetGoal string
	// Verify (verify.md) asks a fresh judge to rule on one round: {goal},
	// {measured}, {report} and {changes}, see VerifyPrompt.
	Verify string
	// ClarifyResume (clarify_resume.md) continues an unfinished
	// clarification in its own session.
	ClarifyResume string
	// InterruptNote (interrupt_note.md) follows the human's words when an
	// interrupted session is resumed: the calls cut at the interrupt are
	// not a fault.
	InterruptNote string
	// Resume (resume.md) resumes a session after a retryable failure. It
	// deliberately carries no error detail.
	Resume string
}

// promptFileNames maps each file of a prompts folder to its field.
var promptFileNames = []struct {
	name  string
	field func(*Prompts) *string
}{
	{"coordinator.md", func(p *Prompts) *string { return &p.CoordinatorRules }},
	{"worker.md", func(p *Prompts) *string { return &p.WorkerRules }},
	{"clarifier.md", func(p *Prompts) *string { return &p.ClarifierRules }},
	{"judge.md", func(p *Prompts) *string { return &p.JudgeRules }},
	{"oracle.md", func(p *Prompts) *string { return &p.OracleRules }},
	{"handoff.md", func(p *Prompts) *string { return &p.Handoff }},
	{"set_goal.md", func(p *Prompts) *string { return &p.SetGoal }},
	{"verify.md", func(p *Prompts) *string { return &p.Verify }},
	{"clarify_resume.md", func(p *Prompts) *string { return &p.ClarifyResume }},
	{"interrupt_note.md", func(p *Prompts) *string { return &p.InterruptNote }},
	{"resume.md", func(p *Prompts) *string { return &p.Resume }},
}

// LoadPrompts reads a prompts folder laid out like PromptFiles'
// prompts/<lang>: the eleven files coordinator.md, worker.md,
// clarifier.md, judge.md, oracle.md, handoff.md, set_goal.md, verify.md,
// clarify_resume.md, interrupt_note.md and resume.md. Each text loses its
// surrounding blank space. A missing, unreadable or empty file is an error
// naming it: a silently empty rule text would leave a role without its
// rules.
func LoadPrompts(fsys fs.FS, dir string) (Prompts, error) {
	var p Prompts
	for _, f := range promptFileNames {
		name := path.Join(dir, f.name)
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			return Prompts{}, fmt.Errorf("flower: prompts: %w", err)
		}
		text := strings.TrimSpace(string(data))
		if text == "" {
			return Prompts{}, fmt.Errorf("flower: prompts: %s is empty", name)
		}
		*f.field(&p) = text
	}
	return p, nil
}

// The shipped prompts, read once. The files are compiled in and a test
// reads every one of them, so failing here means a broken build.
var (
	chinesePrompts = mustLoadPrompts("prompts/zh")
	englishPrompts = mustLoadPrompts("prompts/en")
)

func mustLoadPrompts(dir string) Prompts {
	p, err := LoadPrompts(PromptFiles, dir)
	if err != nil {
		panic(err)
	}
	return p
}

// PromptsFor returns the shipped texts of a language: English for "en" and
// its regional forms ("en-US", "en_GB"), Chinese for anything else, the
// zero Lang included. The result is a copy: changing it changes nothing
// else.
func PromptsFor(lang Lang) Prompts {
	if lang.IsEnglish() {
		return englishPrompts
	}
	return chinesePrompts
}

// fill replaces each {key} of text with its value in one pass, so a value
// that itself holds "{key}" is left alone.
func fill(text string, pairs ...string) string {
	args := make([]string, 0, len(pairs))
	for i := 0; i+1 < len(pairs); i += 2 {
		args = append(args, "{"+pairs[i]+"}", pairs[i+1])
	}
	return strings.NewReplacer(args...).Replace(text)
}

// HandoffPrompt fills Handoff: used and window are the context used and the
// window as the original showed them, e.g. "152.0K" and "200K".
func (p Prompts) HandoffPrompt(used, window string) string {
	return fill(p.Handoff, "used", used, "window", window)
}

// SetGoalPrompt fills SetGoal with the brief's prompt block.
func (p Prompts) SetGoalPrompt(brief string) string {
	return fill(p.SetGoal, "brief", brief)
}

// VerifyPrompt fills Verify with the goal's prompt block, the worker's
// reply for the round, the change report flower computed and flower's own
// measurements of the checklist's commands. A Verify text written before
// {changes} or {measured} existed gets what it lacks at its end, the
// change report first: the judge must see both.
func (p Prompts) VerifyPrompt(goal, report, changes, measured string) string {
	text := p.Verify
	for _, add := range []struct{ key, value string }{{"changes", changes}, {"measured", measured}} {
		if !strings.Contains(text, "{"+add.key+"}") && strings.TrimSpace(add.value) != "" {
			text += "\n\n{" + add.key + "}"
		}
	}
	return fill(text, "goal", goal, "report", report, "changes", changes, "measured", measured)
}
