package doc

import (
	"regexp"
	"strings"
)

// Handoff is what a session writes when its context is nearly full, and all
// a fresh session has besides the disk. Only Doing and Next are required:
// demanding dead ends makes a model invent them.
type Handoff struct {
	Doing    string // 现在在做什么: where the work stands (required)
	Decided  string // 已经定下的: settled decisions, each with its why
	Deadends string // 走不通的路: what was tried and ruled out, and why
	Next     string // 下一步: the next concrete action (required)
	Scene    string // 现场: paths of the key files and artifacts
	// Step is the step that handed off. It appears only in the title.
	Step string
	// Path is the absolute file the handoff was loaded from or written to.
	Path string
}

const (
	// DegradedMarker starts the Doing section of a handoff built by
	// Degraded in Chinese; its presence is what makes IsDegraded true.
	DegradedMarker = "[降级:交接没写成]"
	// DegradedMarkerEnglish is DegradedMarker for English handoffs.
	DegradedMarkerEnglish = "[degraded: handoff not written]"
)

// degradedTaskRunes is how much of the original task a degraded handoff
// keeps as its scene.
const degradedTaskRunes = 1200

var handoffLayout = newLayout(
	section{key: "doing", zh: "现在在做什么", en: "Doing now", ko: "지금 하는 일",
		aliases: []string{"现在在做", "当前进度", "进度", "当前状态", "现状", "Progress", "Status", "Current status",
			"Current state", "Where things stand", "In progress"}},
	section{key: "decided", zh: "已经定下的", en: "Decided", ko: "정해진 것",
		aliases: []string{"已定的事", "决策", "关键决策", "已决定", "Decisions", "Decisions made", "Key decisions", "Settled"}},
	section{key: "deadends", zh: "走不通的路", en: "Dead ends", ko: "막힌 길",
		aliases: []string{"试过不行的", "排除的路", "踩过的坑", "死路", "Dead-ends", "Deadends", "Ruled out",
			"Tried and failed", "What didn't work", "What did not work", "Failed approaches"}},
	section{key: "next", zh: "下一步", en: "Next step", ko: "다음 단계",
		aliases: []string{"接下来", "后续步骤", "Next steps", "Next", "Next action", "Next actions", "Immediate next step"}},
	section{key: "scene", zh: "现场", en: "Scene", ko: "현장",
		aliases: []string{"文件", "关键文件", "相关文件", "Files", "Key files", "Relevant files", "Paths", "Where things are"}},
)

// handoffTitle matches the title ToMarkdown writes and captures the step.
var handoffTitle = regexp.MustCompile(`^#[ \t]*(?:交接书|(?i:handoff))[ \t]*(?:\((.*)\))?[ \t]*$`)

// ParseHandoff reads a handoff from a model's reply or a file. The step is
// taken from a title line "# 交接书(<step>)" or "# Handoff (<step>)" before
// the first section, when there is one.
func ParseHandoff(text string) *Handoff {
	p := handoffLayout.parse(text)
	h := &Handoff{
		Doing:    p.bodies["doing"],
		Decided:  p.bodies["decided"],
		Deadends: p.bodies["deadends"],
		Next:     p.bodies["next"],
		Scene:    p.bodies["scene"],
	}
	for _, ln := range p.preamble {
		if m := handoffTitle.FindStringSubmatch(strings.TrimSpace(ln)); m != nil {
			h.Step = oneLine(m[1])
			break
		}
	}
	return h
}

// LoadHandoff reads a handoff file. An absent file gives an error wrapping
// fs.ErrNotExist.
func LoadHandoff(path string) (*Handoff, error) {
	text, abs, err := readFile(path)
	if err != nil {
		return nil, err
	}
	h := ParseHandoff(text)
	h.Path = abs
	return h, nil
}

// Degraded builds a handoff mechanically for when the session could not
// write one (the turn failed, or nothing required could be parsed): a
// partial handoff beats running into the context window. The marker tells
// the successor to check the scene itself; the scene quotes the first 1200
// characters of the step's task, each line behind "> " so that headings in
// the task cannot become sections when the file is read back.
func Degraded(lang Lang, step, prompt, why string) *Handoff {
	task := []rune(strings.TrimSpace(prompt))
	if len(task) > degradedTaskRunes {
		task = task[:degradedTaskRunes]
	}
	quoted := "> " + strings.ReplaceAll(normalize(string(task)), "\n", "\n> ")
	h := &Handoff{Step: step}
	if lang.IsEnglish() {
		reason := ""
		if why != "" {
			reason = " (" + why + ")"
		}
		h.Doing = DegradedMarkerEnglish + " The previous session's context filled up in step \"" + step +
			"\", but the handoff could not be written" + reason + "."
		h.Next = "First look at the scene to see how far the work got (read the workbench's notes/ and artifacts, " +
			"run git status / git log), then continue. Do not assume nothing was done."
		h.Scene = "The task this step was first given:\n\n" + quoted
		return h
	}
	reason := ""
	if why != "" {
		reason = "(" + why + ")"
	}
	h.Doing = DegradedMarker + " 上一个会话在步骤「" + step + "」里上下文满了,但交接没能写出来" + reason + "。"
	h.Next = "先去现场看清楚已经做到哪一步(读工作台的 notes/ 和产出物、看 git status / git log),再接着做。不要假设前面什么都没做。"
	h.Scene = "这一步最初拿到的任务是:\n\n" + quoted
	return h
}

// Mend fills the required sections the session left empty (Doing, Next)
// with Degraded's, keeping every section it did write: a handoff that lost
// one section still carries the decisions and dead ends of the others.
func (h *Handoff) Mend(lang Lang, step, prompt, why string) {
	d := Degraded(lang, step, prompt, why)
	if strings.TrimSpace(h.Doing) == "" {
		h.Doing = d.Doing
	}
	if strings.TrimSpace(h.Next) == "" {
		h.Next = d.Next
	}
	if strings.TrimSpace(h.Scene) == "" {
		h.Scene = d.Scene
	}
}

// Empty reports whether the handoff has no section at all.
func (h *Handoff) Empty() bool {
	return strings.TrimSpace(h.Doing+h.Decided+h.Deadends+h.Next+h.Scene) == ""
}

// IsDegraded reports whether the handoff was built by Degraded (in either
// language) rather than written by the session.
func (h *Handoff) IsDegraded() bool {
	return strings.Contains(h.Doing, DegradedMarker) || strings.Contains(h.Doing, DegradedMarkerEnglish)
}

func (h *Handoff) fields() []field {
	return []field{{"doing", h.Doing}, {"decided", h.Decided}, {"deadends", h.Deadends},
		{"next", h.Next}, {"scene", h.Scene}}
}

// Missing returns the canonical names, in lang, of the empty required
// sections (Doing and Next).
func (h *Handoff) Missing(lang Lang) []string {
	return missing(handoffLayout, lang, []field{{"doing", h.Doing}, {"next", h.Next}})
}

// Complete reports whether Doing and Next have content.
func (h *Handoff) Complete() bool { return len(h.Missing(Chinese)) == 0 }

// ToMarkdown renders the handoff for humans: a title naming the step, a note
// that the file may be edited, and all five sections, "(空)" / "(empty)"
// standing for an empty one.
func (h *Handoff) ToMarkdown(lang Lang) string {
	var sb strings.Builder
	step := titleStep(h.Step)
	if lang.IsEnglish() {
		sb.WriteString("# Handoff")
		if step != "" {
			sb.WriteString(" (" + step + ")")
		}
		sb.WriteString("\n\n> The previous session's context was nearly full; it wrote this handoff and a new session takes over.\n" +
			"> **This file is readable and editable**: if it misses something, fix it here, because this is what the successor reads.\n")
	} else {
		sb.WriteString("# 交接书")
		if step != "" {
			sb.WriteString("(" + step + ")")
		}
		sb.WriteString("\n\n> 上一段会话的上下文快满了,写下这份交接换新会话接手。\n" +
			"> **这个文件是可读可改的** —— 觉得它漏了什么,直接改,接手的人读的就是它。\n")
	}
	writeSections(&sb, handoffLayout, lang, h.fields(), lang.Pick(emptyZh, emptyEn))
	return sb.String()
}

// titleStep makes a step name safe for the title line: one line, and no
// fence-like run, which would otherwise open a fence that swallows the whole
// document when it is read back.
func titleStep(step string) string {
	step = oneLine(step)
	for strings.Contains(step, "```") || strings.Contains(step, "~~~") {
		step = strings.NewReplacer("```", "``", "~~~", "~~").Replace(step)
	}
	return step
}

// PromptBlock is the opening message of the successor session. It says
// plainly that this is a takeover, or the model tends to think the
// conversation just began and asks a human for background who may be gone.
func (h *Handoff) PromptBlock(lang Lang) string {
	body := promptSections(handoffLayout, lang, h.fields())
	if lang.IsEnglish() {
		return "You are taking over unfinished work. The previous session's context filled up and it left this handoff.\n" +
			"**You have none of its memory, only this document and what is on disk.** The brief and the goal are frozen " +
			"in the workbench's notes/; read them yourself.\n\n" +
			body + "\n\n---\n\nContinue from \"Next step\". Do not start over, and do not go back to a human for background."
	}
	return "你在接手一段还没干完的活。上一个会话的上下文满了,它留下了这份交接。\n" +
		"**你没有它的记忆,只有这份文书和磁盘上的东西。** 需求和目标是冻结件,在工作台的 notes/ 里,自己去读。\n\n" +
		body + "\n\n---\n\n照「下一步」接着做。别重头开始,也别回头问人要背景。"
}

// Write stores the handoff's markdown at path atomically and sets Path.
func (h *Handoff) Write(lang Lang, path string) error {
	abs, err := writeFile(path, []byte(h.ToMarkdown(lang)))
	if err != nil {
		return err
	}
	h.Path = abs
	return nil
}

// overflow matches the API's ways of saying the context no longer fits.
var overflow = regexp.MustCompile(`(?i)prompt is too long` +
	`|context[ _-]?length[ _-]?exceeded` +
	`|maximum context length` +
	`|exceeds? (?:the )?context (?:window|limit)` +
	`|too many total text bytes` +
	"|input length and `?max_tokens`? exceed")

// IsOverflow reports whether any of texts says the context window
// overflowed. Recognising it turns a fatal API error into an immediate
// handoff, so an overestimated window costs one degraded handoff instead of
// the step.
func IsOverflow(texts ...string) bool {
	for _, t := range texts {
		if overflow.MatchString(t) {
			return true
		}
	}
	return false
}
