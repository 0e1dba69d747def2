package report

import (
	"fmt"
	"strings"

	"github.com/flowerrun/flower/internal/lang"
)

// texts are the page's words in English and Chinese, by key. The page
// speaks its run's language (run.json), English when none is recorded.
// Keys with a prefix name a value the data holds: kind_ a timeline
// moment's kind, state_ a verdict's conclusion, role_ a role, out_ an
// outcome's sentence (a format taking the step, then the rounds).
var texts = map[string]map[string]string{
	"en": {
		"title": "flower report", "made": "made", "workspace": "workspace",
		"summary": "Why it cost what it did", "request": "Request", "no_request": "not in the session store",
		"outcome": "Outcome", "duration": "Duration", "tokens": "Tokens", "cost": "Cost",
		"tok_in": "in", "tok_out": "out", "tok_read": "cache read", "tok_of_which": "stored calls:", "tok_write": "cache write",
		"of_budget": "of a %s budget (%s%% spent)", "no_budget": "no budget set or recorded",
		"drivers": "Largest cost drivers", "driver_of": "%s · %s",
		"wakes": "Wakes", "wake": "wake", "wake_n": "wake %d", "started": "started", "steps_n": "steps", "outcome_short": "outcome",
		"w_duration": "duration", "w_cost": "cost",
		"active_time": "time the wakes ran, summed", "continue": "To continue, run flower again in the workspace.",
		"out_achieved": "Achieved in step %s.", "out_needs_look": "Needs your look: in step %s the judge ruled the goal achieved, but the change report flagged changes that can make a check pass without the work.",
		"out_achieved_except":     "Achieved in step %s, except the items that cannot be verified on this machine: they did not pass; check them where they can be.",
		"out_achieved_unmeasured": "Achieved in step %s, not measured: flower could not run the goal's commands on this machine; they passed on the judge's reading alone.",
		"out_not_achieved":        "Not achieved: in step %s the rounds ran out and the last judge said not yet.",
		"out_accepted":            "Accepted by the person as it stands: in step %s the judge did not rule the goal achieved.",
		"out_unreachable":         "Unreachable: in step %s the judge ruled the goal cannot be reached or verified here.",
		"out_stopped":             "Stopped by the human in step %s.", "out_failed": "Failed in step %s.",
		"out_budget": "Stopped in step %s: the cost budget is spent.",
		"out_halted": "Stopped after step %s: its check did not pass.", "out_done": "Done: every step passed, the last was %s.",
		"out_running": "Still running in step %s, or ended without recording it.", "out_running_nostep": "Still running: no step has ended yet, or the run ended without recording it.%.0s", "out_unknown": "No step is recorded.%.0s",
		"rounds_ran":      " %s ran.",
		"why_killed":      "flower was stopped (Ctrl-C twice, or a signal) while the step ran; the next run continues its session.",
		"why_interrupted": "the human interrupted the step and it was not resumed.",
		"reason":          "Reason", "missing": "The brief lacks: %s.", "unreadable": "The last round has no verdict: flower recorded no decision for it.",
		"problems": "What could not be read",
		"context":  "Main-thread context per turn", "legend_context": "context read by a turn (tokens)", "legend_threshold": "handoff threshold",
		"legend_window": "context window", "legend_handoff": "handoff (a fresh session continues)", "off_scale": "(above the chart's scale)",
		"turns": "main-thread turns", "turns_col": "turns", "turn": "turn", "n_turns": "%d turns", "threshold": "handoff threshold", "window": "window", "not_recorded": "not recorded",
		"timeline": "Timeline", "legend_ok": "step passed", "legend_fail": "step failed or stopped", "legend_judge": "judge",
		"legend_wait": "retry or wait", "time": "time", "step": "step", "what": "what", "text": "text", "wait": "wait", "answer": "answer",
		"kind_step": "step", "kind_session": "session", "kind_retry": "retry", "kind_interrupt": "interrupt", "kind_usage_limit": "usage limit",
		"kind_offline": "offline", "kind_handoff": "handoff", "kind_ask": "question", "kind_verdict": "verdict", "kind_rate_limit": "rate limit", "kind_loop": "loop",
		"no_words":   "(no words)",
		"cost_title": "Cost", "cost_note": "Each table is sorted largest first. By role and by model each step's cost is split over its threads by token weight (an estimate; the step totals are the CLI's).",
		"by_step": "step", "by_round": "round", "by_role": "role", "by_model": "model", "usd": "USD", "share": "share",
		"outside_rounds": "outside rounds", "round_n": "round %d", "rounds_1": "1 round", "rounds_n": "%d rounds", "unknown_model": "unknown",
		"outside_note": "“outside rounds” is what ran before or after the work rounds: clarifying the request, setting the goal, the hand-over, side questions.",
		"unknown_note": "model “unknown” is the cost of steps whose tokens the session store does not hold (a side question's store, a store that could not be read), so it cannot be split by model.",
		"threads":      "Main thread against subagents", "entries": "entries", "characters": "characters", "main_thread": "main thread", "subagents": "subagents",
		"session": "session", "model": "model", "main_turns": "main turns", "main_entries": "main entries", "subagent_turns": "subagent turns",
		"cache": "Cache reuse against rebuild", "cache_line": "cache read (reused) %s tokens · cache write (rebuilt) %s tokens · reuse",
		"verdicts": "Verdicts", "judge": "judge", "round": "round", "conclusion": "conclusion", "not_passed": "not passed",
		"settled_timeout": "no answer in time", "settled_declined": "skipped", "settled_cancelled": "cancelled", "settled_over_budget": "over the question quota", "settled_invalid": "an empty question",
		"state_achieved": "achieved", "state_not_yet": "not yet", "state_unreachable": "unreachable", "state_none": "no verdict",
		"log_written_by_tool": "The Q&A log in the workspace (%s) was written by a tool, not by flower; the questions and answers below are flower's own copy, and nothing the tool wrote is the person's.",
		"put_back":            "Written by a tool and put back",
		"log_unchecked":       "flower kept no copy of this Q&A log (a run from an older flower, or the copy was removed): an answer below cannot be told from one a tool wrote.",
		"questions":           "Questions and answers", "id": "id", "question": "question", "choices": "choices", "state": "state",
		"inbox": "Inbox messages", "message": "message",
		"tools": "Tools, denials, spills", "tool": "tool", "denials": "Coordinator denials", "tried": "tried", "refusal": "refusal",
		"kept_out": "Kept out of the context", "spills_line": "%d spill files, %d bytes (%d results came back as a pointer when called; the rest were trimmed on resume)",
		"workbench": "Workbench scripts", "script": "script", "runs": "runs",
		"steps": "Steps (the manifest)", "role": "role", "ok": "ok", "attempts": "attempts", "seconds": "seconds", "retired": "retired", "error": "error",
		"documents": "Documents", "absent": "absent",
		"role_coordinator": "coordinator", "role_worker": "workers", "role_judge": "judge", "role_clarifier": "clarifier", "role_oracle": "side questions",
	},
	"zh": {
		"title": "flower 报告", "made": "生成于", "workspace": "工作区",
		"summary": "钱花在了哪里", "request": "需求", "no_request": "会话库里没有",
		"outcome": "结果", "duration": "用时", "tokens": "token", "cost": "花费",
		"tok_in": "输入", "tok_out": "输出", "tok_read": "缓存读", "tok_of_which": "存下的调用里:", "tok_write": "缓存写",
		"of_budget": "预算 %s(已用 %s%%)", "no_budget": "没有设定或记录预算",
		"drivers": "花费最多的三处", "driver_of": "%s · %s",
		"wakes": "各次唤醒", "wake": "唤醒", "wake_n": "第 %d 次", "started": "开始", "steps_n": "步数", "outcome_short": "结果",
		"w_duration": "用时", "w_cost": "花费",
		"active_time": "各次唤醒实际运行时间之和", "continue": "要继续,在工作区里再运行一次 flower。",
		"out_achieved": "已达成:步骤 %s。", "out_needs_look": "需要你看一眼:在步骤 %s,判定者判为已达成,但变更报告标记了不做实事也能让检查通过的改动。",
		"out_achieved_except":     "已达成:步骤 %s,除了在这台机器上无法验证的判定项:它们没有通过,请在能验证的地方自己看一下。",
		"out_achieved_unmeasured": "已达成,但没有测量:步骤 %s。flower 在这台机器上没能自己运行目标里的命令,它们只凭判定者的阅读通过。",
		"out_not_achieved":        "未达成:步骤 %s 的轮次用完了,最后一次判定仍是“还没有”。",
		"out_accepted":            "人接受了现在的结果:在步骤 %s,判定者没有判目标达成。",
		"out_unreachable":         "无法达成:在步骤 %s,判定认为目标在这里达不到或无法验证。",
		"out_stopped":             "被人叫停:在步骤 %s。", "out_failed": "失败:在步骤 %s。",
		"out_budget": "在步骤 %s 停下:花费预算用完了。",
		"out_halted": "在步骤 %s 后停下:检查没有通过。", "out_done": "完成:每一步都通过了,最后一步是 %s。",
		"out_running": "仍在步骤 %s 运行,或结束时没有记下。", "out_running_nostep": "仍在运行:还没有哪一步结束,或者运行结束时没有记下。%.0s", "out_unknown": "还没有记录任何步骤。%.0s",
		"rounds_ran":      "共跑了 %s。",
		"why_killed":      "步骤运行时 flower 被停下(按了两次 Ctrl-C,或收到信号);下次运行会接着它的会话做。",
		"why_interrupted": "人打断了这一步,之后没有恢复。",
		"reason":          "原因", "missing": "需求缺少:%s。", "unreadable": "最后一轮没有判定:flower 没有为它记下结论。",
		"problems": "读不了的文件",
		"context":  "主线程每轮的上下文", "legend_context": "每轮读入的上下文(token)", "legend_threshold": "交接阈值",
		"legend_window": "上下文窗口", "legend_handoff": "交接(新会话接着做)", "off_scale": "(超出图的刻度)",
		"turns": "主线程轮次", "turns_col": "轮次", "turn": "轮", "n_turns": "%d 轮", "threshold": "交接阈值", "window": "窗口", "not_recorded": "没有记录",
		"timeline": "时间线", "legend_ok": "步骤通过", "legend_fail": "步骤失败或被叫停", "legend_judge": "判定",
		"legend_wait": "重试或等待", "time": "时间", "step": "步骤", "what": "事件", "text": "内容", "wait": "等待", "answer": "回答",
		"kind_step": "步骤", "kind_session": "会话", "kind_retry": "重试", "kind_interrupt": "打断", "kind_usage_limit": "用量上限",
		"kind_offline": "断网", "kind_handoff": "交接", "kind_ask": "提问", "kind_verdict": "判定", "kind_rate_limit": "限流", "kind_loop": "循环",
		"no_words":   "(没有说话)",
		"cost_title": "花费", "cost_note": "每张表按金额从大到小排。按角色和按模型的拆分是把每一步的花费按 token 权重分到各线程上(估算;每一步的总数来自 CLI)。",
		"by_step": "步骤", "by_round": "轮次", "by_role": "角色", "by_model": "模型", "usd": "美元", "share": "占比",
		"outside_rounds": "轮次之外", "round_n": "第 %d 轮", "rounds_1": "1 轮", "rounds_n": "%d 轮", "unknown_model": "未知",
		"outside_note": "“轮次之外”是干活轮次之前和之后的花费:确认需求、设定目标、交代、旁问。",
		"unknown_note": "模型“未知”是会话库里没有 token 记录的步骤(旁问的库、读不了的库)的花费,无法按模型拆分。",
		"threads":      "主线程与子代理", "entries": "条目", "characters": "字符", "main_thread": "主线程", "subagents": "子代理",
		"session": "会话", "model": "模型", "main_turns": "主线程轮次", "main_entries": "主线程条目", "subagent_turns": "子代理轮次",
		"cache": "缓存复用与重建", "cache_line": "缓存读(复用)%s token · 缓存写(重建)%s token · 复用率",
		"verdicts": "判定", "judge": "判定", "round": "轮", "conclusion": "结论", "not_passed": "没通过的",
		"settled_timeout": "没有按时回答", "settled_declined": "跳过了", "settled_cancelled": "已取消", "settled_over_budget": "超出提问次数", "settled_invalid": "空问题",
		"state_achieved": "已达成", "state_not_yet": "还没有", "state_unreachable": "无法达成", "state_none": "没有判定",
		"log_written_by_tool": "工作区里的问答记录(%s)被工具改写过,不是 flower 写的;下面的问答是 flower 自己留的副本,工具写进去的内容都不是人的话。",
		"put_back":            "被工具改写、已放回原样的文件",
		"log_unchecked":       "flower 没有留这份问答记录的副本(旧版 flower 的运行,或副本被删了):下面的回答分不清是人的还是工具写的。",
		"questions":           "问答", "id": "编号", "question": "问题", "choices": "选项", "state": "状态",
		"inbox": "收件箱消息", "message": "消息",
		"tools": "工具、拒绝、外存", "tool": "工具", "denials": "协调者被拒绝的调用", "tried": "尝试", "refusal": "拒绝理由",
		"kept_out": "挡在上下文之外的", "spills_line": "%d 个外存文件,%d 字节(%d 个结果调用时就以指针返回;其余在恢复会话时裁掉)",
		"workbench": "工作台脚本", "script": "脚本", "runs": "运行次数",
		"steps": "步骤(manifest)", "role": "角色", "ok": "成功", "attempts": "尝试", "seconds": "秒", "retired": "退役会话", "error": "错误",
		"documents": "文档", "absent": "不存在",
		"role_coordinator": "协调者", "role_worker": "子代理", "role_judge": "判定", "role_clarifier": "确认需求", "role_oracle": "旁问",
	},
}

// pageLang is the page's language: "zh" for a run recorded in Chinese,
// else "en".
func pageLang(recorded string) string {
	if lang.Lang(recorded).IsChinese() {
		return "zh"
	}
	return "en"
}

// tr is the text of key in the page's language; the English one when the
// language lacks it, the key's tail when neither has it (a kind or role
// added later shows as its own name).
func tr(l, key string) string {
	if s, ok := texts[l][key]; ok {
		return s
	}
	if s, ok := texts["en"][key]; ok {
		return s
	}
	if _, tail, ok := strings.Cut(key, "_"); ok {
		return tail
	}
	return key
}

// trf is tr used as a format.
func trf(l, key string, a ...any) string { return fmt.Sprintf(tr(l, key), a...) }
