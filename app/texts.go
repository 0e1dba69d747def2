package app

import (
	"errors"
	"github.com/flowerrun/flower"
)

// texts are flower's own fixed words on screen and in messages, in the
// original's Chinese and in English.
var texts = map[string][2]string{
	"setupNow":       {"现在配的是:", "Configured now:"},
	"setupLeft":      {"已退出设置,什么都没写:%s 保持原样。", "Left setup; nothing was written: %s is unchanged."},
	"setupUnchanged": {"什么都没写:%s 保持原样。", "Nothing was written: %s is unchanged."},
	"probeUnsure":    {"! 没验成:%s。key 可能是对的,只是这次没连上(网络、代理、网关宕机)。", "! Could not check the credentials: %s. The key may be right and the gateway just unreachable (network, proxy, gateway down)."},
	"saveAnyway":     {"   没验过也存下来? [y/N] ", "   Save them unchecked anyway? [y/N] "},
	"setupReady":     {"+ 配好了。到项目目录里跑 flower \"你的请求\";先看看效果:flower demo。", "+ Ready. In a project directory run flower \"your request\"; to see it first: flower demo."},
	"langHint":       {"(按你的 locale 说中文;加 --lang en 换成英文)", "(English, following your locale; --lang zh switches to Chinese)"},
	"wsHint":         {"(是不是 %s?)", " (did you mean %s?)"},
	"wsAsk":          {"%s 不存在%s。新建它? [y/N] ", "%s does not exist%s. Create it? [y/N] "},
	"wsMissing":      {"-w %s:没有这个目录%s。检查一下路径,或者加 --create 新建它。", "-w %s: no such directory%s. Check the path, or add --create to make it."},
	"typoAsk":        {"是不是想跑 `flower %s`? [Y/n](n = 把 %q 当成请求交给 agent) ", "Did you mean `flower %s`? [Y/n] (n = send %q to the agent as a request) "},
	"typoNoTTY": {"%[1]q 像是命令 `flower %[2]s` 打错了:是不是想跑 `flower %[2]s`?真要把它当请求:flower go %[1]s",
		"%[1]q looks like a typo of the command `flower %[2]s`: did you mean `flower %[2]s`? To send it as a request anyway: flower go %[1]s"},
	"cliNone": {"- 没找到 Claude Code CLI:没设 FLOWER_CLAUDE,%s 里没有 flower 自带的固定版本,PATH 上也没有 claude。",
		"- No Claude Code CLI found: FLOWER_CLAUDE is not set, %s holds no pinned copy of flower's, and no claude is on PATH."},
	"cliAsk": {"用 npm 把 Claude Code CLI %s 装进上面这个缓存目录(约 200 MB,只装一次)? [Y/n] ",
		"Install the Claude Code CLI %s into that cache directory with npm (about 200 MB, once)? [Y/n] "},
	"cliNoTTY": {"flower 需要 Claude Code CLI,但没找到。加 --yes 再跑一次,让 flower 用 npm 把 %s 装进 %s;或者设 FLOWER_CLAUDE=/path/to/claude。",
		"flower needs the Claude Code CLI and found none. Run again with --yes to let flower install %s with npm into %s, or set FLOWER_CLAUDE=/path/to/claude."},
	"cliDeclined": {"没装 Claude Code CLI,什么也没做。要用自己的:设 FLOWER_CLAUDE=/path/to/claude;要 flower 装:再跑一次并回答 y(或加 --yes)。",
		"The Claude Code CLI was not installed and nothing was done. To use your own: set FLOWER_CLAUDE=/path/to/claude; to let flower install it: run again and answer y (or add --yes)."},
	"cliUntested": {"! %s 的版本是 %s,不在测过的范围 %s..%s 里;出了怪事就设 FLOWER_CLAUDE 指向范围内的 claude。",
		"! %s is version %s, outside the tested range %s..%s; if something breaks, set FLOWER_CLAUDE to a claude in that range."},
	"empty": {"诉求是空的。直接 `flower` 然后按提示输入,或者 flower \"帮我做一个 X\"。",
		"The request is empty. Run `flower` alone and type it at the prompt, or flower \"build me an X\"."},
	"cancelled": {"已取消", "Cancelled"},
	"clarified": {"这个目录的需求已经确认过了(%s),--clarify-only 没什么可做的。要换一件事:加 --new 重新澄清;要接着做:去掉 --clarify-only。",
		"The request in this directory is already clarified (%s): --clarify-only has nothing to do. To clarify another request add --new; to continue the work drop --clarify-only."},
	"quit":            {"已退出。同一目录再跑一次 flower 会接着做。", "Quit. Run flower again in the same directory to continue."},
	"start":           {"要做什么? 一句话就够,回车开始(Ctrl-C 退出)", "What should it do? One sentence is enough; Enter starts (Ctrl-C quits)"},
	"wake":            {"接着上次? 直接回车 = 接着做;也可以说点新的;/new = 重开一件事(Ctrl-C 退出)", "Continue where it stopped? Enter = continue; or say something new; /new = start something else (Ctrl-C quits)"},
	"answerPrompt":    {"你的回答 (回车=跳过,让它自己判断) > ", "Your answer (Enter = skip, let it judge) > "},
	"idlePrompt":      {"(直接说 = 加需求,下个检查点送达;? 开头 = 顺便问一句,不打扰它干活) > ", "(type = add to the request, delivered at the next checkpoint; start with ? = a side question that does not disturb it) > "},
	"noTTY":           {"! 标准输入不是终端,没人能回答提问。想让它自己判断就加 --timeout 0", "! Standard input is not a terminal: nobody can answer questions. Add --timeout 0 to let it judge for itself"},
	"received":        {"+ 收到 (它下次查收件箱时会看到;已追加进确认书)", "+ Received (it sees this at its next inbox check; appended to the brief)"},
	"receivedNoDoc":   {"+ 收到 (它下次查收件箱时会看到;没有确认书可落盘 —— 它可能活不过下一个步骤)", "+ Received (it sees this at its next inbox check; no brief to write it into — it may not survive the next step)"},
	"receivedNotKept": {"+ 收到 (它下次查收件箱时会看到;但没能写进运行目录 —— 这次运行要是崩了,这句话会丢)", "+ Received (it sees this at its next inbox check; but it could not be written to the run's folder — should this run crash, the words are lost)"},
	"lateAnswer":      {"! 提问 %s 刚刚已经超时结算了;这句话改放进收件箱", "! Question %s was settled by its timeout a moment before; the words went to the inbox instead"},
	"interrupting":    {"! 按回车就打断这一轮(正在跑的 subagent 会丢掉半成品)", "! The round is interrupted when you press Enter (a running subagent loses its half-done work)"},
	"interruptWait":   {"! 现在打断不了(评审或交接正在跑);你的话已记下,交给下一个干活的步骤", "! Nothing can be interrupted now (a judge or the hand-over is running); your words are kept and go to the next working step"},
	"interruptKept":   {"  (已记下:%s)", "  (kept: %s)"},
	"leftWords":       {"<- 上次没送达的 %d 句话,交给这次:", "<- %d undelivered words of the last run go to this run:"},
	"noAnswer":        {"! 无人应答 —— 它会自己判断,把假设记进「未知与假设」", "! No answer — it will judge for itself and record the assumption under \"Unknowns and assumptions\""},
	"quotaOut":        {"! 提问额度用完", "! Question quota used up"},
	"skipped":         {". 已跳过", ". Skipped"},
	"remaining":       {"(还能问 %d 次)", "(%d questions left)"},
	"stillPending":    {"  (有 %d 个提问还等着,打断不影响它们)", "  (%d questions still wait; the interrupt does not touch them)"},
	"inputClosed":     {"输入已关闭", "the input is closed"},
	"inputClosedNote": {"! 输入已关闭:现在和以后的提问都立刻交给它自己判断", "! The input is closed: this and every later question is settled at once, and it judges for itself"},
	"noOracle":        {"(这次运行没有旁路问答)", "(no side questions in this run)"},
	"interruptAsk":    {"  要说什么?(直接回车 = 不说话,打断后立刻接着跑;再按一次 Ctrl+C = 退出)", "  What do you want to say? (Enter = no words: it resumes at once; Ctrl+C again = quit)"},
	"done":            {"+ 完成 %d 轮 · $%.4f · 用时 %s", "+ Done, %d turns · $%.4f · %s"},
	"failed":          {"x 失败 %s", "x Failed %s"},
	"status":          {"- 上下文 %s · 累计 $%.2f · %s", "- context %s · total $%.2f · %s"},
	"statusNoCtx":     {"- 累计 $%.2f · %s", "- total $%.2f · %s"},
	"dispatch":        {"> 派人 %s %s", "> dispatch %s %s"},
	"closing":         {"总花费 $%.4f · 清单 %s", "Total cost $%.4f · manifest %s"},
	"wakeBanner":      {"<- 在 %s 接上上次  %s", "<- continuing in %s  %s"},
	"wakeN":           {"第 %d 次唤醒", "wake #%d"},
	"briefDone":       {"需求已确认", "brief confirmed"},
	"goalN":           {"目标 %d 条", "goal: %d checks"},
	"workContext":     {"干活上下文 %s", "work context %s"},
	"stepResumed":     {"  <- 接上次 · 第 %d 次唤醒", "  <- resumed · wake #%d"},
	"aborted":         {"在步骤 '%s' 中止", "stopped at step '%s'"},
	"trimOn":          {"续接会话时修剪旧的大块工具结果(--no-trim 关掉)", "resumed sessions are trimmed of bulky old tool results (--no-trim turns it off)"},
	"trimOff":         {"续接会话时不修剪(-T 打开)", "resumed sessions are not trimmed (-T turns it on)"},
	"probing":         {"- 验一下凭证…", "- checking the credentials…"},
	"probeNet":        {"  (探针没打通:%s —— 当作网络问题,照常开跑)", "  (the probe did not get through: %s — taken as a network problem, running anyway)"},
	"probeAuth":       {"! 凭证被拒:%s", "! Credentials rejected: %s"},
	"probeConfig":     {"! 网关地址或模型名不对:%s", "! Wrong gateway address or model name: %s"},
	"authNoTTY":       {"凭证被拒,且无法交互配置。跑 `flower setup` 重配。", "The credentials were rejected and there is no terminal to reconfigure. Run `flower setup` to set them again."},
	"configNoTTY":     {"网关地址或模型名不对,且无法交互配置。跑 `flower setup` 重配。", "The gateway address or model name is wrong and there is no terminal to reconfigure. Run `flower setup` to set them again."},
	"badCreds":        {"! 看起来是凭证不对:%s", "! The credentials look wrong: %s"},
	"reconfigured":    {"配好了。再跑一次刚才的命令 —— 同一目录会接着上次。", "Configured. Run the same command again — in the same directory it continues where it stopped."},
	"reconfigure":     {"重新配一下,配完立刻再验。", "Set them again; they are checked right after."},
	"envIgnored":      {"! 这个目录的 .env:没用 %s\n  仓库里的 .env 只许给 key 和模型;网关地址写进 %s", "! this folder's .env: ignored %s\n  a workspace .env gives only a key and models; put the gateway in %s"},
	"envUsed":         {"- 用了这个目录的 .env:%s", "- this folder's .env gave %s"},
	"noSandbox":       {"! 瞥一眼没有沙箱,只靠解析器:%s\n  修法:%s", "! no glance sandbox, the parser alone: %s\n  fix: %s"},
	"noSandboxOS":     {"! 瞥一眼没有沙箱,只靠解析器:%s 上没有", "! no glance sandbox, the parser alone: none on %s"},
	"sandboxMissing":  {"没装 bubblewrap", "bubblewrap is not installed"},
	"sandboxRefused":  {"bubblewrap 在这里建不了命名空间", "bubblewrap cannot make namespaces here"},
	"fixLine":         {"修法:%s", "fix: %s"},
	"protection":      {"- 保护:%s", "- protection: %s"},
	"protSandbox":     {"瞥一眼在 bubblewrap 沙箱里跑(只读、断网、无密钥)", "glances in a bubblewrap sandbox (read-only, offline, no key)"},
	"protParser":      {"只靠解析器,没有沙箱(%s)", "the parser alone, no sandbox (%s)"},
	"firstRun":        {"第一次用?给一次凭证就行。", "First time? Give the credentials once."},
	"setupAgain":      {"重新配置。", "Reconfiguring."},
	"setupNone":       {"还没配过凭证。", "No credentials configured yet."},
	"wizardHead":      {"== 配置 flower ", "== configure flower "},
	"wizardWhere":     {"凭证会存到 %s(只你可读)。装一次,处处生效。", "The credentials go to %s (readable by you only). Set once, works everywhere."},
	"wizardKey":       {"1. 你的 API key 或网关 token (Anthropic 官方的 sk-ant-… 或第三方网关签发的)", "1. Your API key or gateway token (Anthropic's sk-ant-… or one a gateway issued)"},
	"wizardBase":      {"2. 网关地址 (直接回车 = Anthropic 官方;第三方网关填它的 BASE_URL)", "2. Gateway address (Enter = Anthropic's own; for a gateway, its BASE_URL)"},
	"wizardModel":     {"3. 模型名 (直接回车 = 默认;网关有自己的模型名就填,如 claude-opus-5[1m])", "3. Model name (Enter = the default; a gateway's own model name if it has one, e.g. claude-opus-5[1m])"},
	"noToken":         {"没给 token,取消。", "No token given; cancelled."},
	"saved":           {"+ 存好了:%s", "+ Saved: %s"},
	"envHeader":       {"# flower 凭证 —— 由 `flower setup` 写。别提交进版本库。", "# flower credentials — written by `flower setup`. Do not commit this file."},
	"notSaved":        {"凭证被拒,什么都没写:%s 保持原样。检查 key 和网关地址,再跑一次 `flower setup`。", "The credentials were rejected; nothing was written: %s is unchanged. Check the key and the gateway address, then run `flower setup` again."},
	"demoSimulated": {"! 这是演示:模型是模拟的(本机 127.0.0.1 上按脚本回答),CLI 是真的;不需要凭证,不联网,不花钱。",
		"! This is a demo: the model is simulated (scripted answers on 127.0.0.1 in this process), the CLI is real; no credentials, no network, no cost."},
	"demoWhere":   {"- 演示目录 %s · 请求:%s", "- demo folder %s · request: %s"},
	"demoQuit":    {"已退出。`%s demo -w %s` 会接着演示。", "Quit. `%s demo -w %s` continues the demo where it stopped."},
	"demoTry":     {"- 可以试:自己回答提问 · ?问题 = 旁路问答 · Ctrl-C = 打断", "- Try: answer it yourself · ?question = side question · Ctrl-C = interrupt"},
	"demoAnswers": {"  (演示:模拟的人回答了 %s)", "  (demo: the simulated human answered %s)"},
	"demoDone": {"+ 演示结束:看看 %s,以及 %s/.flower/notes/ 里的确认书、目标和问答记录。真跑:先 `flower setup`,再 flower \"你的请求\"。",
		"+ Demo over: look at %s, and at the brief, goal and Q&A log in %s/.flower/notes/. For real: `flower setup`, then flower \"your request\"."},
	"setupNoTTY": {"`flower setup` 要在终端里交互运行(标准输入不是终端)。不交互的话:把 ANTHROPIC_API_KEY 写进 %s,或 export 进环境。", "`flower setup` asks its questions on a terminal (standard input is not one). Without one: put ANTHROPIC_API_KEY into %s, or export it."},
}

func isEn(l flower.Lang) bool { return l.IsEnglish() }

// text returns key's words in l.
func text(tag flower.Lang, key string) string {
	t, ok := texts[key]
	if !ok {
		return key
	}
	if isEn(tag) {
		return t[1]
	}
	return t[0]
}

func errorText(tag flower.Lang, key string) error { return errors.New(text(tag, key)) }
