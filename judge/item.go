package judge

import (
	"cmp"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/flowerrun/flower/doc"
)

// Item is one checklist item of a goal: an id the verdict names it by, what
// is checked, and, when the check is a command, the command flower runs
// itself before the judge reads anything (Measure).
type Item struct {
	ID   string `json:"id"`
	Text string `json:"text"`
	// Command is the shell command whose exit status decides the item; ""
	// for an item judged by reading files.
	Command string `json:"command,omitempty"`
	// Unverifiable, when set, says why the item cannot be verified on this
	// machine: it never passes (an achieved round is "achieved, except"
	// it), and the person hears of it when the goal is set.
	Unverifiable string `json:"unverifiable,omitempty"`
}

// The goal file keeps an item on one list line: "[id] text", then, for a
// command, " — run: `command`" (a command holding a backtick is fenced with
// two). A line without an id, as older goals wrote them, gets c<position>.
var (
	itemID      = regexp.MustCompile(`^\[([A-Za-z0-9][A-Za-z0-9_.-]{0,31})\]\s*`)
	itemCommand = regexp.MustCompile("\\s+— (?:run|运行): (``?)(.+?)(?:``?)$")
)

// Line renders the item as the goal file's list line (without the marker).
func (it Item) Line(lang doc.Lang) string {
	s := "[" + it.ID + "] " + strings.TrimSpace(it.Text)
	if it.Unverifiable != "" {
		s += " " + doc.UnverifiableMarker(lang, it.Unverifiable)
	}
	if c := strings.TrimSpace(it.Command); c != "" {
		fence := "`"
		if strings.Contains(c, "`") {
			fence = "``"
		}
		s += " — " + lang.Pick("运行", "run") + ": " + fence + c + fence
	}
	return s
}

// Items reads the goal's checklist as items (see Line), each with its
// unverifiable tag. Ids missing or repeated in the file are given by
// position, so every item has one id.
func Items(g *doc.Goal) []Item {
	if g == nil {
		return nil
	}
	out := make([]Item, 0, len(g.Checks))
	seen := map[string]bool{}
	for i, line := range g.Checks {
		it := Item{Text: strings.TrimSpace(line)}
		if m := itemID.FindStringSubmatch(it.Text); m != nil {
			it.ID, it.Text = m[1], strings.TrimSpace(it.Text[len(m[0]):])
		}
		if m := itemCommand.FindStringSubmatchIndex(it.Text); m != nil {
			it.Command = strings.TrimSpace(it.Text[m[4]:m[5]])
			it.Text = strings.TrimSpace(it.Text[:m[0]])
		}
		if rest, why, ok := doc.CutUnverifiable(it.Text); ok {
			it.Text, it.Unverifiable = rest, cmp.Or(why, "-")
		}
		if it.ID == "" || seen[it.ID] {
			it.ID = "c" + strconv.Itoa(i+1)
		}
		seen[it.ID] = true
		out = append(out, it)
	}
	return out
}

// Commands are the items that have a command, in order.
func Commands(items []Item) []Item {
	var out []Item
	for _, it := range items {
		if strings.TrimSpace(it.Command) != "" {
			out = append(out, it)
		}
	}
	return out
}

// String is the item for a log line.
func (it Item) String() string { return fmt.Sprintf("[%s] %s", it.ID, it.Text) }
