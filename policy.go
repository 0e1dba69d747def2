package flower

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// ErrInvalidPolicy is wrapped by every error about a policy's values.
var ErrInvalidPolicy = errors.New("flower: invalid policy")

// Handoff defaults.
const (
	// DefaultMaxGenerations is how many handoffs one step may make.
	DefaultMaxGenerations = 8
	// MinHeadroom is the least room a handoff leaves for the handoff turn.
	MinHeadroom = 50_000
	// MaxDegradedInARow is how many degraded handoffs in a row stop a step:
	// a successor fed an empty handoff rediscovers, fills up and degrades
	// again, at full price each time.
	MaxDegradedInARow = 2
)

// HandoffPolicy decides when a session hands off: near the end of the
// context window the session writes a handoff document and a fresh session
// continues from it, instead of the CLI's compaction.
//
// The zero value is the default policy: enabled, Window = DefaultWindow(),
// Headroom = max(50_000, Window/4), MaxGenerations = 8. The headroom departs
// from the original's fixed 50_000 on purpose: on a 1M window that left the
// handoff turn no room, and every handoff degraded.
type HandoffPolicy struct {
	// Disabled turns handoffs off; the CLI's auto-compaction then applies.
	// Default false: handoffs are on.
	Disabled bool
	// Window is the context window in tokens. 0 means DefaultWindow().
	Window int
	// Headroom is the room kept below Window for the handoff turn. 0 means
	// max(MinHeadroom, Window/4).
	Headroom int
	// MaxGenerations is the runaway brake: how many handoffs one step may
	// make. 0 means 8.
	MaxGenerations int
}

// DefaultHandoffPolicy returns the default policy with every field spelled
// out (the window read from the environment now); it behaves exactly like
// HandoffPolicy{}.
func DefaultHandoffPolicy() HandoffPolicy { return HandoffPolicy{}.Resolved() }

// Resolved fills the zero fields with their defaults. The runtime resolves
// its policy once, so the window does not change under a running step.
func (p HandoffPolicy) Resolved() HandoffPolicy {
	if p.Window == 0 {
		p.Window = DefaultWindow()
	}
	if p.Headroom == 0 {
		p.Headroom = max(MinHeadroom, p.Window/4)
	}
	if p.MaxGenerations == 0 {
		p.MaxGenerations = DefaultMaxGenerations
	}
	return p
}

// Enabled reports whether handoffs are on.
func (p HandoffPolicy) Enabled() bool { return !p.Disabled }

// Validate reports negative values, which mean nothing.
func (p HandoffPolicy) Validate() error {
	switch {
	case p.Window < 0:
		return fmt.Errorf("%w: handoff window %d: give a positive number of tokens (0 = guess from the model name)", ErrInvalidPolicy, p.Window)
	case p.Headroom < 0:
		return fmt.Errorf("%w: handoff headroom %d: give a positive number of tokens (0 = a quarter of the window, at least 50000)", ErrInvalidPolicy, p.Headroom)
	case p.MaxGenerations < 0:
		return fmt.Errorf("%w: max generations %d: give a positive number (0 = 8)", ErrInvalidPolicy, p.MaxGenerations)
	}
	return nil
}

// At is the context (tokens) from which the session hands off:
// max(10_000, window − headroom). 200k → 150k; 1M → 750k.
func (p HandoffPolicy) At() int {
	p = p.Resolved()
	return max(10_000, p.Window-p.Headroom)
}

// WarnAt is where the single "near" notice of a generation is given:
// max(1_000, At − 20_000). 200k → 130k; 1M → 730k.
func (p HandoffPolicy) WarnAt() int { return max(1_000, p.At()-20_000) }

// StopReason says why a step must stop instead of handing off again, or ""
// to go on. generations is how many handoffs the step made so far;
// degradedInARow how many of the latest were degraded without a break. The
// texts are the step's error, shown to the human, in lang; they name the
// command's --no-handoff flag.
func (p HandoffPolicy) StopReason(lang Lang, generations, degradedInARow int) string {
	p = p.Resolved()
	t := textsFor(lang)
	if generations >= p.MaxGenerations {
		return fmt.Sprintf(t.stopGenerations, generations, p.At(), p.Window)
	}
	if degradedInARow >= MaxDegradedInARow {
		return fmt.Sprintf(t.stopDegraded, degradedInARow, p.At(), p.Headroom, p.Window)
	}
	return ""
}

// Compaction modes of CompactPolicy.
const (
	// CompactAuto leaves the CLI's auto-compaction on (at window − 33k).
	CompactAuto = "auto"
	// CompactNoSummary turns auto-compaction off (DISABLE_AUTO_COMPACT=1);
	// the runtime forces it while handoffs are on and the spec sets none.
	CompactNoSummary = "no_summary"
	// CompactOff turns every compaction off, /compact too (DISABLE_COMPACT=1).
	CompactOff = "off"
)

// CompactPolicy switches the CLI's own compaction. Its algorithm lives in
// the CLI binary; only whether it fires can be chosen, through the child's
// environment. The zero value is auto with the CLI's window.
type CompactPolicy struct {
	// Mode is CompactAuto (or ""), CompactNoSummary or CompactOff.
	Mode string
	// Window sets CLAUDE_CODE_AUTO_COMPACT_WINDOW (the CLI clamps it to
	// 100k–1M). 0 leaves it unset.
	Window int
}

// Env is the environment the child CLI gets for this policy. An unknown
// mode or a negative window is an error naming what is valid.
func (p CompactPolicy) Env() (map[string]string, error) {
	env := map[string]string{}
	switch p.Mode {
	case "", CompactAuto:
	case CompactNoSummary:
		env["DISABLE_AUTO_COMPACT"] = "1"
	case CompactOff:
		env["DISABLE_COMPACT"] = "1"
	default:
		return nil, fmt.Errorf("%w: unknown compact mode %q: use %q, %q or %q", ErrInvalidPolicy, p.Mode, CompactAuto, CompactNoSummary, CompactOff)
	}
	if p.Window < 0 {
		return nil, fmt.Errorf("%w: compact window %d: give a positive number of tokens, or 0 for the CLI's own", ErrInvalidPolicy, p.Window)
	}
	if p.Window > 0 {
		env["CLAUDE_CODE_AUTO_COMPACT_WINDOW"] = strconv.Itoa(p.Window)
	}
	return env, nil
}

// Window sizes DefaultWindow guesses.
const (
	LargeWindow = 1_000_000
	SmallWindow = 200_000
)

// oneM matches a standalone "1m" in a model name, as in claude-opus-5[1m].
var oneM = regexp.MustCompile(`(?:^|[^a-z0-9])1m(?:[^a-z0-9]|$)`)

// DefaultWindow guesses the context window, in tokens:
//
//   - FLOWER_WINDOW, when it is a positive integer (anything else is
//     ignored with a warning in the log);
//   - else by the model name, ANTHROPIC_MODEL or else
//     ANTHROPIC_DEFAULT_OPUS_MODEL, lower-cased: a standalone "1m" means
//     1_000_000 (checked first), a name containing "haiku" 200_000, and any
//     other name, unknown or unset, 1_000_000.
//
// An unknown model name is not an error: guessing too high is survivable
// (the API answers "prompt is too long", which the runtime turns into one
// degraded handoff), and guessing too low only hands off early.
func DefaultWindow() int { return defaultWindow(os.Getenv) }

var warnedWindow sync.Map // FLOWER_WINDOW values already warned about

func defaultWindow(getenv func(string) string) int {
	if raw := strings.TrimSpace(getenv("FLOWER_WINDOW")); raw != "" {
		if n, err := strconv.Atoi(raw); err == nil && n > 0 {
			return n
		}
		if _, seen := warnedWindow.LoadOrStore(raw, true); !seen {
			slog.Warn("flower: FLOWER_WINDOW is not a positive integer; guessing the window from the model name", "FLOWER_WINDOW", raw)
		}
	}
	name := getenv("ANTHROPIC_MODEL")
	if name == "" {
		name = getenv("ANTHROPIC_DEFAULT_OPUS_MODEL")
	}
	name = strings.ToLower(name)
	switch {
	case oneM.MatchString(name):
		return LargeWindow
	case strings.Contains(name, "haiku"):
		return SmallWindow
	}
	return LargeWindow
}
