// Package report gathers what a flower run directory and its workbench
// record (the manifest, events.jsonl, lineage.json, the session store, the
// human channel's files, the side questions' own run directory under
// aside/) into one Report, and renders it as a self-contained HTML page.
// It only reads: the session store is opened read-only and takes no write
// lock, so a report of a live run never blocks it, and nothing is written
// into the run directory or the workbench.
//
// A file that is missing is shown as absent; a file that cannot be read is
// named in Report.Problems and the rest of the report is still built. Only
// a directory that does not exist or holds no run at all is an error
// (ErrNoDir, ErrNoRun).
package report

import (
	"errors"
	"time"
)

// ErrNoDir is wrapped by Gather's error for a run directory that does not
// exist (or is no directory).
var ErrNoDir = errors.New("no such run directory")

// ErrNoRun is wrapped by Gather's error for a directory that holds none of
// a run's records.
var ErrNoRun = errors.New("no flower run in this directory")

// Report is everything the page shows, and what --json prints.
type Report struct {
	RunDir    string    `json:"run_dir"`
	Workspace string    `json:"workspace"`
	Generated time.Time `json:"generated"`
	Language  string    `json:"language,omitempty"`
	// Request is the prompt that started the run, as its first step's
	// session keeps it; "" when the store lacks it.
	Request string `json:"request,omitempty"`
	// Outcome is how the last wake ended.
	Outcome Outcome `json:"outcome"`
	// DurationS is the wakes' wall-clock time, summed (the days between
	// wakes are not in it).
	DurationS float64 `json:"duration_s"`
	// TokensIn and TokensOut are the manifest's own count, as the
	// terminal's ending shows it: what the steps' turns read (input, cache
	// read and cache creation together) and wrote.
	TokensIn  int `json:"tokens_in"`
	TokensOut int `json:"tokens_out"`
	// Tokens are every stored model call's, main threads, subagents and
	// side questions, by kind: where the count above went.
	Tokens Tokens `json:"tokens"`
	// ByWake is one column per wake.
	ByWake []Wake `json:"by_wake"`
	// Wakes is lineage.json's woke: how many times the directory was run.
	Wakes int `json:"wakes"`
	// Runs are the Runtime ids seen (manifest and events), in order.
	Runs []string `json:"runs"`
	// Budget is the run budget in USD the last run recorded; 0 when none
	// was set or an older flower did not record it.
	Budget float64 `json:"budget,omitempty"`
	// Window and HandoffAt are the context window and the handoff
	// threshold in tokens, as recorded; 0 when unknown.
	Window    int `json:"window,omitempty"`
	HandoffAt int `json:"handoff_at,omitempty"`

	Steps     []Step      `json:"steps"`
	Timeline  []Moment    `json:"timeline"`
	Cost      Cost        `json:"cost"`
	Context   []Turn      `json:"context"`
	Threads   Threads     `json:"threads"`
	Sessions  []Session   `json:"sessions"`
	Verdicts  []Verdict   `json:"verdicts"`
	Questions []Question  `json:"questions"`
	Inbox     []Mail      `json:"inbox"`
	Tools     []ToolCount `json:"tools"`
	Denials   []Denial    `json:"denials"`
	Spills    Spills      `json:"spills"`
	Scripts   []Script    `json:"scripts"`
	Documents []Document  `json:"documents"`
	// LogWrittenByTool names the workspace's Q&A log when it differs from
	// flower's own copy: a tool wrote it, and Questions come from the copy.
	LogWrittenByTool string `json:"log_written_by_tool,omitempty"`
	// PutBack are the goal guard's words, in the run's language, on each
	// file a tool wrote that was the person's or flower's and was put
	// back (events.jsonl).
	PutBack []string `json:"put_back"`
	// LogUnchecked: flower kept no copy of the Q&A log (a run from before
	// it did, or the copy is gone), so Questions come from the workspace's
	// file and an answer in it cannot be told from one a tool wrote.
	LogUnchecked bool `json:"log_unchecked,omitempty"`
	// Problems names every file that could not be read, and why.
	Problems []string `json:"problems"`
}

// Step is one manifest row (or the aside run's, for the oracle).
type Step struct {
	Label     string    `json:"step"`
	Run       string    `json:"run,omitempty"`
	Wake      int       `json:"wake"`
	Role      string    `json:"role"`
	Round     int       `json:"round,omitempty"`
	OK        bool      `json:"ok"`
	Error     string    `json:"error,omitempty"`
	CostUSD   float64   `json:"cost_usd"`
	TokensIn  int       `json:"tokens_in"`
	TokensOut int       `json:"tokens_out"`
	NumTurns  int       `json:"num_turns"`
	Attempts  int       `json:"attempts"`
	Resumed   bool      `json:"resumed"`
	SessionID string    `json:"session_id,omitempty"`
	Retired   []string  `json:"retired,omitempty"`
	Context   int       `json:"context"`
	StartedAt time.Time `json:"started_at,omitzero"`
	EndedAt   time.Time `json:"ended_at,omitzero"`
	DurationS float64   `json:"duration_s"`
	Errors    []string  `json:"errors,omitempty"`
	// Aside marks a row of aside/manifest.json (a side question).
	Aside bool `json:"aside,omitempty"`

	text string // the row's text: a clarify step's brief
}

// Moment is one thing on the timeline.
type Moment struct {
	Time time.Time `json:"time,omitzero"`
	Run  string    `json:"run,omitempty"`
	Wake int       `json:"wake"`
	Step string    `json:"step,omitempty"`
	// Kind: step, session, retry, interrupt (Text holds the human's
	// words), usage_limit, offline, handoff, ask (a wait for the human;
	// Answer holds the reply), verdict, rate_limit, loop.
	Kind string `json:"kind"`
	Text string `json:"text"`
	// Seconds is how long a wait lasted, when known.
	Seconds float64 `json:"seconds,omitempty"`
	// Answer is the human's answer to an ask, from the Q&A log.
	Answer string `json:"answer,omitempty"`
	// Settled is how an ask was settled, from the Q&A log: answered,
	// timeout, declined, cancelled, over_budget. Where nobody answered,
	// Answer is the text the model was given instead, and the page shows
	// the state in words.
	Settled string `json:"settled,omitempty"`
}

// Amount is a cost under a name, and its share of the total.
type Amount struct {
	Name  string  `json:"name"`
	USD   float64 `json:"usd"`
	Share float64 `json:"share"`
}

// Cost splits the run's cost; every list is sorted largest first. Total
// and ByStep are the manifest's own figures. ByRole and ByModel split each
// step's cost over its threads and models by their token weight (input 1,
// cache write 1.25, cache read 0.1, output 5: the ratios of Anthropic's
// prices); a step with no stored tokens goes whole to its own role and to
// model "unknown". ByRound puts what ran outside the work rounds (clarify,
// goal, the bequest, side questions) under "outside rounds". Drivers are
// the step-and-role parts of the total, the largest first.
type Cost struct {
	Total   float64  `json:"total"`
	ByStep  []Amount `json:"by_step"`
	ByRound []Amount `json:"by_round"`
	ByRole  []Amount `json:"by_role"`
	ByModel []Amount `json:"by_model"`
	Drivers []Driver `json:"drivers"`
	Budget  float64  `json:"budget,omitempty"`
}

// OutsideRounds and UnknownModel are the names of ByRound's and ByModel's
// catch-alls.
const (
	OutsideRounds = "outside rounds"
	UnknownModel  = "unknown"
)

// Turn is one main-thread model call: the context it read.
type Turn struct {
	N       int       `json:"n"`
	Step    string    `json:"step"`
	Session string    `json:"session"`
	Time    time.Time `json:"time,omitzero"`
	Tokens  int       `json:"tokens"`
	// Handoff marks the first turn of a successor session.
	Handoff bool `json:"handoff,omitempty"`
}

// Tokens are summed usage.
type Tokens struct {
	Input         int `json:"input"`
	Output        int `json:"output"`
	CacheRead     int `json:"cache_read"`
	CacheCreation int `json:"cache_creation"`
}

// weight is the token mix priced relative to an uncached input token.
func (t Tokens) weight() float64 {
	return float64(t.Input) + 1.25*float64(t.CacheCreation) + 0.1*float64(t.CacheRead) + 5*float64(t.Output)
}

func (t *Tokens) add(u Tokens) {
	t.Input += u.Input
	t.Output += u.Output
	t.CacheRead += u.CacheRead
	t.CacheCreation += u.CacheCreation
}

// Thread is what one side (main thread or subagents) put in the store.
type Thread struct {
	Entries int    `json:"entries"`
	Turns   int    `json:"turns"`
	Chars   int    `json:"chars"`
	Tokens  Tokens `json:"tokens"`
}

// Threads is main thread against subagents, plus the cache's share.
type Threads struct {
	Main Thread `json:"main"`
	Sub  Thread `json:"subagents"`
	// CacheReuse is cache read / (cache read + cache write), all threads.
	CacheReuse float64 `json:"cache_reuse"`
}

// Session is one stored session.
type Session struct {
	ID     string `json:"id"`
	Main   Thread `json:"main"`
	Sub    Thread `json:"subagents"`
	Agents int    `json:"agents"`
	Model  string `json:"model,omitempty"`
}

// Verdict is a judge's ruling, read from its manifest row.
type Verdict struct {
	Step   string   `json:"step"`
	Round  int      `json:"round,omitempty"`
	State  string   `json:"state"`
	Reason string   `json:"reason,omitempty"`
	Failed []string `json:"failed,omitempty"`
}

// Question is one ask, settled (from the Q&A log) or waiting.
type Question struct {
	ID       string   `json:"id"`
	Question string   `json:"question"`
	Options  []string `json:"options,omitempty"`
	State    string   `json:"state"`
	Answer   string   `json:"answer,omitempty"`
}

// Mail is something the human said on their own.
type Mail struct {
	ID    string `json:"id,omitempty"`
	Text  string `json:"text"`
	State string `json:"state"`
}

// ToolCount is how often a tool was called, on each side.
type ToolCount struct {
	Tool string `json:"tool"`
	Main int    `json:"main"`
	Sub  int    `json:"subagents"`
}

// Denial is a call a wall refused.
type Denial struct {
	Step  string `json:"step"`
	Tool  string `json:"tool"`
	Tried string `json:"tried"`
	Why   string `json:"why"`
}

// Spills is what the spill guard and the trimmer kept out of the context:
// the files in the workbench's spill/ (the pointer and preview that stayed
// are a few hundred characters each).
type Spills struct {
	Files int   `json:"files"`
	Bytes int64 `json:"bytes"`
	// Pointers counts tool results that came back as a spill pointer
	// (spilled when the call was made); the other files were trimmed when
	// a session resumed.
	Pointers int `json:"pointers"`
}

// Script is a workbench script and how often a Bash call ran it.
type Script struct {
	Name string `json:"name"`
	Runs int    `json:"runs"`
}

// Document is a file on disk the page links to.
type Document struct {
	Name string `json:"name"`
	Path string `json:"path"`
	// Href is the link from the page: relative to the page's folder.
	Href   string `json:"href,omitempty"`
	Exists bool   `json:"exists"`
}
