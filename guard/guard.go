// Package guard builds the hooks that keep a long flower run in bounds: the
// coordinator's main thread may not touch files, big tool results go to disk,
// the workbench index stays fresh and marked roles get their own git worktree.
package guard

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"

	"github.com/flowerrun/flower/internal/lang"
)

// Tool groups, in the CLI's matcher syntax.
const (
	// HandsOn are the tools that change files or run commands.
	HandsOn = "Bash|Write|Edit|NotebookEdit"
	// WriteOnly are the tools that change files.
	WriteOnly = "Write|Edit|NotebookEdit"
	// Bulky are the tools whose results can be large.
	Bulky = "Bash|Read|Grep|Glob|WebFetch|WebSearch"
)

// DefaultSpillThreshold is the length, in characters, above which Spill
// moves a string of a tool result to disk.
const DefaultSpillThreshold = 4000

// spillPreview is how many characters of a spilled string stay in context.
const spillPreview = 400

// DefaultArtifacts is the artifacts folder the delegate text names when no
// workbench says otherwise.
const DefaultArtifacts = ".flower/artifacts/"

// Texts holds the sentences the guards send to the model. Fields holding a
// format take the verbs noted on them. An empty field falls back to the same
// field of ChineseTexts, so the zero value reproduces the original flower's
// texts; the package-level factories use it.
type Texts struct {
	// WhitelistDeny refuses a tool the role does not have: %[1]s the role,
	// %[2]s the tool.
	WhitelistDeny string
	// DefaultRole names the role when Whitelist is given none.
	DefaultRole string
	// DelegateDeny refuses hands-on work on the main thread and says how to
	// dispatch a worker: %[1]s the tool, %[2]s the artifacts folder.
	DelegateDeny string
	// SpillPointer replaces a spilled string: %[1]d its length in
	// characters, %[2]s the spill file as shown to the model, %[3]s its first
	// 400 characters with newlines turned into spaces.
	SpillPointer string
}

// ChineseTexts are the original flower's texts, character for character.
var ChineseTexts = Texts{
	WhitelistDeny: "%[1]s没有 %[2]s。**这是有意的,不是配置漏了。**把结论写进你的回话正文里,框架会从那里取 —— 不要试别的写法绕过去。",
	DefaultRole:   "这个角色",
	DelegateDeny:  "协调者不直接使用 %[1]s。用 Agent 工具派一个 subagent 去做,任务里写清目标与验收标准,并要求它把长产出写进 %[2]s、回话只给路径与结论。",
	SpillPointer:  "[输出 %[1]d 字符,已落盘到 %[2]s —— 需要全文用 Read 读它,需要找东西用 Grep 搜它]\n开头 400 字符:%[3]s",
}

// EnglishTexts say the same as ChineseTexts in English.
var EnglishTexts = Texts{
	WhitelistDeny: "%[1]s has no %[2]s. **This is deliberate, not a missing setting.** Write your conclusion in the body of your reply; the framework takes it from there. Do not try other ways around this.",
	DefaultRole:   "This role",
	DelegateDeny:  "The coordinator does not use %[1]s itself. Dispatch a subagent with the Agent tool: state the goal and the acceptance criteria in its task, and require it to write long output into %[2]s and to reply with only paths and conclusions.",
	SpillPointer:  "[Output of %[1]d characters saved to %[2]s: Read it for the full text, Grep it to find something]\nFirst 400 characters: %[3]s",
}

// TextsFor returns the texts of a language: EnglishTexts for "en" and its
// regional forms ("en-US", "en_GB"), ChineseTexts for anything else.
func TextsFor(tag string) Texts {
	if lang.IsEnglish(tag) {
		return EnglishTexts
	}
	return ChineseTexts
}

// withDefaults fills empty fields from ChineseTexts.
func (t Texts) withDefaults() Texts {
	if t.WhitelistDeny == "" {
		t.WhitelistDeny = ChineseTexts.WhitelistDeny
	}
	if t.DefaultRole == "" {
		t.DefaultRole = ChineseTexts.DefaultRole
	}
	if t.DelegateDeny == "" {
		t.DelegateDeny = ChineseTexts.DelegateDeny
	}
	if t.SpillPointer == "" {
		t.SpillPointer = ChineseTexts.SpillPointer
	}
	return t
}

// decodeJSON decodes raw keeping numbers as json.Number and refuses
// anything after the first value.
func decodeJSON(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errTrailing
	}
	return v, nil
}

// encodeJSON encodes v without escaping <, > and &, which tool output and
// commands are full of.
func encodeJSON(v any) (json.RawMessage, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

var errTrailing = errors.New("data after the JSON value")

// logger is where the guards say why they let something pass unchanged.
func logger() *slog.Logger { return slog.Default() }
