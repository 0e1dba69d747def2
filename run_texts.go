package flower

import (
	"fmt"
	"time"
)

// runtimeTexts are the runtime's own words in one language.
type runtimeTexts struct {
	interruptWith, interruptBare string
	retryWith, retryBare         string
	failed                       string // attempt, kind
	tooFull, degraded, missing   string
	handoffFile                  string
	budget                       string // budget, spent, session
	usage                        string // reset time
}

var zhTexts = runtimeTexts{
	interruptWith: "人在这里打断了你,说:\n\n%s\n\n按这句话调整,接着做。",
	interruptBare: "人打断了一下,现在继续。",
	retryWith:     "已打断,带着你的话续跑",
	retryBare:     "已打断,继续跑",
	failed:        "第 %d 次失败(%s),准备重试",
	tooFull:       "上下文已经装不下,连交接都跑不了一轮",
	degraded:      "交接降级(%s)",
	missing:       "缺",
	handoffFile:   "交接",
	budget:        "整次运行的预算 $%.2f 已用完(已花 $%.4f)。干净地停在这里;加大预算后再跑一次,会接着会话 %s 继续。",
	usage:         "用量到上限了,等到 %s 重置后接着跑",
}

var enTexts = runtimeTexts{
	interruptWith: "A human interrupted you here and said:\n\n%s\n\nAdjust to this and carry on.",
	interruptBare: "A human interrupted briefly; carry on now.",
	retryWith:     "interrupted: resuming with your words",
	retryBare:     "interrupted: resuming",
	failed:        "attempt %d failed (%s), retrying",
	tooFull:       "the context cannot hold even the handoff turn",
	degraded:      "handoff degraded (%s)",
	missing:       "missing ",
	handoffFile:   "handoff",
	budget:        "the run budget of $%.2f is spent ($%.4f so far). Stopped cleanly here; raise the budget and run again to continue session %s.",
	usage:         "usage limit reached: waiting for the reset at %s, then resuming",
}

func (s *stepRun) texts() runtimeTexts {
	if isEnglish(s.rt.lang) {
		return enTexts
	}
	return zhTexts
}

func (t runtimeTexts) interrupted(withWords bool) string {
	if withWords {
		return t.retryWith
	}
	return t.retryBare
}

func (t runtimeTexts) interruptPrompt(words string) string {
	if words == "" {
		return t.interruptBare
	}
	return fmt.Sprintf(t.interruptWith, words)
}

func (t runtimeTexts) usageWait(until time.Time) string {
	return fmt.Sprintf(t.usage, until.Format("15:04:05"))
}
