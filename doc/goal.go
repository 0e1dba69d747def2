package doc

import (
	"regexp"
	"strings"
)

// Goal is what the goal guard judges each round against: one statement and
// a checklist whose every item can be verified on the spot.
type Goal struct {
	Statement string   // 目标
	Checks    []string // 判定清单, one item per entry, without list markers
	// Path is the absolute file the goal was loaded from or written to.
	Path string
}

const (
	// UnverifiableChinese is the tag a goal-setting judge puts on a check
	// that cannot be verified in this environment: "[此环境无法验证:<why>]".
	UnverifiableChinese = "此环境无法验证"
	// UnverifiableEnglish is the same tag for English runs:
	// "[cannot verify here: <why>]". The judge's rules must use this text.
	UnverifiableEnglish = "cannot verify here"
)

// UnverifiableMarker formats the tag for a check that cannot be verified in
// this environment, in lang.
func UnverifiableMarker(lang Lang, why string) string {
	if lang.IsEnglish() {
		return "[" + UnverifiableEnglish + ": " + why + "]"
	}
	return "[" + UnverifiableChinese + ":" + why + "]"
}

// unverifiable recognises either tag, with or without "此环境" / "here", either
// colon, and any case in English.
var unverifiable = regexp.MustCompile(`\[\s*(?:此环境)?无法验证\s*[:：]?|(?i:\[\s*cannot\s+verify(?:\s+here)?\s*[:：]?)`)

// CutUnverifiable takes the unverifiable tag off a checklist line: the
// line without it, and why the check cannot be verified here; ok false
// when the line has no tag. The tag runs to the line's last "]", so a
// reason may hold brackets.
func CutUnverifiable(line string) (rest, why string, ok bool) {
	loc := unverifiable.FindStringIndex(line)
	if loc == nil {
		return line, "", false
	}
	end := strings.LastIndex(line, "]")
	if end < loc[1] {
		end = len(line)
	}
	why = strings.TrimSpace(line[loc[1]:end])
	rest = strings.TrimSpace(line[:loc[0]] + " " + line[min(end+1, len(line)):])
	return rest, why, true
}

var goalLayout = newLayout(
	section{key: "statement", zh: "目标", en: "Goal", ko: "목표",
		aliases: []string{"完成标志", "Objective", "Goal statement"}},
	section{key: "checks", zh: "判定清单", en: "Checklist", ko: "판정 목록",
		aliases: []string{"判定条件", "验收清单", "检查清单", "检查项", "判定", "验收标准", "Checks", "Verification checklist",
			"Acceptance checks", "Acceptance criteria", "Checks to run", "Check list"}},
)

// ParseGoal reads a goal from a judge's reply or a file. Checks are one per
// line; list markers are removed.
func ParseGoal(text string) *Goal {
	p := goalLayout.parse(text)
	return &Goal{Statement: p.bodies["statement"], Checks: bullets(p.bodies["checks"])}
}

// LoadGoal reads a goal file. An absent file gives an error wrapping
// fs.ErrNotExist.
func LoadGoal(path string) (*Goal, error) {
	text, abs, err := readFile(path)
	if err != nil {
		return nil, err
	}
	g := ParseGoal(text)
	g.Path = abs
	return g, nil
}

// Missing returns the canonical names, in lang, of the missing sections: the
// statement when empty, the checklist when it has no item.
func (g *Goal) Missing(lang Lang) []string {
	var out []string
	if strings.TrimSpace(g.Statement) == "" {
		out = append(out, goalLayout.name("statement", lang))
	}
	if len(g.Checks) == 0 {
		out = append(out, goalLayout.name("checks", lang))
	}
	return out
}

// Complete reports whether the goal has a statement and at least one check.
func (g *Goal) Complete() bool { return len(g.Missing(Chinese)) == 0 }

// Unverifiable returns the checks tagged as not verifiable in this
// environment. They never pass (a run achieved but for them ends "achieved,
// except" them), so they are surfaced when the goal is set, before a round
// is paid for.
func (g *Goal) Unverifiable() []string {
	var out []string
	for _, c := range g.Checks {
		if unverifiable.MatchString(c) {
			out = append(out, c)
		}
	}
	return out
}

// Amend appends a human's change to the statement. It never overwrites: the
// old goal is history, and seeing what changed beats not seeing it.
func (g *Goal) Amend(lang Lang, extra string) {
	extra = strings.TrimSpace(extra)
	if extra == "" {
		return
	}
	g.Statement = strings.TrimSpace(g.Statement) + "\n\n" + lang.Pick("(已修改)", "(amended) ") + extra
}

// ToMarkdown renders "# 目标", the statement, "# 判定清单" and the checks as a
// list ("(空)" / "(empty)" for an empty part).
func (g *Goal) ToMarkdown(lang Lang) string {
	empty := lang.Pick(emptyZh, emptyEn)
	statement := strings.TrimSpace(g.Statement)
	if statement == "" {
		statement = empty
	}
	var sb strings.Builder
	sb.WriteString("# " + goalLayout.name("statement", lang) + "\n" + statement + "\n\n")
	sb.WriteString("# " + goalLayout.name("checks", lang) + "\n")
	if len(g.Checks) == 0 {
		sb.WriteString(empty + "\n")
	}
	for _, c := range g.Checks {
		sb.WriteString("- " + c + "\n")
	}
	return sb.String()
}

// PromptBlock renders the goal for a model: "## 目标" with the statement and,
// when there are checks, "## 判定清单" with the list.
func (g *Goal) PromptBlock(lang Lang) string {
	out := "## " + goalLayout.name("statement", lang) + "\n" + strings.TrimSpace(g.Statement)
	if len(g.Checks) > 0 {
		out += "\n\n## " + goalLayout.name("checks", lang) + "\n" + list(g.Checks)
	}
	return out
}

// Write stores the goal's markdown at path atomically and sets Path.
func (g *Goal) Write(lang Lang, path string) error {
	abs, err := writeFile(path, []byte(g.ToMarkdown(lang)))
	if err != nil {
		return err
	}
	g.Path = abs
	return nil
}
