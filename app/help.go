package app

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/flowerrun/flower"
	"github.com/flowerrun/flower/internal/screen"
)

// exitCodes are a run's: the top-level help (flower "build X" is a run),
// go, once, run and demo end with them. setup and report have their own;
// reply, version and the team's commands say inline what fails.
const exitCodes = `Exit codes of a run:
  0      done
  1      stopped on purpose, message on stderr: cancelled, empty request, missing
         or rejected credentials, a failed step, a directory that cannot be written
  2      a command-line error: unknown command or flag, bad flag value
  130    Ctrl-C twice: stopped, everything resumable (run flower again to go on)
  128+N  killed by signal N (SIGTERM, SIGHUP) after the in-flight step was
         recorded
`

const exitCodesZh = `运行的退出码:
  0      完成
  1      有意停下,原因在 stderr:取消、请求为空、没有凭据或凭据被拒、某一步失败、
         目录写不进去
  2      命令行错误:没有这个命令或参数,参数值不对
  130    连按两次 Ctrl-C:停下,一切都能接着做(再跑一次 flower)
  128+N  被信号 N(SIGTERM、SIGHUP)杀掉,正在跑的那一步已经记下
`

const globalFlags = `Global flags (before or after the command):
  -w, --workspace DIR   the repository to work in (default .); one that does not
                        exist is refused (on a terminal: asked) unless --create
  -r, --run-dir DIR     run records (default <workspace>/runs; a relative DIR is
                        from here)
  -v, --verbose         also subagent prose, tool output, prompts, the
                        credentials in use (flower -v alone: the version)
  -W, --workbench       run/once: a workbench in <run-dir>/workbench (go always
                        has one)
  -T, --trim            trim old tool results when a session resumes (default
                        on for go, off for run and once); --no-trim: off
  --lang en|zh          flower's language (default: the run directory's, else
                        the locale's: LC_ALL, LC_MESSAGES, LANG; zh* is Chinese)
  --yes                 install the pinned Claude Code CLI with npm, and send a
                        request over 20 KB, without asking

The Claude Code CLI: FLOWER_CLAUDE=/path/to/claude, else flower's pinned copy in
${XDG_CACHE_HOME:-~/.cache}/flower/claude-cli/<version>, else claude on PATH (a
warning outside the tested versions, which flower version shows); with none, go,
run, once and demo install the pinned version there with npm (one question on a
terminal; --yes for scripts). A one-word request a typo away from a command or
flag is asked about ("did you mean …?"); off a terminal it is refused (exit 2):
flower go WORD sends it anyway.
`

const globalFlagsZh = `全局参数(写在命令前后都行):
  -w, --workspace DIR   在哪个仓库里干活(默认 .);不存在的目录会被拒绝(在终端上
                        会问一句),除非加 --create
  -r, --run-dir DIR     运行记录放哪(默认 <workspace>/runs;相对路径从当前目录算)
  -v, --verbose         也显示 subagent 的话、工具输出、提示词和正在用的凭据
                        (单独的 flower -v:版本)
  -W, --workbench       run/once:在 <run-dir>/workbench 建工作台(go 总是有)
  -T, --trim            续接会话时修剪旧的工具结果(go 默认开,run 和 once 默认关);
                        --no-trim 关掉
  --lang en|zh          flower 说哪种语言(默认:运行目录记下的,否则看 locale:
                        LC_ALL、LC_MESSAGES、LANG;zh* 是中文)
  --yes                 不问就用 npm 装 flower 固定版本的 Claude Code CLI,
                        不问就发出超过 20 KB 的请求

Claude Code CLI 从这里找:FLOWER_CLAUDE=/path/to/claude,否则 flower 在
${XDG_CACHE_HOME:-~/.cache}/flower/claude-cli/<version> 的固定版本,否则 PATH 上的
claude(不在测过的版本范围里会提醒,范围见 flower version);一个都没有时,go、run、
once 和 demo 用 npm 把固定版本装到那里(在终端上先问一句;脚本里加 --yes)。一个词的
请求要是离某个命令或参数只差一个笔误,会先问"是不是想跑……?";不在终端上就拒绝(退出码
2):真要当请求就写 flower go 这个词。
`

const filesWritten = `Files written:
  <run-dir>/sessions.db, manifest.json, lineage.json, events.jsonl
                        the run's records
  <run-dir>/aside/      side questions (? lines), kept apart
  ${XDG_STATE_HOME:-~/.local/state}/flower/runs/<run-dir key>/
                        the human's side, outside the workspace so no agent
                        writes it: pending.json, replies/ (flower reply), words/
                        (every typed word until a run delivered it)
  <workspace>/.flower/  the workbench: INDEX.md scripts/ artifacts/ notes/ spill/
  ${XDG_CONFIG_HOME:-~/.config}/flower/.env
                        credentials (flower setup, mode 0600)
  ${XDG_CACHE_HOME:-~/.cache}/flower/claude-cli/
                        the pinned Claude Code CLI (npm)

A run in PostgreSQL, so any machine of a team can continue it:
  FLOWER_DATABASE_URL=postgres://user:password@host:5432/db
                        keeps the run's sessions and files (run dir, the human's
                        side, the workbench) in the database; each machine works
                        in its own checkout and HOME, one machine at a time
  FLOWER_RUN=NAME       the run's name there (default: the repository's first
                        commit, the workspace's path in it and the run dir's:
                        the same on every clone)
  FLOWER_DATABASE_LEASE=30s
                        how soon another machine may take over a run whose
                        machine died (a live run beats every third of it)
`

const filesWrittenZh = `写下的文件:
  <run-dir>/sessions.db、manifest.json、lineage.json、events.jsonl
                        运行的记录
  <run-dir>/aside/      顺便问的问题(? 开头的行),单独放
  ${XDG_STATE_HOME:-~/.local/state}/flower/runs/<run-dir key>/
                        人这一侧的东西,放在工作区外面,所以没有 agent 会写它:
                        pending.json、replies/(flower reply)、words/(每句打的
                        话,直到某次运行送达)
  <workspace>/.flower/  工作台:INDEX.md scripts/ artifacts/ notes/ spill/
  ${XDG_CONFIG_HOME:-~/.config}/flower/.env
                        凭据(flower setup 写,权限 0600)
  ${XDG_CACHE_HOME:-~/.cache}/flower/claude-cli/
                        flower 固定版本的 Claude Code CLI(npm 装的)

运行放在 PostgreSQL 里,团队里哪台机器都能接着跑:
  FLOWER_DATABASE_URL=postgres://user:password@host:5432/db
                        把运行的会话和文件(运行目录、人这一侧、工作台)放进数据库;
                        每台机器用自己的 checkout 和 HOME,同一时间只有一台在跑
  FLOWER_RUN=NAME       运行在库里的名字(默认由仓库的第一个提交、工作区在仓库里的路径
                        和运行目录组成:每个克隆都一样)
  FLOWER_DATABASE_LEASE=30s
                        跑这个运行的机器死了以后,多久另一台机器可以接手(活着的运行
                        每过三分之一就报一次平安)
`

// usage is the top-level help: what flower does, the three commands a
// newcomer runs first, then the rest.
func (m *Command) usage(l flower.Lang) string {
	if !isEn(l) {
		return m.named(`flower 让一个写代码的 agent 连干几个小时也不跑偏:先问清你要什么,定下目标,一轮轮
地干,直到评审认定目标达成;下次再跑,从停下的地方接着做。

先跑这三个:
  flower demo               离线看一次完整的运行,模型是模拟的:不花钱,不要 key
  flower setup              配好 API key(或网关的 token)和模型
  flower "做一个 X"         在当前目录开始(或接着做)一件事

还有:
  flower                    接着做上次的事,或者输入一件新的
  flower reply "回答"       回答这个目录里正在等的提问
  flower report [run_dir]   一次运行的 HTML 报告:花费、上下文、评审结论、时间线
  flower once "提示"        临时 agent 的一步,不走流程
  flower run                跑你自己写的流程程序
  flower version            flower 和 Claude Code CLI 的版本

团队队列,放在一个 PostgreSQL 里(详见 flower submit --help):
  flower submit --repo REPO "请求"   排进队列,哪个 worker 空着就谁做
  flower worker             在这台机器上做队列里的运行,每个在自己的分支上
  flower runs [RUN]         各个运行:状态、机器、步骤、花费、时长(--state、--limit)
  flower reply RUN "回答"   在任何机器上回答某个运行的提问
  flower cancel RUN         干净地停下一个运行
  flower retry RUN          把失败(搁置)的运行放回队列
  flower report RUN         从数据库生成某个运行的报告
  数据库:$FLOWER_DATABASE_URL、--db-file F,或 --db URL(不带密码)

flower go --help 讲运行的参数和它写哪些文件;flower <命令> --help 讲其他命令的参数。

例子:
  flower "给 CLI 加一个 --json 参数" --rounds 2
  flower -w ~/src/app --timeout 0 "修好失败的测试" < /dev/null
  flower once -t Read,Grep "配置是在哪解析的?"
  flower reply 2
  flower report --open

` + globalFlagsZh + `
` + exitCodesZh)
	}
	return m.named(`flower runs a coding agent for hours without losing the thread: it asks what
you mean, sets a goal, works in rounds until a judge finds the goal met, and
goes on where it stopped when you run it again.

Start here:
  flower demo               a whole run offline, on a simulated model: no key
  flower setup              your API key (or a gateway's) and the model
  flower "build X"          start (or continue) work on a request in this folder

More:
  flower                    continue the last request, or type a new one
  flower reply "words"      answer a waiting question of a run in this folder
  flower report [run_dir]   a run on one HTML page: cost, context, verdicts
  flower once "prompt"      one step of an ad-hoc agent, no workflow
  flower run                run a workflow program of your own
  flower version            flower's version and the Claude Code CLI's

A team's queue on one PostgreSQL (see flower submit --help):
  flower submit --repo REPO "request"   queue a run for any free worker
  flower worker             work queued runs here, each on its own branch
  flower runs [RUN]         the runs: state, host, step, cost, age
  flower workers            the workers: state, runs held, last heard from
  flower serve              the runs, their questions and the workers in the browser
  flower worker --drain NAME            ask a worker to finish and leave
  flower runs prune --ended-before 30d  remove old ended runs' rows
  flower reply RUN "answer"   answer a run's question from any machine
  flower cancel RUN         stop a run cleanly
  flower retry RUN          put a failed (parked) run back in the queue
  flower report RUN         the report page of a run, from the database
  The database: $FLOWER_DATABASE_URL, --db-file F, or --db URL without its password.

flower <command> --help shows a command's flags; flower go --help also the files
a run writes.

Examples:
  flower "add a --json flag to the CLI" --rounds 2
  flower -w ~/src/app --timeout 0 "fix the failing tests" < /dev/null
  flower once -t Read,Grep "where is the config parsed?"
  flower reply 2
  flower report --open

` + globalFlags + `
` + exitCodes)
}

// versionUsage is flower version's help.
func (m *Command) versionUsage(l flower.Lang) string {
	return m.named(l.Pick(`用法:flower version(也可以写 flower --version、flower -V)

打印 flower 的版本(模块版本或提交号)、一次运行会用的 Claude Code CLI 及其版本(跟运行一样
去找:FLOWER_CLAUDE、flower 的固定版本、PATH;什么也不装,不启动会话),以及测过的版本范围。
什么也不启动,退出码总是 0。
`, `Usage: flower version (also flower --version, flower -V)

Prints flower's version (its module version or commit), the Claude Code CLI a
run would use with its version (found as a run finds it: FLOWER_CLAUDE,
flower's pinned copy, PATH; nothing is installed, no session starts) and the
range of versions flower is tested with. It starts nothing and exits 0.
`))
}

// goUsage is the run's help, in l.
func (m *Command) goUsage(l flower.Lang) string {
	if !isEn(l) {
		return m.named(`用法:flower [go] [参数] ["请求"]

先把请求澄清成一份需求确认书(需要时问你),定下带检查清单的目标,然后一轮轮地干,直到评审
认定目标达成。在同一目录再跑一次就接着做;运行中直接打字 = 补充请求,以 ?(或 ?)开头 =
顺便问一句。

参数:
  --asks N          提问额度:0 = 不问,-1 = 不限(默认 -1)
  --rounds N        一共干几轮,至少 1(默认 3)
  --no-goal         不设目标、不评审:只干一轮
  --judge-can-run   两个评审(目标和每轮)都可以跑 Bash 来核实
  --check-network   每次评审前 flower 自己跑检查清单里的命令时可以联网(默认不行;
                    这些命令在沙箱里跑,写下的东西会被丢掉)
  --timeout SEC     一个提问等多久(默认 1800 秒);0 = 每个提问立刻结算(无人值守
                    时用);forever = 一直等到有人回答
  --isolate         worker 用 git worktree(需要 git 仓库)
  --window N        上下文窗口有多少 token(默认按模型名算)
  --no-handoff      让 CLI 自己压缩上下文,不交接给新会话
  --new             把上一份需求、目标和 lineage 归档,重新开始
  --continue        目标达成之后,把这次的请求加进去,而不是另起一件事
  --clarify-only    出了需求确认书就停
  --resume-run      不问就把这个目录的运行从停下的地方接着做:REQUEST 是它开始时的
                    请求(只在需求确认书还没有时用),不会加进确认书(团队的 worker
                    会传它)
  --budget USD      整个运行花到这么多钱就干净地停下
  --notify CMD      每当有提问开始等待就跑 CMD(sh -c);也可以在环境变量或 .env
                    里设 FLOWER_NOTIFY。CMD 能看到 FLOWER_QUESTION、
                    FLOWER_QUESTION_ID、FLOWER_CHOICES(一行一个)、FLOWER_WORKSPACE、
                    FLOWER_RUN_DIR。最多跑 30 秒;失败只报一次,从不停下运行。
  --no-bequest      跳过运行结束时的交接

例子:
  flower "做一个 CSV 导入器" --asks 3 --rounds 2
  flower --timeout 0 "升级依赖" < /dev/null
  flower --notify 'notify-send "flower 在问" "$FLOWER_QUESTION"' "做一个 X"
  flower --notify 'curl -s -d "$FLOWER_QUESTION" ntfy.sh/my-flower' "做一个 X"

` + globalFlagsZh + `
` + filesWrittenZh + `
` + exitCodesZh)
	}
	return m.named(`Usage: flower [go] [flags] ["request"]

Clarifies the request into a brief (asking you when it must), sets a goal with a
checklist, then works in rounds until a judge rules the goal achieved. Run it again
in the same directory to continue; type during the run to add to the request, or
start a line with ? (or ？) to ask a side question.

Flags:
  --asks N          question quota: 0 = none, -1 = unlimited (default -1)
  --rounds N        work rounds in all, at least 1 (default 3)
  --no-goal         no goal step and no verdicts: one round of work
  --judge-can-run   both judges (goal and round) may run Bash to verify
  --check-network   flower's own runs of the checklist's commands before each
                    verdict may use the network (off by default; they run in a
                    sandbox and their writes are thrown away)
  --timeout SEC     how long a question waits (default 1800); 0 = settle every
                    question at once (for unattended runs); forever = until answered
  --isolate         workers use git worktrees (needs a git repository)
  --window N        the context window in tokens (default: from the model name)
  --no-handoff      let the CLI compact instead of handing off to a fresh session
  --new             archive the last brief, goal and lineage and start afresh
  --continue        after an achieved goal, add the request to it instead of starting anew
  --clarify-only    stop after the brief
  --resume-run      carry this directory's run on where it stopped, without asking:
                    REQUEST is the one it started with (used only before its brief
                    exists), never added to the brief (a team's worker passes it)
  --budget USD      stop cleanly when the whole run has cost this much
  --notify CMD      run CMD (sh -c) whenever a question starts waiting; also FLOWER_NOTIFY
                    in the environment or a .env. CMD sees FLOWER_QUESTION,
                    FLOWER_QUESTION_ID, FLOWER_CHOICES (one a line), FLOWER_WORKSPACE,
                    FLOWER_RUN_DIR. It runs at most 30 s; a failure is reported once and
                    never stops the run.
  --no-bequest      skip the end-of-run hand-over

Examples:
  flower "build a CSV importer" --asks 3 --rounds 2
  flower --timeout 0 "upgrade the dependencies" < /dev/null
  flower --notify 'notify-send "flower asks" "$FLOWER_QUESTION"' "build X"
  flower --notify 'curl -s -d "$FLOWER_QUESTION" ntfy.sh/my-flower' "build X"

` + globalFlags + `
` + filesWritten + `
` + exitCodes)
}

func (m *Command) onceUsage(l flower.Lang) string {
	if !isEn(l) {
		return m.named(`用法:flower once [参数] "提示"

临时 agent 的一步("ad-hoc"):不走流程,不提问,不能插话;第一次 Ctrl-C 就结束。它的会话
跟别的步骤一样记在 <run-dir> 里。

参数:
  -i, --instructions TEXT      追加到 Claude Code 的系统提示词后面
  -t, --tools LIST             不问就放行的工具(默认 Read,Glob,Grep)
  -p, --permission-mode MODE   default、acceptEdits、plan 或 bypassPermissions(默认 default)
  -b, --budget USD             这一步最多花多少钱
      --resume SESSION_ID      接着一个会话做
      --fork                   和 --resume 一起用:接着它的一份副本做

例子:
  flower once "用三行总结 README.md"
  flower once -t Read,Edit -p acceptEdits "改掉 main.go 里的错别字"
  flower once --resume 5f1c… --fork "现在换另一种做法试试"

` + globalFlagsZh + `
` + exitCodesZh)
	}
	return m.named(`Usage: flower once [flags] "prompt"

One step of an ad-hoc agent ("ad-hoc"): no workflow, no questions, no interrupt;
the first Ctrl-C ends it. Its session is recorded in <run-dir> like any step.

Flags:
  -i, --instructions TEXT      appended to Claude Code's system prompt
  -t, --tools LIST             tools approved without asking (default Read,Glob,Grep)
  -p, --permission-mode MODE   default, acceptEdits, plan or bypassPermissions (default default)
  -b, --budget USD             cap this step's cost
      --resume SESSION_ID      continue a session
      --fork                   with --resume: continue a copy of it

Examples:
  flower once "summarize README.md in three lines"
  flower once -t Read,Edit -p acceptEdits "fix the typo in main.go"
  flower once --resume 5f1c… --fork "now try the other approach"

` + globalFlags + `
` + exitCodes)
}

func (m *Command) demoUsage(l flower.Lang) string {
	if !isEn(l) {
		return m.named(`用法:flower demo [--lang en] [-w DIR]

走一遍运行的每个阶段(一个提问、需求确认书、目标、评审下的两轮、交接):用的是真的 Claude Code
CLI,对面是本进程在 127.0.0.1 上按脚本模拟的模型。不读凭据,什么都不出这台机器,不花钱。文件写
到一个新的临时目录(或 -w DIR)。

像真跑一样试试:自己回答它的提问(hello.txt 会写上你打的字;模拟的人要等你有了 15 秒而且停
手不打了才回答),以 ? 开头打一行顺便问一句,按一次 Ctrl-C 插几句话,按两次退出;
` + "`flower demo -w DIR`" + ` 接着做。


跟每个命令一样去找 Claude Code CLI(FLOWER_CLAUDE、缓存里 flower 的固定版本、PATH);一个都
没有时,用 npm 装上固定版本(--yes:不问)。语言跟着 locale 走;--lang en 或 --lang zh 来选。

` + exitCodesZh)
	}
	return m.named(`Usage: flower demo [--lang en] [-w DIR]

Shows every stage of a run (a question, the brief, the goal, two rounds under the
judge, the hand-over) on the real Claude Code CLI talking to a simulated model that
this process serves on 127.0.0.1 from a script. No credentials are read, nothing
leaves the machine, nothing is paid for. The files go to a fresh temporary folder
(or -w DIR).

Try what you would in a real run: answer its question yourself (hello.txt will say
what you typed; a simulated human answers only after you had 15 s and stopped
typing), ask a side question with a line starting with ?, press Ctrl-C once to
interrupt with a few words, twice to quit; ` + "`flower demo -w DIR`" + ` continues it.


Finds the Claude Code CLI as every command does (FLOWER_CLAUDE, flower's pinned copy
in the cache, PATH) and, with none, installs the pinned version with npm (--yes: without
asking). Its language follows the locale; --lang en or --lang zh chooses.

` + exitCodes)
}

func (m *Command) setupUsage(l flower.Lang) string {
	if !isEn(l) {
		return m.named(`用法:flower setup

问你 API key(或网关的 token)、网关地址和模型,发一个小的试探请求,然后存到
${XDG_CONFIG_HOME:-~/.config}/flower/.env(权限 0600),每次 flower 运行都会读它。先显示
文件里现在有什么(key 打了码);输入 key 时不回显。网关拒绝的凭据不存:原来的文件不变(退出码
1);试探没有回音时会说为什么,只有你答 y 才存。任何时候按 Ctrl-C 都立刻退出,什么也不写(退出码
130)。需要终端。

没有终端时,自己写这个文件,或者导出这些变量:
  ANTHROPIC_API_KEY=sk-ant-…     网关用 ANTHROPIC_AUTH_TOKEN=…
  ANTHROPIC_BASE_URL=https://…   网关地址(默认:Anthropic 的 API)
  ANTHROPIC_MODEL=…              模型

运行从这些地方找,先找到的算数:环境变量、$FLOWER_ENV、./.env、这个文件、flower 程序旁边的
.env、~/.claude/settings.json 的 env 块。flower 启动所在目录里的 .env(比如克隆下来的仓库里
的)只给 key 和模型(ANTHROPIC_API_KEY、ANTHROPIC_AUTH_TOKEN、ANTHROPIC_*MODEL、
CLAUDE_CODE_SUBAGENT_MODEL、CLAUDE_CODE_EFFORT_LEVEL):它的 ANTHROPIC_BASE_URL、
FLOWER_CLAUDE、FLOWER_NOTIFY 和其他变量一概不用,运行开始时会说出来。这样仓库决定不了你的 key
发到哪、跑哪个 claude、跑什么命令。网关地址请写在这个文件里。

setup 还会说协调者的快速查看靠什么保护:bubblewrap 沙箱(只读、不联网、没有 key;Linux,
bubblewrap 包)或者只靠解析器。

退出码:
  0      存好了
  1      什么也没存:网关拒绝了凭据,试探没有回音而你没答 y,或者没有终端
  2      命令行错误:没有这个参数,多了参数
  130    Ctrl-C:立刻退出,什么也没写
`)
	}
	return m.named(`Usage: flower setup

Asks for the API key (or a gateway's token), the gateway address and the model, sends
one small probe request, and saves them to ${XDG_CONFIG_HOME:-~/.config}/flower/.env
(mode 0600), read by every flower run. It first shows what the file holds now (keys
masked); the key is read without echo. Credentials the gateway rejects are not saved:
the old file stays as it was (exit 1); a probe that gets no answer says why and saves
only when you answer y. Ctrl-C at any point leaves at once and writes nothing (exit
130). Needs a terminal.

Without a terminal, write the file yourself or export the variables:
  ANTHROPIC_API_KEY=sk-ant-…     or ANTHROPIC_AUTH_TOKEN=… for a gateway
  ANTHROPIC_BASE_URL=https://…   a gateway (default: Anthropic's API)
  ANTHROPIC_MODEL=…              the model

Where a run finds them, the first value found winning: the environment, $FLOWER_ENV,
./.env, this file, the .env beside the flower binary, the env block of
~/.claude/settings.json. A .env in the folder flower starts in (a cloned repository's,
say) gives only a key and the models (ANTHROPIC_API_KEY, ANTHROPIC_AUTH_TOKEN,
ANTHROPIC_*MODEL, CLAUDE_CODE_SUBAGENT_MODEL, CLAUDE_CODE_EFFORT_LEVEL): its
ANTHROPIC_BASE_URL, FLOWER_CLAUDE, FLOWER_NOTIFY and every other variable are ignored,
and the run says so at start. So a repository never chooses where your key is sent,
which claude runs or what command runs. Put the gateway address in this file.

setup also says what protects the coordinator's glances: a bubblewrap sandbox
(read-only, no network, no key; Linux, package bubblewrap) or the parser alone.

Exit codes:
  0      saved
  1      nothing saved: the gateway rejected the credentials, a probe got no
         answer and you did not answer y, or there is no terminal
  2      a command-line error: unknown flag, an argument
  130    Ctrl-C: left at once, nothing written
`)
}

func (m *Command) replyUsage(l flower.Lang) string {
	if !isEn(l) {
		return m.named(`用法:flower reply [参数] "回答"

回答这个目录里的运行正在等的提问(-w/-r 跟运行一样);没有提问在等时,把话留在它的收件箱里。
一个数字就是选那一项。它会等运行收下回答(最多等 --wait),然后说回答怎么样了。

参数:
  --question Q   回答提问 Q(默认:等得最久的那个);--id Q 一样
  --skip         不回答这个提问:让它自己判断
  --mail         即使有提问在等,也只给收件箱留一句话
  --wait D       等运行多久(默认 10s;0 = 不等)
  --db-file F    改为团队队列里的运行,数据库的 URL 在文件 F 里(或 --db URL,不带密码,
                 或 $FLOWER_DATABASE_URL):flower reply r12 "回答" 立刻送到正在跑 r12 的
                 worker

提问的编号是运行给的:它的提问和发给它的话共用一个计数(q1、m2、q3……),flower runs r12
会列出每个提问和它的编号("q1 问:……")。团队队列里的运行:
  flower reply r12 "回答"     回答现在正在等的提问;没有提问在等就拒绝(什么也不留)
  flower reply r12 --question q3 "…"
                              回答 q3:它在等就立刻送到,否则留着,直到运行问出 q3
                              (只给 q3)

提问已经回答过、拒答过或超时了,运行已经走过去没问的提问,编号不是 qN 的样子,或者运行已经
结束:回答被拒绝(退出码 1),什么也不留。

例子:
  flower reply "用 PostgreSQL"
  flower reply 2
  flower -w ~/src/app reply --mail "旧的 API 也留着"
  flower reply r12 --question q1 "叫它 zed"
`)
	}
	return m.named(`Usage: flower reply [flags] "words"

Answers the waiting question of the run in this directory (-w/-r as for the run), or,
when none waits, leaves the words in its inbox. A number picks that choice. It waits
for the run to take the reply (up to --wait) and says what became of it.

Flags:
  --question Q   answer question Q (default: the oldest waiting); --id Q is the
                 same
  --skip         decline the question: it judges for itself
  --mail         leave a message for the inbox even when a question waits
  --wait D       how long to wait for the run (default 10s; 0 = do not wait)
  --db-file F    a run of the team's queue instead, its database's URL in file
                 F (or --db URL without its password, or $FLOWER_DATABASE_URL):
                 flower reply r12 "answer" reaches the worker running r12 at
                 once

A question's id is the one the run gives it: its questions and the messages it
is sent share one counter (q1, m2, q3…), and flower runs r12 lists each question
with its id ("q1 asked: …"). For a run of the team's queue:
  flower reply r12 "answer"   answers the question waiting now; refused when
                              none waits (nothing is kept)
  flower reply r12 --question q3 "…"
                              answers q3: at once if it waits, else kept until
                              the run asks q3 (and given to q3 only)

A question answered, declined or timed out already, one the run is past and never
asked, an id not of the form qN, or a run that ended: the reply is refused (exit
1), and nothing is kept.

Examples:
  flower reply "use PostgreSQL"
  flower reply 2
  flower -w ~/src/app reply --mail "also keep the old API"
  flower reply r12 --question q1 "call it zed"
`)
}

// runExampleZh is the workflow program of flower run's help, its last
// line in Chinese: the code itself stays as it is.
var runExampleZh = strings.Replace(runExample, `Then: go run . -w ./repo "add a --json flag" (examples/ownflow is this program).`,
	`然后:go run . -w ./repo "加一个 --json 参数"(examples/ownflow 就是这个程序)。`, 1)

func (m *Command) runUsage(l flower.Lang) string {
	if !isEn(l) {
		return m.named(`用法:flower run

跑你自己的流程。在 Go 里流程就是一个程序:它的 main 交给 app.Main(yourFlow),就得到 flower
的整套命令行(go 的参数、凭据、屏幕、Ctrl-C、退出码):

` + runExampleZh + `

` + exitCodesZh)
	}
	return m.named(`Usage: flower run

Runs a workflow of your own. In Go a workflow is a program: give its main
app.Main(yourFlow) and it takes flower's whole command line (the go flags,
credentials, screen, Ctrl-C, exit codes):

` + runExample + `

` + exitCodes)
}

func (m *Command) reportUsage(l flower.Lang) string {
	if !isEn(l) {
		return m.named(`用法:flower report [参数] [run_dir]

把一个运行目录(默认 <workspace>/runs,或 -r DIR)和它的工作台写成一个自包含的 HTML 页面(不联网,
没有外部字体或脚本),并打印页面的路径。页面顶上说这次运行为什么花了这么多:请求、结果和原因、
时长、token、花费和最大的三项开销,每次唤醒一栏。然后用运行的语言列出:每次唤醒里步骤、会话、
交接、重试、插话和插话的内容、回答、评审结论和等待的时间线;按步骤、轮次、角色和模型算的花费,
对照运行预算;主线程每一轮的上下文,对照交接阈值和窗口;主线程和 subagent 的对比;缓存复用;
评审结论;提问、回答和收件箱里的话;工具、被拒的调用、溢出和工作台脚本;manifest,以及需求确认
书、目标、交接文档和结束交接的链接。它只读:会话库以只读方式打开,所以不会挡住正在跑的 flower,
也不往运行目录或工作台里写任何东西。读不了的文件会在 stderr 和页面上点名,其余照常显示。

参数:
  -o, --output FILE   页面写到哪(默认 $TMPDIR/flower-report-<id>.html,每个运行目录一个)
  --open              也用 xdg-open 或 open 打开页面(有的话)
  --json              改为在 stdout 上打印页面的数据(JSON),不写页面
  --db-file F RUN     团队队列里的一个运行,从数据库生成(URL 在文件 F 里,或 --db URL,
                      不带密码,或 $FLOWER_DATABASE_URL,运行写成 r12 这样)

例子:
  flower report
  flower report --open ~/src/app/runs
  flower report -o /tmp/run.html -w ~/src/app
  flower report --json | jq .cost.total

退出码:
  0    页面写好了(或 JSON 打印了),即使有些文件读不了(会在 stderr 上点名)
  1    没有这个目录,目录里没有运行,或者页面写不了
  2    命令行错误:没有这个参数,run_dir 不止一个,--json 和 -o/--open 一起用
`)
	}
	return m.named(`Usage: flower report [flags] [run_dir]

Writes one self-contained HTML page (no network, no external fonts or scripts) of
a run directory (default <workspace>/runs, or -r DIR) and its workbench, and prints
the page's path. Its top says why the run cost what it did: the request, the
outcome and its reason, duration, tokens, cost and the three largest cost drivers,
a column per wake. Then, in the run's language: the timeline of steps, sessions,
handoffs, retries, interrupts with their words, answers, verdicts and waits over
every wake; the cost per step, round, role and model against the run budget; the
main thread's context per turn against the handoff threshold and the window; main
thread against subagents; cache reuse; verdicts; questions, answers and inbox
messages; tools, denials, spills and workbench scripts; the manifest and links to
the brief, goal, handoffs and bequest. It only reads: the session store is opened
read-only, so a running flower is never blocked, and nothing is written into the
run directory or the workbench. A file it cannot read is named on stderr and on the
page, and the rest is shown.

Flags:
  -o, --output FILE   where the page goes (default $TMPDIR/flower-report-<id>.html,
                      one per run directory)
  --open              also open the page with xdg-open or open, where there is one
  --json              print the page's data as JSON on stdout instead (no page)
  --db-file F RUN     a run of the team's queue, rendered from the database (its URL
                      in file F, or --db URL without its password, or
                      $FLOWER_DATABASE_URL with a run such as r12)

Examples:
  flower report
  flower report --open ~/src/app/runs
  flower report -o /tmp/run.html -w ~/src/app
  flower report --json | jq .cost.total

Exit codes:
  0    the page was written (or the JSON printed), even when some files could not
       be read (they are named on stderr)
  1    no such directory, no run in it, or the page could not be written
  2    a command-line error: unknown flag, more than one run_dir, --json with -o/--open
`)
}

const teamFlags = `The team's database (one for the whole team, holding the queue, every run's
state and transcripts), in the first of:
  --db-file FILE   a file holding postgres://user:password@host:5432/db, yours
                   and mode 0600 (chmod 600 FILE): one others read is refused
  --db URL         postgres://user@host:5432/db without its password, which
                   comes from ~/.pgpass (or $PGPASSFILE, or $PGPASSWORD); a
                   password in --db is refused: every user sees a command line
  $FLOWER_DATABASE_URL   the whole URL, password included
`

const teamFlagsZh = `团队的数据库(整个团队一个,放着队列、每个运行的状态和记录),按顺序取第一个有的:
  --db-file FILE   一个写着 postgres://user:password@host:5432/db 的文件,必须是你的,权限
                   0600(chmod 600 FILE):别人能读的会被拒绝
  --db URL         postgres://user@host:5432/db,不带密码,密码从 ~/.pgpass(或
                   $PGPASSFILE,或 $PGPASSWORD)来;--db 里带密码会被拒绝:命令行人人都看得见
  $FLOWER_DATABASE_URL   完整的 URL,带密码
`

func (m *Command) submitUsage(l flower.Lang) string {
	if !isEn(l) {
		return m.named(`用法:flower submit [--db-file FILE] --repo REPO [--branch B] [--net HOSTS] "请求"

把一个针对某 git 仓库的请求排进队列。空着的 worker 接手,克隆 REPO,在这个运行自己的分支
flower/rN(从 B 开出)上干活,每一步、每次交接和结束时都把成果推到那里。打印运行的名字。

参数:
  --repo REPO     每个 worker 都能访问的 git URL 或路径(先在这台机器上检查)
  --branch B      从哪个分支开始(默认:仓库的默认分支)
  --budget USD    运行花到这么多钱就干净地停下,所有 worker 加在一起算
  --no-check      不在这台机器上检查 REPO 和 B 是否存在
  --net HOSTS     运行能访问的主机,经由它的 worker(它的网络里别无他物):主机名或地址,
                  带 :端口 或不带(80 和 443),*.example.com 表示它下面的所有名字;
                  用逗号分开或重复给出。程序经由 HTTP_PROXY/HTTPS_PROXY 访问它们。

例子:
  flower submit --repo git@host:app.git "加一个 --json 参数"
  flower submit --repo /srv/app.git --net registry.npmjs.org "升级依赖"
  flower submit --db-file ~/team-db --repo /srv/app.git --budget 5 "修好它"
  flower submit --db postgres://flower@db/flower --repo /srv/app.git \
      --branch develop "修好不稳定的测试"

` + teamFlagsZh)
	}
	return m.named(`Usage: flower submit [--db-file FILE] --repo REPO [--branch B] [--net HOSTS] "request"

Queues a run of the request against a git repository. A free worker takes it,
clones REPO, works on the run's own branch flower/rN (made from B) and pushes its
work there after every step, every handoff and at the end. Prints the run's name.

Flags:
  --repo REPO     a git URL or path every worker can reach (checked from here first)
  --branch B      the branch to start from (default: the repository's default branch)
  --budget USD    stop the run cleanly when it has cost this much, on every worker together
  --no-check      do not check from this machine that REPO and B exist
  --net HOSTS     the hosts the run may reach, through its worker (its network has
                  nothing else): names or addresses, with :PORT or without (80 and
                  443), *.example.com for every name below it; comma-separated or
                  given again. Programs reach them through HTTP_PROXY/HTTPS_PROXY.

Examples:
  flower submit --repo git@host:app.git "add a --json flag"
  flower submit --repo /srv/app.git --net registry.npmjs.org "upgrade the dependencies"
  flower submit --db-file ~/team-db --repo /srv/app.git --budget 5 "fix it"
  flower submit --db postgres://flower@db/flower --repo /srv/app.git \
      --branch develop "fix the flaky tests"

` + teamFlags)
}

func (m *Command) workerUsage(l flower.Lang) string {
	if !isEn(l) {
		return m.named(`用法:flower worker [--db-file FILE] [--concurrency N] [--dir DIR]

在这台机器上做队列里的运行,直到被停下:每个运行在 DIR 下有自己的 checkout 和给 CLI 用的 HOME,
状态放在数据库里。Ctrl-C 或 SIGTERM:不再接新运行,把手上的运行停成可接着做的(正在跑的那一步
记下,成果推上去),交回队列。死掉的 worker(SIGKILL、断电、断网)不再报平安;过了 --rescue,
它的运行交给别的 worker,从最后推上去的提交和数据库里的状态接着做。worker 能接着做任何它读得懂
状态协议的运行,不管是哪个版本的 flower 开始的。

参数:
  --concurrency N     同时做几个运行(默认 1)
  --dir DIR           checkout、HOME 和日志放哪(默认 ./flower-worker)
  --name NAME         worker 在 flower runs 里的名字(默认 主机-pid);活着的 worker
                      用着的名字会被拒绝
  --rescue D          一个运行多久没人确认,别的 worker 就接手(默认 2m,至少 4s;这个
                      worker 每过四分之一就确认一次)
  --team-budget USD   所有运行加起来花到这么多就不再接新运行(所有 worker 一起算;0 取消
                      上限;不写就保持原来的设置)
  --max-failures N    在 N 个 worker 上失败过的运行就搁置(默认 3);失败的尝试隔 10s、
                      30s、90s……重试
  --lang en|zh        运行用的语言
  --unconfined        不用 bubblewrap 跑运行(这样运行能读到这个用户能读的一切:别的运行、
                      这个 HOME);不加这个参数就拒绝
  --readable PATH     让每个运行都能只读这个文件或目录(可以写多次),例如包装脚本调用的
                      CLI、/home 下的工具链;运行平时看不到 /tmp、/run、/root、/home
  --pass-env NAME     把这个 worker 环境里的变量 NAME 交给每个运行(可以写多次),例如
                      GOPROXY;运行的环境从空的开始,只有 PATH、语言、时区、TERM 和 CLI
                      关掉外联的开关,其余(令牌、密钥、套接字)都拿不到
  --keep-failed D     失败(搁置)的运行在 DIR 下的目录保留多久(默认 72h)
  --keep-ended D      其他结束的运行(达成、停下、取消)的目录保留多久(默认 0:
                      结束时删掉)
  --drain NAME        自己不干活:让名叫 NAME 的 worker 像收到 SIGTERM 一样收尾(它在
                      --rescue 的四分之一内看到)
  --log-format F      text(默认)或 json:worker 在 stderr 上的日志,每条一行,带运行、
                      尝试、worker 和步骤;密码和 key 打码
  --metrics ADDR      在 http://ADDR/metrics 上提供 Prometheus 指标,还有 /healthz
                      (数据库和 DIR 能用时是 200,否则是 503 和原因);默认不提供。绑在
                      给的地址上:只给这台机器用就写 127.0.0.1:9100

CLI 和凭据跟 flower go 一样去找(FLOWER_CLAUDE、flower setup、环境变量);这个 CLI 在运行的
隔离环境里启动得了,worker 才接运行,启动不了就说该怎么办。运行永远拿不到凭据:
它通过这个 worker 在 127.0.0.1 上的代理访问模型,用的是它自己的 token,运行结束就作废;它也看
不到数据库。bubblewrap 把每个运行关在它自己的 checkout、HOME 和目录里:DIR 的其余部分、这个
HOME、/tmp 和别的进程它都看不见。

` + teamFlagsZh)
	}
	return m.named(`Usage: flower worker [--db-file FILE] [--concurrency N] [--dir DIR]

Works queued runs on this machine until stopped: each in its own checkout under
DIR with its own HOME for the CLI, its state in the database. Ctrl-C or SIGTERM:
takes no new run, stops those in flight as resumable (the step in flight
recorded, the work pushed) and gives them back to the queue. A worker that dies
(SIGKILL, power, network) is not heard from; after --rescue its runs go to
another worker, which continues each from its last pushed commit and its state
in the database. A worker continues any run whose state protocol it reads,
whatever flower build started it.

Flags:
  --concurrency N     runs at once (default 1)
  --dir DIR           checkouts, HOMEs and logs (default ./flower-worker)
  --name NAME         the worker's name in flower runs (default host-pid); the
                      name of a live worker is refused
  --rescue D          how long a run may go unconfirmed before another worker
                      takes it (default 2m, at least 4s; this worker confirms
                      every quarter of it)
  --team-budget USD   take no new run once all runs together have cost this much
                      (every worker; 0 lifts it; left out, it stays as set)
  --max-failures N    park a run that failed on N workers (default 3); failed
                      attempts are retried 10s, 30s, 90s... apart
  --lang en|zh        the runs' language
  --unconfined        run the runs without bubblewrap (they can then read what
                      this user can: other runs, this HOME); refused otherwise
  --readable PATH     let every run read this file or folder (repeat it for
                      more): what a CLI wrapper runs, a toolchain under /home;
                      runs see neither /tmp, /run, /root nor /home otherwise
  --pass-env NAME     give every run this worker's variable NAME (repeat it for
                      more), e.g. GOPROXY; a run's environment starts empty but
                      for PATH, the locale, TZ, TERM and the CLI's switches
                      that turn its traffic off: no token, key or socket else
  --keep-failed D     keep a failed (parked) run's folder under DIR this long
                      (default 72h)
  --keep-ended D      keep the folder of a run that ended otherwise (achieved,
                      stopped, cancelled) this long (default 0: gone at its end)
  --drain NAME        do not work: ask the worker NAME to drain as on SIGTERM
                      (it sees this within a quarter of its --rescue)
  --log-format F      text (default) or json: the worker's log on stderr, one
                      line per record with its run, attempt, worker and step;
                      passwords and keys masked
  --metrics ADDR      serve Prometheus metrics on http://ADDR/metrics and
                      /healthz (200 while the database and DIR are usable,
                      503 and why otherwise); default none. It binds where
                      told: 127.0.0.1:9100 for this machine alone

The CLI and credentials are found as for flower go (FLOWER_CLAUDE, flower
setup, the environment); the worker takes no run until that CLI starts inside
a run's confinement, and says what to do when it does not. A run never gets them: it reaches the model through
this worker's proxy on 127.0.0.1 with a token of its own, revoked when it
ends, and it never sees the database. bubblewrap confines each run to its own
checkout, HOME and folders: the rest of DIR, this HOME, /tmp and other
processes are hidden from it.

` + teamFlags)
}

func (m *Command) workersUsage(l flower.Lang) string {
	if !isEn(l) {
		return m.named(`用法:flower workers [--db-file FILE]

加入过团队的每个 worker:状态,手上有几个运行、同时最多做几个,最后一次报平安是什么时候,跑了
多久,主机和 flower 版本。状态有:working(手上有运行)、idle(空闲)、draining(做完手上的工具
调用就交出运行)、silent(超过它的 --rescue 没报平安:挂了、暂停了或断了线;它的运行交给别人)、
gone(干净地停了)、broken(它自己的环境坏了;下一行说为什么)。时间按数据库的时钟算:时钟不准的
worker 会在下面点名。

让一个 worker 收尾离开:flower worker --drain NAME。

` + teamFlagsZh)
	}
	return m.named(`Usage: flower workers [--db-file FILE]

Every worker that ever joined the team: its state, the runs it holds out of
how many it works at once, when it was last heard from, how long it has run,
its host and flower version. States: working (holds runs), idle, draining
(finishing its tool calls, then releasing its runs), silent (not heard from for
longer than its --rescue: down, paused or cut off; its runs go to others), gone
(stopped cleanly), broken (its own environment is; the line below says why).
Ages are the database's clock: a worker whose clock is off is named below.

To make a worker finish and leave: flower worker --drain NAME.

` + teamFlags)
}

func (m *Command) pruneUsage(l flower.Lang) string {
	if !isEn(l) {
		return m.named(`用法:flower runs prune [--db-file FILE] --ended-before AGE
      flower runs prune [--db-file FILE] RUN...

从数据库里删掉在 AGE 之前结束(achieved、stopped、failed、cancelled)的运行,或者点名的运行的
每一行:它们的事件、回答、任务、状态文件和记录,以及运行本身。排队中、在跑或在等的运行永远不删
(点名它们会被拒绝)。它们的分支留在仓库里。AGE 是一段时间(30d、12h、90m)或一个日期
(2026-01-31、2026-01-31T15:04)。

` + teamFlagsZh)
	}
	return m.named(`Usage: flower runs prune [--db-file FILE] --ended-before AGE
       flower runs prune [--db-file FILE] RUN...

Removes from the database every row of the runs that ended (achieved, stopped,
failed, cancelled) before AGE, or of the runs named: their events, replies,
jobs, state files and transcripts, and the runs themselves. A queued, running
or waiting run is never removed (naming one is refused). Their branches stay
in the repository. AGE is an age (30d, 12h, 90m) or a date (2026-01-31,
2026-01-31T15:04).

` + teamFlags)
}

func (m *Command) runsUsage(l flower.Lang) string {
	if !isEn(l) {
		return m.named(`用法:flower runs [--db-file FILE] [--state S[,S]] [--limit N] [RUN]

团队的运行,最新的在前:每个运行的状态(排队、在某台主机上跑、等人回答、achieved、stopped、
failed、cancelled)、步骤和轮次、花费对照预算、时长,以及它为什么在等或为什么结束。带上 RUN
(如 r12):这个运行的详情和最近的事件。

参数:
  --state S[,S]   只看这些状态的运行(比如 --state failed,queued)
  --limit N       最多 N 个运行(默认 50;0:全部);最后一行说还有多少个

flower runs prune --ended-before 30d 删掉已结束运行的行(见它的 --help)。

` + teamFlagsZh)
	}
	return m.named(`Usage: flower runs [--db-file FILE] [--state S[,S]] [--limit N] [RUN]

The team's runs, newest first: each one's state (queued, running on a host,
waiting for a person, achieved, stopped, failed, cancelled), step and round,
cost against its budget, age and why it waits or ended. With RUN (r12): that
run in detail, with its recent events.

Flags:
  --state S[,S]   only the runs in these states (e.g. --state failed,queued)
  --limit N       at most N runs (default 50; 0: all); a last line says how
                  many more there are

flower runs prune --ended-before 30d removes ended runs' rows (see its --help).

` + teamFlags)
}

func (m *Command) retryUsage(l flower.Lang) string {
	if !isEn(l) {
		return m.named(`用法:flower retry [--db-file FILE] RUN

把失败(搁置)的运行放回队列。空着的 worker 从推上去的分支和数据库里的状态接着做,跟接手时一样。
以前的失败留在它的记录里(flower runs RUN);只有新的失败才算进下次搁置。其他状态的运行会被拒绝
(退出码 1)。

` + teamFlagsZh)
	}
	return m.named(`Usage: flower retry [--db-file FILE] RUN

Puts a failed (parked) run back in the queue. A free worker continues it from
its pushed branch and its state in the database, as after a takeover. Its
earlier failures stay in its record (flower runs RUN); only new ones count
towards parking it again. A run in any other state is refused (exit code 1).

` + teamFlags)
}

func (m *Command) cancelUsage(l flower.Lang) string {
	if !isEn(l) {
		return m.named(`用法:flower cancel [--db-file FILE] RUN

停下一个运行,不管它跑了多久。排队中的运行不会再被做;在跑的运行由它的 worker 停下,worker 先把
状态写回去,把成果推到运行的分支上。worker 死掉的运行保持取消状态:没有 worker 会再开始它。已经
结束的运行会被拒绝(退出码 1)。

` + teamFlagsZh)
	}
	return m.named(`Usage: flower cancel [--db-file FILE] RUN

Stops a run, however long it has run. A queued run is never worked; a running
one is stopped by its worker, which writes its state back and pushes its work
to the run's branch first. A run whose worker died stays cancelled: no worker
starts it again. A run that already ended is refused (exit code 1).

` + teamFlags)
}

// helpWidth is the width help is laid out for: the terminal's, or 80
// columns when the help goes to a pipe or a file (less, grep, a README).
func (m *Command) helpWidth() int {
	if w := m.stdoutWidth(); w > 0 {
		return w
	}
	return 80
}

// printHelp writes a help text laid out for the output's width.
func (m *Command) printHelp(help string) {
	fmt.Fprint(m.Stdout, fitHelp(help, m.helpWidth()))
}

// helpEntry is one logical line of a help text: a paragraph, a list item
// ("  --flag X   what it does", its description continued on lines
// indented to the description's column) or a line kept as it is (an
// example command, code).
type helpEntry struct {
	head string // the item's term with its padding, a kept line, or the paragraph's indent
	body string // the words that wrap
	keep bool   // a line that is not reflowed (an example, code, a heading)
}

// fitHelp lays a help text out for a terminal cols wide, measured in
// display columns (a Chinese character takes two): paragraphs and item
// descriptions are joined and wrapped again at cols, so that the help fits
// 80 columns and uses 160 when it has them; an item's description stays
// in its column, or goes below its term when the column leaves too little
// room. The source texts are written for 80 columns.
func fitHelp(help string, cols int) string {
	var b strings.Builder
	for _, e := range parseHelp(help) {
		for _, line := range e.layout(cols) {
			b.WriteString(strings.TrimRight(line, " "))
			b.WriteByte('\n')
		}
	}
	return strings.TrimSuffix(b.String(), "\n") + tail(help)
}

// tail is the help's own line ending: fitHelp keeps whether it ended one.
func tail(help string) string {
	if strings.HasSuffix(help, "\n") {
		return "\n"
	}
	return ""
}

// parseHelp reads a help text into entries. A line at column 0 continues
// the paragraph above it unless that is a heading (one line ending with a
// colon: "Flags:"); an indented line whose indent is the
// description column of the item above continues that description; an
// indented line with a gap of two spaces is an item; any other indented
// line is kept as it is.
func parseHelp(help string) []helpEntry {
	var out []helpEntry
	hang := -1 // the column the last entry's continuation lines start at; -1: none continues
	for _, line := range strings.Split(strings.TrimSuffix(help, "\n"), "\n") {
		indent := len(line) - len(strings.TrimLeft(line, " "))
		text := strings.TrimSpace(line)
		switch {
		case text == "":
			out, hang = append(out, helpEntry{keep: true}), -1
			continue
		case indent == hang && len(out) > 0:
			last := &out[len(out)-1]
			last.body = joinWords(last.body, text)
			continue
		}
		if indent == 0 {
			out, hang = append(out, helpEntry{body: text}), 0
			if strings.HasSuffix(text, ":") {
				hang = -1
			}
			continue
		}
		if gap := strings.Index(line[indent:], "  "); gap > 0 {
			col := indent + gap + len(line[indent+gap:]) - len(strings.TrimLeft(line[indent+gap:], " "))
			// The column in display columns: "…" or a Chinese term
			// takes fewer or more columns than bytes.
			out, hang = append(out, helpEntry{head: line[:col], body: line[col:]}), screen.Columns(line[:col])
			continue
		}
		out, hang = append(out, helpEntry{head: line, keep: true}), -1
	}
	return out
}

// joinWords joins two pieces of one sentence: with a space, except
// between two Chinese pieces or beside Chinese punctuation, which have
// none.
func joinWords(a, b string) string {
	if a == "" {
		return b
	}
	last, _ := utf8.DecodeLastRuneInString(a)
	first, _ := utf8.DecodeRuneInString(b)
	wide := func(r rune) bool { return screen.RuneWidth(r) == 2 }
	// Chinese texts use ASCII , ; : ( ) between Chinese words, with no
	// blank: one next to a Chinese character joins it without one too.
	asciiPunct := func(r rune) bool { return r < utf8.RuneSelf && unicode.IsPunct(r) }
	if wide(last) && wide(first) || wide(last) && unicode.IsPunct(last) || wide(first) && unicode.IsPunct(first) ||
		wide(last) && asciiPunct(first) || asciiPunct(last) && wide(first) {
		return a + b
	}
	return a + " " + b
}

// minDescription is the least room an item's description keeps beside its
// term; with less, it goes on the lines below.
const minDescription = 24

func (e helpEntry) layout(cols int) []string {
	if e.keep {
		return wrapHanging(e.head, cols, len(e.head)-len(strings.TrimLeft(e.head, " "))+4)
	}
	if e.head == "" {
		return wrapWords(e.body, cols)
	}
	hang := screen.Columns(e.head)
	if cols-hang < minDescription {
		indent := len(e.head) - len(strings.TrimLeft(e.head, " "))
		lines := wrapHanging(strings.TrimRight(e.head, " "), cols, indent+4)
		for _, l := range wrapWords(e.body, cols-indent-4) {
			lines = append(lines, strings.Repeat(" ", indent+4)+l)
		}
		return lines
	}
	var lines []string
	for i, l := range wrapWords(e.body, cols-hang) {
		if i == 0 {
			lines = append(lines, e.head+l)
		} else {
			lines = append(lines, strings.Repeat(" ", hang)+l)
		}
	}
	return lines
}

// wrapHanging wraps one line at cols, its continuation lines indented by
// hang (a kept line too long for a narrow terminal: an example command),
// or not indented when that leaves too little room.
func wrapHanging(line string, cols, hang int) []string {
	if screen.Columns(line) <= cols || cols < 10 {
		return []string{line}
	}
	if cols-hang < minDescription {
		hang = 0
	}
	head := wrapWords(line, cols)[0]
	out := []string{head}
	for _, l := range wrapWords(strings.TrimLeft(line[len(head):], " "), cols-hang) {
		out = append(out, strings.Repeat(" ", hang)+l)
	}
	return out
}

// A Chinese line neither starts with closing punctuation nor ends with
// opening punctuation.
const (
	closingPunct = "，。、；：！？）」』】》,;:!?)"
	openingPunct = "（「『【《("
)

// wrapWords breaks s into lines of at most cols display columns at the last
// blank that fits (a word longer than a line is cut), or beside a Chinese
// character, which needs no blank (but not before its closing punctuation); below 10 columns it leaves s
// whole. Unlike screen.Wrap it never cuts a word that a blank could keep
// whole: a help line keeps its paths and flags intact.
func wrapWords(s string, cols int) []string {
	if cols < 10 {
		return []string{s}
	}
	var out []string
	for screen.Columns(s) > cols {
		n, cut, brk := 0, 0, -1 // brk: the byte offset of the last break that fits
		var prev rune
		for i, r := range s {
			w := screen.RuneWidth(r)
			wide := w == 2 || screen.RuneWidth(prev) == 2
			if i > 0 && (r == ' ' || wide && !strings.ContainsRune(closingPunct, r) && !strings.ContainsRune(openingPunct, prev)) {
				brk = i
			}
			if n+w > cols {
				break
			}
			n += w
			cut = i + utf8.RuneLen(r)
			prev = r
		}
		if brk > 0 {
			cut = brk
		}
		if cut == 0 {
			_, cut = utf8.DecodeRuneInString(s)
		}
		out = append(out, strings.TrimRight(s[:cut], " "))
		s = strings.TrimLeft(s[cut:], " ")
	}
	return append(out, s)
}
