package workbench

import "github.com/flowerrun/flower/internal/lang"

// Texts holds every sentence the workbench writes into INDEX.md and the
// prompt block. Fields holding a format take the verbs noted on them. An
// empty field falls back to the same field of ChineseTexts, so the zero
// value reproduces the original flower's texts.
type Texts struct {
	// IndexTitle is the first line of INDEX.md.
	IndexTitle string
	// IndexNote is the quoted line under the title.
	IndexNote string
	// IndexSection is a section heading: %[1]s the section name, %[2]d the
	// number of files.
	IndexSection string
	// IndexScripts, IndexArtifacts and IndexNotes name INDEX.md's sections.
	IndexScripts, IndexArtifacts, IndexNotes string
	// NoDesc stands in for a missing description in INDEX.md.
	NoDesc string
	// EmptySection is the single entry of an empty INDEX.md section.
	EmptySection string

	// PromptTitle heads the prompt block: %[1]s the shown root.
	PromptTitle string
	// PromptExternal is added when the workbench lies outside the
	// workspace: %[1]s the absolute root.
	PromptExternal string
	// PromptReuse asks the agent to use what exists.
	PromptReuse string
	// PromptGroup labels a list of files: %[1]s the group name.
	PromptGroup string
	// PromptScripts, PromptArtifacts and PromptNotes name the lists.
	PromptScripts, PromptArtifacts, PromptNotes string
	// PromptMore closes a list cut at MaxIndexEntries: %[1]d the files
	// left out, %[2]s the folder to list.
	PromptMore string
	// PromptEmpty says that the workbench holds no file yet.
	PromptEmpty string
	// PromptRules introduces the three rules.
	PromptRules string
	// Rule1, Rule2 and Rule3 are the rules: %[1]s the shown scripts/,
	// artifacts/ and notes/ folder respectively.
	Rule1, Rule2, Rule3 string
}

// ChineseTexts are the original flower's texts, character for character.
var ChineseTexts = Texts{
	IndexTitle:      "# 工作台索引",
	IndexNote:       "> 自动生成,勿手改。scripts 首行写 `# desc: 一句话` 会出现在这里。",
	IndexSection:    "## %[1]s(%[2]d)",
	IndexScripts:    "可复用脚本",
	IndexArtifacts:  "产出",
	IndexNotes:      "决策记录",
	NoDesc:          "(无说明)",
	EmptySection:    "(空)",
	PromptTitle:     "# 工作台 %[1]s/",
	PromptExternal:  "它在**仓库外**(`%[1]s`)—— 这是有意的,这样每个 agent 不管在哪个工作副本里都能读写同一份。**用绝对路径访问它。**",
	PromptReuse:     "已经存在的东西,**先用,不要重写**:",
	PromptGroup:     "%[1]s:",
	PromptScripts:   "脚本",
	PromptArtifacts: "产出",
	PromptNotes:     "笔记",
	PromptMore:      "…另有 %[1]d 个,`ls %[2]s/` 查看",
	PromptEmpty:     "(目前为空)",
	PromptRules:     "规则:",
	Rule1:           "1. 任何要跑第二次的脚本 —— 验证、复现、检查 —— 写进 `%[1]s/`,文件名说明用途,首行写 `# desc: 一句话`。下次直接跑,别重写。",
	Rule2:           "2. 超过 2000 字符的产出 —— 日志、数据、报告、diff —— 写进 `%[1]s/`,对话里只给路径和结论。",
	Rule3:           "3. 关键决策与理由写进 `%[1]s/`,一个决策一个文件。",
}

// EnglishTexts say the same as ChineseTexts in English.
var EnglishTexts = Texts{
	IndexTitle:      "# Workbench index",
	IndexNote:       "> Generated, do not edit. A script whose first line is `# desc: one sentence` shows that sentence here.",
	IndexSection:    "## %[1]s (%[2]d)",
	IndexScripts:    "Reusable scripts",
	IndexArtifacts:  "Artifacts",
	IndexNotes:      "Decision notes",
	NoDesc:          "(no description)",
	EmptySection:    "(empty)",
	PromptTitle:     "# Workbench %[1]s/",
	PromptExternal:  "It lies **outside the repository** (`%[1]s`) on purpose, so every agent reads and writes the same copy whatever working copy it is in. **Use absolute paths to reach it.**",
	PromptReuse:     "What already exists, **use it, do not rewrite it**:",
	PromptGroup:     "%[1]s:",
	PromptScripts:   "Scripts",
	PromptArtifacts: "Artifacts",
	PromptNotes:     "Notes",
	PromptMore:      "… %[1]d more, see `ls %[2]s/`",
	PromptEmpty:     "(empty so far)",
	PromptRules:     "Rules:",
	Rule1:           "1. Any script you will run a second time (a check, a reproduction, a verification) goes into `%[1]s/`, named for what it does, its first line `# desc: one sentence`. Next time run it, do not rewrite it.",
	Rule2:           "2. Output over 2000 characters (logs, data, reports, diffs) goes into `%[1]s/`; the conversation gets only the path and the conclusion.",
	Rule3:           "3. Key decisions and their reasons go into `%[1]s/`, one file per decision.",
}

// TextsFor returns the texts of a language (flower.Lang): ChineseTexts for
// "zh" and its regional forms ("zh-CN", "zh_TW"), EnglishTexts for anything
// else, the zero Lang included. (The zero Texts stays the original's
// Chinese: the package-level factories are the original's guards.)
func TextsFor(l lang.Lang) Texts {
	if l.IsChinese() {
		return ChineseTexts
	}
	return EnglishTexts
}

// withDefaults fills empty fields from ChineseTexts.
func (t Texts) withDefaults() Texts {
	d := ChineseTexts
	fill := func(s *string, def string) {
		if *s == "" {
			*s = def
		}
	}
	fill(&t.IndexTitle, d.IndexTitle)
	fill(&t.IndexNote, d.IndexNote)
	fill(&t.IndexSection, d.IndexSection)
	fill(&t.IndexScripts, d.IndexScripts)
	fill(&t.IndexArtifacts, d.IndexArtifacts)
	fill(&t.IndexNotes, d.IndexNotes)
	fill(&t.NoDesc, d.NoDesc)
	fill(&t.EmptySection, d.EmptySection)
	fill(&t.PromptTitle, d.PromptTitle)
	fill(&t.PromptExternal, d.PromptExternal)
	fill(&t.PromptReuse, d.PromptReuse)
	fill(&t.PromptGroup, d.PromptGroup)
	fill(&t.PromptScripts, d.PromptScripts)
	fill(&t.PromptArtifacts, d.PromptArtifacts)
	fill(&t.PromptNotes, d.PromptNotes)
	fill(&t.PromptMore, d.PromptMore)
	fill(&t.PromptEmpty, d.PromptEmpty)
	fill(&t.PromptRules, d.PromptRules)
	fill(&t.Rule1, d.Rule1)
	fill(&t.Rule2, d.Rule2)
	fill(&t.Rule3, d.Rule3)
	return t
}
