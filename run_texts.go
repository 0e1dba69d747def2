package flower

import (
	"fmt"
	"time"

	"github.com/flowerrun/flower/store"
)

// runtimeTexts are the runtime's own words in one language: every text of
// the runtime a human or the model can see (events, step errors, prompts)
// comes from here, the Chinese ones as the seed gives them.
type runtimeTexts struct {
	interruptWith, interruptBare string
	retryWith, retryBare         string
	betweenSteps                 string // words
	failed                       string // attempt, kind
	tooFull, degraded, missing   string
	errorResult                  string
	handoffFile                  string
	budget                       string // budget, spent, session
	usage                        string // reset time
	near                         string // context, window, left
	writing                      string // context, window
	done                         string // step
	stopGenerations              string // generations, at, window
	stopDegraded                 string // in a row, at, headroom, window
	cancelled                    string // cause
	cancelledUsage               string // cause
	cancelledOffline             string // cause
	offline                      string // wait
	unreachable                  string // host, port, wait
	reachable                    string // host, port
	loop                         string // thread, tool, count
	loopWorker                   string // agent id
	seconds, minutes             string // count
	// What the session store writes into a resumed history, which the
	// model reads: placeholders as the store's policies document them.
	trimStub, expired, expiredPointer, interruptedResult, orphan string
}

var zhTexts = runtimeTexts{
	interruptWith:    "人在这里打断了你,说:\n\n%s\n\n按这句话调整,接着做。",
	interruptBare:    "人打断了一下,现在继续。",
	retryWith:        "已打断,带着你的话续跑",
	retryBare:        "已打断,继续跑",
	betweenSteps:     "上一步结束后、这一步开始前,人说了:\n\n%s\n\n按这句话调整。",
	failed:           "第 %d 次失败(%s),准备重试",
	tooFull:          "上下文已经装不下,连交接都跑不了一轮",
	degraded:         "交接降级(%s)",
	missing:          "缺",
	errorResult:      "返回了错误结果",
	handoffFile:      "交接",
	budget:           "整次运行的预算 $%.2f 已用完(已花 $%.4f)。干净地停在这里;加大预算后再跑一次,会接着会话 %s 继续。",
	usage:            "用量到上限了,等到 %s 重置后接着跑",
	near:             "上下文 %s/%s · 还有约 %s 到换代",
	writing:          "上下文 %s/%s —— 正在写交接…",
	done:             "上下文满了,写交接换新会话(%s)",
	stopGenerations:  "换代 %d 次仍然一开局就越线 —— 阈值 %d 很可能低于这个角色的启动地板。把 window 调大(现在 %d),或 --no-handoff。",
	stopDegraded:     "交接连续 %d 次降级 —— 写交接那一轮放不下(阈值 %d,余量 %d)。把 window 调准(现在 %d)或把 headroom 调大,或 --no-handoff。",
	cancelled:        "已取消:%s",
	cancelledUsage:   "等用量重置时被取消:%s",
	cancelledOffline: "等网络恢复时被取消:%s",
	offline:          "网络在 %s 内未恢复",
	unreachable:      "%s:%d 不可达,等待恢复(最多 %s)",
	reachable:        "%s:%d 恢复,继续",
	loop:             "%s 在原地打转:同样的 %s 调用、同样的结果已经 %d 次,这一次被拒绝了",
	loopWorker:       "worker %s",
	seconds:          "%.0f 秒",
	minutes:          "%.0f 分钟",

	trimStub:          store.DefaultTrimStub,
	expired:           store.DefaultExpiryText,
	expiredPointer:    store.DefaultExpiryPointerText,
	interruptedResult: store.DefaultInterruptText,
	orphan:            store.DefaultOrphanText,
}

var enTexts = runtimeTexts{
	interruptWith:    "A human interrupted you here and said:\n\n%s\n\nAdjust to this and carry on.",
	interruptBare:    "A human interrupted briefly; carry on now.",
	retryWith:        "interrupted: resuming with your words",
	retryBare:        "interrupted: resuming",
	betweenSteps:     "After the last step ended and before this one began, a human said:\n\n%s\n\nAdjust to this.",
	failed:           "attempt %d failed (%s), retrying",
	tooFull:          "the context cannot hold even the handoff turn",
	degraded:         "handoff degraded (%s)",
	missing:          "missing ",
	errorResult:      "error result",
	handoffFile:      "handoff",
	budget:           "the run budget of $%.2f is spent ($%.4f so far). Stopped cleanly here; raise the budget and run again to continue session %s.",
	usage:            "usage limit reached: waiting for the reset at %s, then resuming",
	near:             "context %s/%s · about %s left before the handoff",
	writing:          "context %s/%s: writing the handoff…",
	done:             "context full: handoff written, a new session takes over (%s)",
	stopGenerations:  "%d handoffs and every new session starts over the line: the threshold %d is probably below this role's starting floor. Raise the window (--window, now %d), or use --no-handoff.",
	stopDegraded:     "%d degraded handoffs in a row: the handoff turn does not fit (threshold %d, headroom %d). Set the window right (--window, now %d) or raise the handoff headroom, or use --no-handoff.",
	cancelled:        "cancelled: %s",
	cancelledUsage:   "cancelled while waiting for the usage limit to reset: %s",
	cancelledOffline: "cancelled while waiting for the network to come back: %s",
	offline:          "the network did not come back within %s",
	unreachable:      "%s:%d unreachable, waiting for it to come back (at most %s)",
	reachable:        "%s:%d is back, carrying on",
	loop:             "%s is going round in circles: the same %s call with the same result %d times; this one was refused",
	loopWorker:       "worker %s",
	seconds:          "%.0f seconds",
	minutes:          "%.0f minutes",

	trimStub:          "[Tool result archived: {chars} chars in {path}; Read it when needed]",
	expired:           "[Result of {cmd} expired ({age} rounds ago); state may have changed. Rerun it if needed]",
	expiredPointer:    "(its output then is in {path})",
	interruptedResult: "[The previous round was interrupted here; this tool result was never produced]",
	orphan:            "[This step was interrupted and has no result. Redo it if needed.]",
}

// textsFor is the runtime's texts in lang.
func textsFor(lang Lang) runtimeTexts {
	if lang.IsEnglish() {
		return enTexts
	}
	return zhTexts
}

func (s *stepRun) texts() runtimeTexts { return textsFor(s.rt.lang) }

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
