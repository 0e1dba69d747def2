package flower

// StarterNames are the names the starter flow gives its steps, roles and
// files in one language. Step names are keys (ctx, manifest, lineage): a run
// directory keeps the language of its first run, so they never change under
// a continuing run.
type StarterNames struct {
	// Clarify, Goal and Work are the three steps (确认需求, 设定目标, 干活).
	Clarify, Goal, Work string
	// Coordinator and Coder are the work step's role and its worker.
	Coordinator, Coder string
	// Judge follows a step's name in its judge's label: <step>·判定#<round>.
	Judge string
	// Bequest follows the work step's name in the bequest's label.
	Bequest string
	// Brief, GoalFile and Log are the files in the workbench's notes/.
	Brief, GoalFile, Log string
}

// StarterNamesFor returns the starter flow's names in lang: the original's
// Chinese literals, or their English equivalents.
func StarterNamesFor(lang Lang) StarterNames {
	if lang.IsEnglish() {
		return StarterNames{Clarify: "clarify", Goal: "goal", Work: "work", Coordinator: "coordinator", Coder: "coder",
			Judge: "·judge", Bequest: "·bequest", Brief: "brief.md", GoalFile: "goal.md", Log: "qa-log.md"}
	}
	return StarterNames{Clarify: "确认需求", Goal: "设定目标", Work: "干活", Coordinator: "协调者", Coder: "coder",
		Judge: "·判定", Bequest: "·交代", Brief: "需求.md", GoalFile: "目标.md", Log: "问答记录.md"}
}

// starterTexts are the fixed texts of the clarify, goal and work steps, the
// goal guard and the bequest. The Chinese ones are the original's
// literals.
type starterTexts struct {
	noBrief, noGoal, noReport     string
	noRuntime                     string
	unreachable, noReason         string // reason
	accept, amend, wrong          string // the three choices
	acceptPrefix, amendPrefix     string // what an answer picking one begins with
	abort                         string // reason, goal path, manifest path
	judgeFailed                   string // judge label, its error, manifest path
	newGoal, amended, overruled   string // new goal block; the human's words
	unverifiable, unverifiableRow string // n, total, path; item
	unreadable                    string // document, path, error
	noCommands                    string // n checks, goal path
	isolateNotGit, emptyAsk       string // workspace; -
	coderDesc, coderPrompt        string
	work, workGoal                string            // brief; goal block
	carryOn, rederived            string            // -; goal block
	briefChanged                  string            // what changed in the brief
	briefBroken                   string            // brief path, missing sections
	briefMissing                  string            // missing sections: the run's outcome
	bequestPrompt                 string            // outcome, workbench, brief, goal, manifest
	outcomes                      map[string]string // Outcome.State → what the bequest says
	budgetStopped                 string            // the outcome of a run its budget stopped
}

func starterTextsFor(lang Lang) starterTexts {
	if lang.IsEnglish() {
		return starterTexts{
			noBrief:         "(no brief)",
			noGoal:          "(no goal)",
			noReport:        "(no reply this round)",
			noRuntime:       "no Runtime to judge the goal with (ctx['_runtime'] is missing)",
			unreachable:     "The goal was judged **unreachable**: %s\nWhat now?",
			noReason:        "(no reason given)",
			accept:          "Accept this result and go on",
			amend:           "Amend the goal",
			wrong:           "Your verdict is wrong, keep working",
			acceptPrefix:    "Accept",
			judgeFailed:     "the judge %s failed twice (%s); nothing it wrote counts as a verdict and no work round was spent on it. The work session is kept: run the same command again to continue (see %s)",
			amendPrefix:     "Amend",
			abort:           "The goal was judged unreachable and nobody answered — stopped. Reason: %s\nSee %s and %s; a human decides what comes next.",
			newGoal:         "What is the new goal? (one sentence; it is appended to the old goal)",
			amended:         "The human amended the goal. The new goal:\n%s",
			overruled:       "The human holds that this goal can be achieved and the judge was wrong. They said: %s",
			unverifiable:    "%d of the goal's %d checks cannot be verified here — they never pass: when every other check does, the run ends \"achieved, except\" them. There is still time to edit %s:",
			unverifiableRow: "  · %s",
			noCommands:      "None of the goal's %d checks is a command flower can run itself, so no round is measured: the judge decides each from the files it reads. To have flower run a check, give it a command in %s.",
			unreadable:      "the %s %s cannot be read (%v); it counts as absent",
			isolateNotGit:   "--isolate needs %s to be a git repository (every subagent gets a worktree of its own). Run git init first, or drop --isolate.",
			emptyAsk:        "give a one-line request, e.g. flower 'build me an X'",
			coderDesc:       "Writes code and tests. Dispatch it for any hands-on implementation.",
			coderPrompt:     "You implement. Run a check after every change; do not save them up for the end.",
			work:            "Do as this brief says:\n\n%s",
			workGoal:        "\n\n---\n\nHow done is judged (an independent judge checks it item by item):\n\n%s",
			carryOn:         "Carry on. Pick up where you stopped last time; first say in one sentence what you will do first.",
			rederived:       "\n\n---\n\nThe checklist has been derived again from these words; **this one stands**:\n\n%s",
			briefChanged:    "\n\n---\n\nThe brief changed since the goal was set (the human's words, or their edit of the file). What changed:\n\n%s",
			briefMissing:    "the brief lacks these sections: %s (answer the clarifier's questions, or write them into the brief, and run again)",
			briefBroken:     "the brief %s was confirmed, but now lacks: %s (edited by hand?). Put those sections back, or run with --new to start afresh (the brief is archived, never deleted)",
			bequestPrompt: `The run ends here (%s). Write a short hand-over for whoever works on this repository next, a person or a tool, who knows nothing of this run. flower puts it into CLAUDE.md and AGENTS.md at the workspace root.

Cover, in a few dozen lines at most:
- what this is (one or two sentences);
- which acceptance checks passed and which did not (one line each);
- which files are generated and from what (so nobody edits an output by hand);
- dead ends: what was tried and did not work, and why;
- where the workbench is (%s) and how to read it: INDEX.md first; the brief is %s, the goal %s, the run's steps and costs %s.

Give pointers (paths, commands), not content: never paste files, logs or diffs. Reply with the hand-over itself as Markdown, nothing before or after it; do not write any file.`,
			outcomes: map[string]string{
				OutcomeAchieved:           "the goal was achieved",
				OutcomeNeedsLook:          "the judge ruled the goal achieved, but the change report flagged changes that can make a check pass without the work: it needs the person's look",
				OutcomeAchievedUnmeasured: "the goal was achieved, not measured: flower could not run its commands on this machine, so they passed on the judge's reading alone",
				OutcomeAchievedExcept:     "the goal was achieved, except the checklist items that cannot be verified on this machine: they did not pass",
				OutcomeAccepted:           "the person accepted the result as it stands (the judge had not ruled the goal achieved)",
				OutcomeUnreachable:        "the goal was ruled unreachable and nobody decided otherwise",
				OutcomeNotAchieved:        "the rounds ran out and the goal is not achieved yet",
				OutcomeStopped:            "the person stopped the run before the goal was achieved",
				OutcomeFailed:             "the run failed before the goal was achieved",
				OutcomeDone:               "every step finished; no goal was judged",
			},
			budgetStopped: "the run's cost budget was spent before the goal was achieved",
		}
	}
	return starterTexts{
		noBrief:         "(没有确认书)",
		noGoal:          "(没有目标)",
		noReport:        "(这一轮没有回话)",
		noRuntime:       "拿不到 Runtime,无法判定目标(ctx['_runtime'] 缺失)",
		unreachable:     "目标被判为**无法达成**:%s\n怎么办?",
		noReason:        "(没给理由)",
		accept:          "接受这个结果,就这样往下走",
		amend:           "修改目标",
		wrong:           "你判断错了,继续做",
		acceptPrefix:    "接受这个",
		judgeFailed:     "判定者 %s 两次都没跑成(%s);它写的东西一概不算判定,也没为它再跑一轮活。干活的会话还在:再运行同一条命令就接着做(见 %s)",
		amendPrefix:     "修改",
		abort:           "目标被判为无法达成,而且无人应答 —— 已停下。理由:%s\n看 %s 和 %s,人来决定下一步。",
		newGoal:         "新的目标是什么?(一句话,会追加到原目标后面)",
		amended:         "目标已被人修改。新目标:\n%s",
		overruled:       "人认为这个目标是能达成的,判定者判断有误。人的说法:%s",
		unverifiable:    "目标里有 %d/%d 条在这个环境里验不了 —— 它们永远不会通过:其余各条都通过时,运行以\"已达成,除了\"它们结束。现在改 %s 还来得及:",
		unverifiableRow: "  · %s",
		noCommands:      "目标的 %d 条判定里没有一条是 flower 能自己运行的命令,所以每一轮都没有实测:判定者只能读文件来判。要让 flower 实测某一条,在 %s 里给它写上命令。",
		unreadable:      "%s %s 读不了(%v),按没有处理",
		isolateNotGit:   "--isolate 要求 %s 是 git 仓库(每个 subagent 要分一份 worktree)。先 git init,或者去掉 --isolate。",
		emptyAsk:        "要给一句诉求,例如 flower '帮我做一个 X'",
		coderDesc:       "写代码与测试。要动手实现的活派给它。",
		coderPrompt:     "你负责实现。每改一处就跑一次验证,别攒到最后。",
		work:            "照这份需求做:\n\n%s",
		workGoal:        "\n\n---\n\n做完的判定标准(会有独立的判定者逐条对):\n\n%s",
		carryOn:         "接着做。上次干到哪就从哪接着,先说一句你打算先动什么。",
		rederived:       "\n\n---\n\n判定标准已经按这句话重新推导过,**以这份为准**:\n\n%s",
		briefChanged:    "\n\n---\n\n设定目标之后,需求确认书改过了(人说的话,或人改了文件)。改动如下:\n\n%s",
		briefMissing:    "确认书缺这几段:%s(回答澄清者的提问,或把它们写进确认书,再跑一次)",
		briefBroken:     "需求确认书 %s 确认过,现在却缺了:%s(手改坏了?)。把这几段补回去,或者加 --new 重新开始(确认书会归档,不会删)",
		bequestPrompt: `这次运行到此结束(%s)。给下一个接手这个仓库的人或工具写一份简短的交代 —— 对方对这次运行一无所知。flower 会把它放进工作区根目录的 CLAUDE.md 和 AGENTS.md。

最多几十行,写清楚:
- 这是什么(一两句);
- 哪些验收项过了、哪些没过(每项一行);
- 哪些文件是生成的、由什么生成(免得有人手改产物);
- 走不通的路:试过什么、为什么不行;
- 工作台在哪(%s)、怎么读:先看 INDEX.md;需求在 %s,目标在 %s,每一步和花费在 %s。

给指针(路径、命令),不给内容:别贴文件、日志、diff。只回复交代本身(Markdown),前后不要别的话;不要写任何文件。`,
		outcomes: map[string]string{
			OutcomeAchieved:           "目标已达成",
			OutcomeNeedsLook:          "判定者判为已达成,但变更报告标记了不做实事也能让检查通过的改动:需要人看一眼",
			OutcomeAchievedUnmeasured: "目标已达成,但没有测量:flower 在这台机器上没能自己运行它的命令,它们只凭判定者的阅读通过",
			OutcomeAchievedExcept:     "目标已达成,除了在这台机器上无法验证的判定项:它们没有通过",
			OutcomeAccepted:           "人接受了现在的结果(判定者没有判目标达成)",
			OutcomeUnreachable:        "目标被判为无法达成,没有人另作决定",
			OutcomeNotAchieved:        "轮次用完了,目标还没达成",
			OutcomeStopped:            "人在目标达成之前停下了这次运行",
			OutcomeFailed:             "目标达成之前运行失败了",
			OutcomeDone:               "每一步都做完了,没有判定目标",
		},
		budgetStopped: "目标达成之前花费预算用完了",
	}
}

// langPick is en in English, zh otherwise.
func langPick(l Lang, zh, en string) string {
	if l.IsEnglish() {
		return en
	}
	return zh
}
