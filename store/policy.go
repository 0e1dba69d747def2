package store

import (
	"fmt"
	"path/filepath"
)

// Policies follow one convention, so that the zero value of each is its
// documented default and every part can still be switched off:
//
//   - Disabled (a true bool) switches a whole layer off; the zero value is on.
//   - Keep… booleans on PrunePolicy switch one part off ("keep what that part
//     would remove or rewrite"); the zero value is on.
//   - A count or size of 0 means the default; a negative value stands for an
//     explicit zero (KeepDenials: -1 keeps no denial at all).
//   - An empty text means the default text.
//
// The Default… constructors return the defaults spelled out; they behave
// exactly like the zero values.

// Defaults of the three policies (spec-supplement §3.3–§3.5).
const (
	DefaultTrimKeepRecent      = 20
	DefaultTrimMinChars        = 2000
	DefaultSpillDirname        = ".flower/spill"
	DefaultEphemeralKeepRecent = 6
	DefaultEphemeralMaxChars   = 2000
	DefaultKeepDenials         = 1

	// DefaultExpiryText replaces an expired result: {cmd} becomes the
	// command's first line (at most 60 characters) in backticks, {age} the
	// number of ephemeral results from this one to the newest.
	DefaultExpiryText = "[{cmd} 的结果已过期(第 {age} 轮前),当前状态可能已变。需要请重新执行]"
	// DefaultExpiryPointerText follows the expiry text of a result that
	// pointed to a file (a spill, the CLI's persisted output): {path}
	// becomes the file or files it named.
	DefaultExpiryPointerText = "(当时的完整输出仍在 {path},需要时用 Read 读取)"
	// DefaultInterruptText replaces the content of an interrupted tool result.
	DefaultInterruptText = "[上一轮在此处被中断,该工具结果未产生]"
	// DefaultOrphanText is the content of the tool result inserted for a
	// tool_use that never got one.
	DefaultOrphanText = "[这一步被打断了,没有结果。需要的话重做。]"
	// DefaultTrimStub replaces a trimmed result: {chars} becomes its length
	// in characters, {path} the spill file, relative to the workspace.
	DefaultTrimStub = "[工具结果已归档:{chars} 字符。完整内容在 {path},需要时用 Read 读取]"
)

// TrimPolicy trims by size at load time: old tool results of at least
// MinChars characters are spilled to files in the workspace and replaced by a
// pointer. The zero value is the default policy (on, 20, 2000, ".flower/spill").
type TrimPolicy struct {
	// Disabled switches trimming off. Default false: trimming is on.
	Disabled bool
	// KeepRecent is how many of the newest sites (tool results) are never
	// trimmed. 0 means 20; negative means none is exempt.
	KeepRecent int
	// MinChars is the size, in characters, from which a result is trimmed.
	// 0 means 2000; negative means 0 (every result).
	MinChars int
	// SpillDirname is the spill directory, relative to the workspace; it must
	// stay inside it (checked lexically). Empty means ".flower/spill". It is
	// not the spill guard's <workbench root>/spill: the two differ on purpose.
	SpillDirname string
	// Stub replaces a trimmed result; {chars} and {path} are filled in.
	// Empty means DefaultTrimStub.
	Stub string
}

// DefaultTrimPolicy returns the default trim policy with every field spelled
// out; it behaves exactly like TrimPolicy{}.
func DefaultTrimPolicy() TrimPolicy { return TrimPolicy{}.withDefaults() }

func (p TrimPolicy) withDefaults() TrimPolicy {
	if p.KeepRecent == 0 {
		p.KeepRecent = DefaultTrimKeepRecent
	}
	if p.MinChars == 0 {
		p.MinChars = DefaultTrimMinChars
	}
	if p.SpillDirname == "" {
		p.SpillDirname = DefaultSpillDirname
	}
	if p.Stub == "" {
		p.Stub = DefaultTrimStub
	}
	return p
}

// validate checks a policy that went through withDefaults.
func (p TrimPolicy) validate() error {
	if p.Disabled {
		return nil
	}
	if filepath.IsAbs(p.SpillDirname) || !filepath.IsLocal(p.SpillDirname) {
		return &PolicyError{Field: "TrimPolicy.SpillDirname", Value: p.SpillDirname,
			Reason: "must be a relative path that stays inside the workspace, like " + DefaultSpillDirname}
	}
	return nil
}

// EphemeralPolicy expires, at load time, the results of read-only commands
// whose output goes stale (git status, ls…, as ephemeral.Is decides). The zero
// value is the default policy (on, 6, 2000, DefaultExpiryText).
type EphemeralPolicy struct {
	// Disabled switches expiry off. Default false: expiry is on.
	Disabled bool
	// KeepRecent is how many of the newest ephemeral results are never
	// expired. 0 means 6; negative means none is exempt.
	KeepRecent int
	// MaxChars: ephemeral results longer than this are left to trimming.
	// 0 means 2000; negative means 0 (only empty results expire).
	MaxChars int
	// Text replaces an expired result; {cmd} and {age} are filled in.
	// Empty means DefaultExpiryText.
	Text string
	// PointerText follows Text when the expired result pointed to a file,
	// so the model still knows where that output is; {path} is filled in.
	// Empty means DefaultExpiryPointerText.
	PointerText string
}

// DefaultEphemeralPolicy returns the default expiry policy with every field
// spelled out; it behaves exactly like EphemeralPolicy{}.
func DefaultEphemeralPolicy() EphemeralPolicy { return EphemeralPolicy{}.withDefaults() }

func (p EphemeralPolicy) withDefaults() EphemeralPolicy {
	if p.KeepRecent == 0 {
		p.KeepRecent = DefaultEphemeralKeepRecent
	}
	if p.MaxChars == 0 {
		p.MaxChars = DefaultEphemeralMaxChars
	}
	if p.Text == "" {
		p.Text = DefaultExpiryText
	}
	if p.PointerText == "" {
		p.PointerText = DefaultExpiryPointerText
	}
	return p
}

// PrunePolicy removes, at load time, what is an error rather than history.
// Every part is on in the zero value and each can be switched off alone.
type PrunePolicy struct {
	// Disabled switches the whole prune layer off. Default false: on.
	Disabled bool
	// KeepAPIErrors keeps synthetic API-error entries (isApiErrorMessage or
	// message.model "<synthetic>"). Default false: they are dropped.
	KeepAPIErrors bool
	// KeepInterrupts leaves interrupted tool results ("[Request interrupted",
	// is_error) as they are. Default false: their content becomes
	// InterruptText and is_error false.
	KeepInterrupts bool
	// InterruptText is the neutral content of an interrupted result. Empty
	// means DefaultInterruptText.
	InterruptText string
	// KeepOrphans leaves a tool_use without a tool_result unhealed (every
	// resume then fails with a 400). Default false: a result is inserted.
	KeepOrphans bool
	// OrphanText is the content of an inserted result. Empty means
	// DefaultOrphanText.
	OrphanText string
	// KeepAllDenials keeps every permission denial. Default false: only the
	// newest KeepDenials are kept.
	KeepAllDenials bool
	// KeepDenials is how many of the newest permission denials stay; older
	// ones lose their tool_use and tool_result. 0 means 1 (one stops
	// same-turn retries; more teach helplessness); negative means none stays.
	KeepDenials int
}

// DefaultPrunePolicy returns the default prune policy with every field spelled
// out; it behaves exactly like PrunePolicy{}.
func DefaultPrunePolicy() PrunePolicy { return PrunePolicy{}.withDefaults() }

func (p PrunePolicy) withDefaults() PrunePolicy {
	if p.InterruptText == "" {
		p.InterruptText = DefaultInterruptText
	}
	if p.OrphanText == "" {
		p.OrphanText = DefaultOrphanText
	}
	if p.KeepDenials == 0 {
		p.KeepDenials = DefaultKeepDenials
	}
	return p
}

// atLeastZero reads a resolved count: negative stands for an explicit zero.
func atLeastZero(n int) int {
	if n < 0 {
		return 0
	}
	return n
}

// PolicyError reports a policy or constructor argument that cannot work.
type PolicyError struct {
	Field  string // e.g. "TrimPolicy.SpillDirname"
	Value  string
	Reason string // what is wrong and what to do
}

func (e *PolicyError) Error() string {
	return fmt.Sprintf("store: %s %q: %s", e.Field, e.Value, e.Reason)
}
