package human

import "github.com/flowerrun/flower/internal/lang"

// Texts are the words the channel feeds the model and writes to disk. The
// Chinese set reproduces the original flower's literals character for
// character; the English set says the same in English. An empty field of a
// Texts given to WithTexts falls back to the channel's language.
type Texts struct {
	// OverBudget answers an ask beyond the quota.
	OverBudget string
	// Timeout answers an ask nobody answered in time (and every ask when the
	// timeout is zero or less).
	Timeout string
	// Declined answers an ask the human skipped; DeclinedReason follows it
	// when the human gave a reason, with %s standing for the reason.
	Declined       string
	DeclinedReason string
	// OverBudgetPlain, TimeoutPlain and DeclinedPlain say the same to every
	// role but the clarifier: the three texts above name the brief's
	// "Unknowns and assumptions" section, which only the clarifier writes,
	// and a judge or a worker told to write one puts a section into its
	// reply that its reader then takes for part of its answer.
	OverBudgetPlain, TimeoutPlain, DeclinedPlain string
	// EmptyQuestion answers an ask without a question.
	EmptyQuestion string
	// EmptyInbox answers an inbox call with nothing new.
	EmptyInbox string
	// InboxHead opens the inbox's answer; InboxAmended closes it when every
	// message was appended to the brief, InboxNotOnDisk when one was not.
	InboxHead      string
	InboxAmended   string
	InboxNotOnDisk string
	// AmendHeader starts a new amend file; AmendLabel and WakeLabel are the
	// labels of the blocks Amend appends: words typed during a run, words
	// given when a run wakes.
	AmendHeader string
	AmendLabel  string
	WakeLabel   string
	// LogHeader starts a new Q&A log; LogMail prefixes a mail line in it.
	LogHeader string
	LogMail   string
	// LogOptions prefixes an ask's options in the log.
	LogOptions string
	// AskDescription, QuestionDescription, OptionsDescription and
	// InboxDescription describe the tools to the model.
	AskDescription      string
	QuestionDescription string
	OptionsDescription  string
	InboxDescription    string
}

// ChineseTexts are the original's literals.
var ChineseTexts = Texts{
	OverBudget:          "提问额度已用完。不要再问了 —— 把剩下的不确定项写进「未知与假设」那一段,按你自己的判断继续。",
	Timeout:             "无人应答。按你自己的判断继续,并把这个问题和你采用的假设写进「未知与假设」那一段。不要重复提问,也不要停在这里。",
	Declined:            "对方跳过了这个问题。按你自己的判断继续,并把假设写进「未知与假设」。",
	DeclinedReason:      "(对方说:%s)",
	OverBudgetPlain:     "提问额度已用完。不要再问了 —— 按你自己的判断继续,并在回话里写明你采用的假设。",
	TimeoutPlain:        "无人应答。按你自己的判断继续,并在回话里写明这个问题和你采用的假设。不要重复提问,也不要停在这里。",
	DeclinedPlain:       "对方跳过了这个问题。按你自己的判断继续,并在回话里写明你的假设。",
	EmptyQuestion:       "问题是空的。把问题写清楚再问。",
	EmptyInbox:          "收件箱是空的。继续干活,不用理会。",
	InboxHead:           "人在运行途中说了这些(按时间先后):",
	InboxAmended:        "这些话**已经追加进需求确认书**了,后面的步骤读得到。",
	InboxNotOnDisk:      "**注意:这些话没有落盘。** 如果它改变了需求或边界,你得想办法让它活过这一步 —— 否则下一步是全新 session,看不到它。",
	AmendHeader:         "# 运行中的补充\n",
	AmendLabel:          "运行中补充",
	WakeLabel:           "唤醒时追加",
	LogHeader:           "# 需求问答记录\n\n> 自动追加。这一份不进上下文,只作留档。\n\n",
	LogMail:             "人主动说",
	LogOptions:          "选项:",
	AskDescription:      "向人类提问并等待回答。一次问一个。答案作为工具结果返回。对方可能不在 —— 那时会返回一句说明,自己判断着继续,别卡住。",
	QuestionDescription: "要问人的问题。一次只问一个,写具体。",
	OptionsDescription:  "可选项。给得出来就给 —— 人选一下比打字快,答案也更好解析。",
	InboxDescription:    "看看人有没有主动说什么(加需求、纠方向)。**不阻塞** —— 没有新消息就立刻返回一句说明。每完成一个阶段性动作就查一次。",
}

// EnglishTexts say the same in English; "Unknowns and assumptions" is the
// brief's English section name in package doc.
var EnglishTexts = Texts{
	OverBudget:          "The question quota is used up. Do not ask again — write what is still uncertain into the \"Unknowns and assumptions\" section and carry on with your own judgement.",
	Timeout:             "Nobody answered. Carry on with your own judgement, and write this question and the assumption you made into the \"Unknowns and assumptions\" section. Do not ask it again, and do not stop here.",
	Declined:            "The human skipped this question. Carry on with your own judgement and write your assumption into \"Unknowns and assumptions\".",
	DeclinedReason:      " (they said: %s)",
	OverBudgetPlain:     "The question quota is used up. Do not ask again — carry on with your own judgement and state the assumption you made in your reply.",
	TimeoutPlain:        "Nobody answered. Carry on with your own judgement, and state this question and the assumption you made in your reply. Do not ask it again, and do not stop here.",
	DeclinedPlain:       "The human skipped this question. Carry on with your own judgement and state your assumption in your reply.",
	EmptyQuestion:       "The question is empty. Write the question out, then ask.",
	EmptyInbox:          "The inbox is empty. Keep working; nothing to do here.",
	InboxHead:           "The human said this during the run (oldest first):",
	InboxAmended:        "These words **have been appended to the brief**; later steps can read them.",
	InboxNotOnDisk:      "**Note: these words are not on disk.** If they change the requirements or the bounds, you must make them survive this step — the next step is a fresh session and will not see them.",
	AmendHeader:         "# Additions during the run\n",
	AmendLabel:          "Added during the run",
	WakeLabel:           "Added on waking",
	LogHeader:           "# Requirements Q&A log\n\n> Appended automatically. It never enters a context; it is kept for the record.\n\n",
	LogMail:             "The human said",
	LogOptions:          "Options: ",
	AskDescription:      "Ask the human a question and wait for the answer. One question at a time. The answer comes back as the tool result. The human may be away — then a note comes back instead: carry on with your own judgement, do not get stuck.",
	QuestionDescription: "The question for the human. One at a time, and concrete.",
	OptionsDescription:  "Choices, when you can offer them — picking is faster than typing, and the answer is easier to read.",
	InboxDescription:    "See whether the human said something on their own (a new requirement, a correction). **Never blocks** — with nothing new it answers at once with a note. Check it after every milestone.",
}

// TextsFor returns the texts of a language (flower.Lang): Chinese for "zh"
// and its regional forms, English for anything else, the zero value
// included.
func TextsFor(l lang.Lang) Texts {
	if l.IsChinese() {
		return ChineseTexts
	}
	return EnglishTexts
}

// over fills t's empty fields from base.
func (t Texts) over(base Texts) Texts {
	fill := func(dst *string, src string) {
		if *dst == "" {
			*dst = src
		}
	}
	fill(&t.OverBudget, base.OverBudget)
	fill(&t.Timeout, base.Timeout)
	fill(&t.Declined, base.Declined)
	fill(&t.DeclinedReason, base.DeclinedReason)
	fill(&t.OverBudgetPlain, base.OverBudgetPlain)
	fill(&t.TimeoutPlain, base.TimeoutPlain)
	fill(&t.DeclinedPlain, base.DeclinedPlain)
	fill(&t.EmptyQuestion, base.EmptyQuestion)
	fill(&t.EmptyInbox, base.EmptyInbox)
	fill(&t.InboxHead, base.InboxHead)
	fill(&t.InboxAmended, base.InboxAmended)
	fill(&t.InboxNotOnDisk, base.InboxNotOnDisk)
	fill(&t.AmendHeader, base.AmendHeader)
	fill(&t.AmendLabel, base.AmendLabel)
	fill(&t.WakeLabel, base.WakeLabel)
	fill(&t.LogHeader, base.LogHeader)
	fill(&t.LogMail, base.LogMail)
	fill(&t.LogOptions, base.LogOptions)
	fill(&t.AskDescription, base.AskDescription)
	fill(&t.QuestionDescription, base.QuestionDescription)
	fill(&t.OptionsDescription, base.OptionsDescription)
	fill(&t.InboxDescription, base.InboxDescription)
	return t
}
