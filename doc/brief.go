package doc

import "strings"

// Brief is the clarified requirement, frozen by the clarify step: four
// sections, each guarding against one failure (building the wrong thing, no
// way to tell when it is done, scope creep, silent wrong assumptions).
type Brief struct {
	Goal     string // 目标
	Accept   string // 验收标准: acceptance criteria
	Bounds   string // 边界: what is out of scope
	Unknowns string // 未知与假设: unknowns and assumptions made
	// Path is the absolute file the brief was loaded from or written to. It
	// is not part of the document.
	Path string
}

var briefLayout = newLayout(
	section{key: "goal", zh: "目标", en: "Goal", ko: "목표",
		aliases: []string{"Objective", "Deliverable"}},
	section{key: "accept", zh: "验收标准", en: "Acceptance criteria", ko: "검수 기준",
		aliases: []string{"验收条件", "验收", "完成标准", "Acceptance", "Acceptance tests", "Success criteria",
			"Definition of done", "Done when"}},
	section{key: "bounds", zh: "边界", en: "Boundaries", ko: "경계",
		aliases: []string{"范围边界", "不做什么", "不在范围内", "范围外", "非目标", "约束", "Bounds",
			"Out of scope", "Out-of-scope", "Non-goals", "Non goals", "Not in scope", "Scope", "Constraints"}},
	section{key: "unknowns", zh: "未知与假设", en: "Unknowns and assumptions", ko: "미지와 가정",
		aliases: []string{"未知项与假设", "未知项", "已知未知", "假设", "未知", "待确认", "开放问题", "Unknowns",
			"Assumptions", "Unknowns & assumptions", "Assumptions and unknowns", "Open questions",
			// The human channel's amend file header (human.Texts'
			// AmendHeader); its stamped blocks are kept in the section
			// above them (amendBlock).
			"运行中的补充", "Additions during the run"}},
)

// ParseBrief reads a brief from a model's reply. Sections it cannot find
// stay empty and show up in Missing.
func ParseBrief(text string) *Brief {
	p := briefLayout.parse(text)
	return &Brief{
		Goal:     p.bodies["goal"],
		Accept:   p.bodies["accept"],
		Bounds:   p.bodies["bounds"],
		Unknowns: p.bodies["unknowns"],
	}
}

// LoadBrief reads a brief written by Write (or by hand). A placeholder
// section counts as empty. An absent file gives an error wrapping
// fs.ErrNotExist.
func LoadBrief(path string) (*Brief, error) {
	text, abs, err := readFile(path)
	if err != nil {
		return nil, err
	}
	b := ParseBrief(text)
	b.Path = abs
	return b, nil
}

func (b *Brief) fields() []field {
	return []field{{"goal", b.Goal}, {"accept", b.Accept}, {"bounds", b.Bounds}, {"unknowns", b.Unknowns}}
}

// Missing returns the canonical names, in lang, of the empty sections; all
// four are required.
func (b *Brief) Missing(lang Lang) []string {
	return missing(briefLayout, lang, b.fields())
}

// Complete reports whether all four sections have content.
func (b *Brief) Complete() bool { return len(b.Missing(Chinese)) == 0 }

// ToMarkdown renders the brief for humans: a title, a note that the file is
// frozen, and every section, "(未填)" / "(not filled in)" standing for an
// empty one.
func (b *Brief) ToMarkdown(lang Lang) string {
	var sb strings.Builder
	sb.WriteString(lang.Pick(
		"# 需求确认书\n\n> 由 clarify 步骤生成并**冻结**。要改需求就改这个文件;\n> 想重新确认一遍,删掉它再跑。\n",
		"# Brief\n\n> Written and **frozen** by the clarify step. To change the requirement, edit this file;\n> to clarify again, delete it and run again.\n"))
	writeSections(&sb, briefLayout, lang, b.fields(), lang.Pick(briefPlaceholderZh, briefPlaceholderEn))
	return sb.String()
}

// PromptBlock renders the brief for a downstream model: only the sections
// with content, no title or meta text.
func (b *Brief) PromptBlock(lang Lang) string {
	return promptSections(briefLayout, lang, b.fields())
}

// Write stores the brief's markdown at path atomically and sets Path.
func (b *Brief) Write(lang Lang, path string) error {
	abs, err := writeFile(path, []byte(b.ToMarkdown(lang)))
	if err != nil {
		return err
	}
	b.Path = abs
	return nil
}
