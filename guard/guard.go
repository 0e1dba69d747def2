// Package guard builds the hooks that keep a long flower run in bounds: each
// role's main thread may use only its own tools (the wall), big tool results
// go to disk, the workbench index stays fresh and marked roles get their own
// git worktree.
//
// The walls are allow-lists. The seed's delegate and whitelist guards
// denied four hands-on tools (its HANDS_ON and WRITE_ONLY groups); the CLI
// now offers more than twenty tools, several of which write or outlive the
// turn (CronCreate, EnterWorktree, Monitor…), and its own subagent types
// beside a spec's workers. So Wall, and Delegate and Whitelist built on it,
// match every tool and let through only what the role was given, so a tool
// the CLI adds next month is refused by default; an Agent call must name one
// of the role's workers; a Bash glance (ephemeral.Is) runs bounded in time
// and, where bubblewrap runs, in a read-only sandbox without network or
// secrets (see Sandbox).
// The seed's names stay where they still mean something (Delegate,
// Whitelist, the texts, Bulky); the deny-list groups are gone.
package guard

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"

	"github.com/flowerrun/flower/internal/lang"
)

// Bulky are the tools whose results can be large, in the CLI's matcher
// syntax: Spill watches them.
const Bulky = "Bash|Read|Grep|Glob|WebFetch|WebSearch"

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
	// SpillPartial replaces a result the CLI cut when only the part it
	// showed could be spilled: %[1]d the characters in the file, %[2]d the
	// whole output's size in bytes, %[3]s the spill file, %[4]s SpillWholeAt
	// filled in or "", %[5]s the first 400 characters.
	SpillPartial string
	// SpillWholeAt names where the whole output still is: %[1]s the file.
	SpillWholeAt string
	// WorkerDeny refuses an Agent call naming a subagent type that is not
	// one of the role's workers: %[1]s the type, %[2]s the workers.
	WorkerDeny string
	// WorkerMissing refuses an Agent call naming no subagent type: %[1]s
	// the workers.
	WorkerMissing string
	// NoWorkers stands for the list of workers when there is none.
	NoWorkers string
	// GlanceBackground refuses a glance asked to run in the background.
	GlanceBackground string
	// GlanceTimedOut follows the output of a glance stopped at its limit:
	// %[1]s the limit in seconds.
	GlanceTimedOut string
	// LoopRepeat refuses a call that repeats itself with the same result:
	// %[1]s the tool, %[2]d how many identical calls came before.
	LoopRepeat string
	// LoopCycle refuses a call that goes on with a cycle of calls with
	// the same results: %[1]s the refused call's tool, %[2]s the other
	// calls' tools (comma-separated), %[3]d how many rounds came before.
	LoopCycle string
}

// ChineseTexts are the original flower's texts, character for character.
var ChineseTexts = Texts{
	WhitelistDeny: "%[1]s没有 %[2]s。**这是有意的,不是配置漏了。**把结论写进你的回话正文里,框架会从那里取 —— 不要试别的写法绕过去。",
	DefaultRole:   "这个角色",
	DelegateDeny:  "协调者不直接使用 %[1]s。用 Agent 工具派一个 subagent 去做,任务里写清目标与验收标准,并要求它把长产出写进 %[2]s、回话只给路径与结论。",
	SpillPointer:  "[输出 %[1]d 字符,已落盘到 %[2]s —— 需要全文用 Read 读它,需要找东西用 Grep 搜它]\n开头 400 字符:%[3]s",
	// The original had no partial spill: these two are flower's own.
	SpillPartial: "[输出不完整 —— %[3]s 只有前 %[1]d 字符,全部输出 %[2]d 字节没能存下%[4]s]\n开头 400 字符:%[5]s",
	SpillWholeAt: ";完整输出在 %[1]s",
	// The texts below are flower's own: the original had no such refusal.
	WorkerDeny:       "没有叫 %[1]s 的 worker:只能派这里定义的 worker(%[2]s),CLI 自带的 agent 和 fork 都不行。subagent_type 写其中一个,任务里写清目标与验收标准。",
	WorkerMissing:    "Agent 调用必须用 subagent_type 指定一个 worker(%[1]s),任务里写清目标与验收标准。",
	NoWorkers:        "这个角色没有可派的 worker",
	GlanceBackground: "瞥一眼的命令只在前台跑,不能 run_in_background:要在后台跑的是活,派一个 worker 去做。",
	GlanceTimedOut:   "[flower:这条瞥一眼的命令跑满 %[1]s 秒被停下了,上面的输出不完整。要跑更久的,派一个 worker 去做。]",
	LoopRepeat:       "你已经连续 %[2]d 次用同样的输入调用 %[1]s,每次结果都一样,所以这一次被拒绝了。再调一次结果也不会变:用已有的结果往下做,或者换一个办法;如果卡住了,就在回话里说清卡在哪里,然后停下。",
	LoopCycle:        "你已经在同一圈调用(%[1]s,然后 %[2]s)里转了 %[3]d 轮,每轮结果都一样,所以这一次被拒绝了。再绕一圈也不会有变化:用已有的结果往下做,或者换一个办法;如果卡住了,就在回话里说清卡在哪里,然后停下。",
}

// EnglishTexts say the same as ChineseTexts in English.
var EnglishTexts = Texts{
	WhitelistDeny:    "%[1]s has no %[2]s. **This is deliberate, not a missing setting.** Write your conclusion in the body of your reply; the framework takes it from there. Do not try other ways around this.",
	DefaultRole:      "This role",
	DelegateDeny:     "The coordinator does not use %[1]s itself. Dispatch a subagent with the Agent tool: state the goal and the acceptance criteria in its task, and require it to write long output into %[2]s and to reply with only paths and conclusions.",
	SpillPointer:     "[Output of %[1]d chars saved to %[2]s: Read it for all, Grep to search]\nFirst 400 chars: %[3]s",
	SpillPartial:     "[Output partial: %[3]s holds only its first %[1]d chars; the whole %[2]d bytes could not be saved%[4]s]\nFirst 400 chars: %[5]s",
	SpillWholeAt:     "; the whole output is at %[1]s",
	WorkerDeny:       "There is no worker named %[1]s: only the workers defined here can be dispatched (%[2]s), not the CLI's built-in agents and not fork. Set subagent_type to one of them, and state the goal and the acceptance criteria in the task.",
	WorkerMissing:    "An Agent call must name a worker in subagent_type (%[1]s); state the goal and the acceptance criteria in the task.",
	NoWorkers:        "this role has no workers to dispatch",
	GlanceBackground: "A glance runs in the foreground only, never with run_in_background: a command to run in the background is work, so dispatch a worker to do it.",
	GlanceTimedOut:   "[flower: this glance was stopped at its limit of %[1]s s; the output above is incomplete. Dispatch a worker for anything that runs longer.]",
	LoopRepeat:       "You have called %[1]s with the same input %[2]d times in a row and got the same result each time, so this call was refused. Calling it again will not change the result: work with the result you have or try a different approach; if you are stuck, say where in your reply and stop.",
	LoopCycle:        "You have gone round the same cycle of calls (%[1]s, then %[2]s) %[3]d times with the same results each round, so this call was refused. Another round will not change anything: work with the results you have or try a different approach; if you are stuck, say where in your reply and stop.",
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
	if t.SpillPartial == "" {
		t.SpillPartial = ChineseTexts.SpillPartial
	}
	if t.SpillWholeAt == "" {
		t.SpillWholeAt = ChineseTexts.SpillWholeAt
	}
	if t.WorkerDeny == "" {
		t.WorkerDeny = ChineseTexts.WorkerDeny
	}
	if t.WorkerMissing == "" {
		t.WorkerMissing = ChineseTexts.WorkerMissing
	}
	if t.NoWorkers == "" {
		t.NoWorkers = ChineseTexts.NoWorkers
	}
	if t.GlanceBackground == "" {
		t.GlanceBackground = ChineseTexts.GlanceBackground
	}
	if t.GlanceTimedOut == "" {
		t.GlanceTimedOut = ChineseTexts.GlanceTimedOut
	}
	if t.LoopRepeat == "" {
		t.LoopRepeat = ChineseTexts.LoopRepeat
	}
	if t.LoopCycle == "" {
		t.LoopCycle = ChineseTexts.LoopCycle
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
