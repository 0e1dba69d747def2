package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/flowerrun/flower"
	"github.com/flowerrun/flower/event"
	"github.com/flowerrun/flower/human"
	"github.com/flowerrun/flower/internal/screen"
	"github.com/flowerrun/flower/team"
)

// ReplyDir is where a run in runDir serves its file front end
// (human.ServeFiles) and where `flower reply` writes: human.Dir, outside
// the workspace, so that no agent answers as the human.
func ReplyDir(runDir string) string { return human.Dir(runDir) }

// runReply is `flower reply "…"`: answer the run's waiting question, or
// leave it a message.
func (m *Command) runReply(ctx context.Context, args []string) error {
	var g globals
	var id string
	var skip, mail bool
	wait := 10 * time.Second
	fl := newFlagSet("reply")
	g.register(fl)
	fl.StringVar(&id, "id", "", "")
	fl.StringVar(&id, "question", "", "")
	fl.BoolVar(&skip, "skip", false, "")
	fl.BoolVar(&mail, "mail", false, "")
	fl.DurationVar(&wait, "wait", wait, "")
	var db dbFlags
	db.register(fl)
	pos, err := m.parse(fl, m.replyUsage(m.argLang(args)), args)
	if err != nil {
		return err
	}
	if m.teamRun(fl, pos) {
		// A run of the team's queue, answered from any machine.
		url, err := m.teamDB(db, "reply", m.language(&g, ""))
		if err != nil {
			return err
		}
		lang := m.language(&g, "")
		if mail {
			return usageErrorf(text(lang, "teamReplyMail"), m.name(), cmp.Or(firstOf(pos), "r12"))
		}
		return m.replyTeam(ctx, url, pos, id, skip, lang)
	}
	words := strings.TrimSpace(strings.Join(pos, " "))
	switch {
	case skip && mail:
		return usageErrorf("%s", text(m.argLang(args), "replySkipMail"))
	case words == "" && !skip:
		return usageErrorf(text(m.argLang(args), "replyNoWords"), m.name(), m.name())
	case wait < 0:
		return usageErrorf(text(m.argLang(args), "replyWait"), wait)
	}
	_, runDir, err := g.resolve()
	if err != nil {
		return err
	}
	dir := ReplyDir(runDir)
	p, err := human.ReadPending(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("no flower run serves replies in %s\nstart one in this directory first, or point at its run directory with -w DIR or -r DIR", runDir)
	}
	if err != nil {
		return err
	}
	r := human.Reply{Text: words, Skip: skip}
	if !mail {
		r.ID = id
		if r.ID == "" && len(p.Questions) > 0 {
			r.ID = p.Questions[0].ID
		}
		if r.ID == "" && skip {
			return fmt.Errorf("no question is waiting in %s: nothing to skip", runDir)
		}
	}
	name, err := human.WriteReply(dir, r)
	if err != nil {
		return fmt.Errorf("%w\ncheck that %s is writable", err, dir)
	}
	if wait == 0 {
		m.say("+ queued in %s", dir)
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	out, err := human.WaitOutcome(wctx, dir, name)
	if err != nil {
		m.say("+ queued: the run has not picked it up within %s (is it still running?); it will when it next looks", wait)
		return nil
	}
	switch out.Result {
	case "answered":
		m.say("+ answered %s: %s", out.ID, out.Answer)
	case "declined":
		m.say(". skipped %s: it judges for itself", out.ID)
	case "mail":
		if out.Note != "" {
			m.say("! %s", out.Note)
		}
		m.say("+ left in the inbox (%s): it sees it at its next inbox check", out.ID)
	case "refused":
		return fmt.Errorf("the run refused the reply: %s\nwrite it with `%s reply \"your words\"`", out.Note, m.name())
	default:
		return fmt.Errorf("the run ignored the reply (%s)", out.Result)
	}
	return nil
}

// say prints one line of a command that has no Screen to stdout,
// sanitized: its arguments may hold what a model wrote (an option, an id).
func (m *Command) say(format string, a ...any) {
	fmt.Fprintln(m.Stdout, screen.SanitizeLines(fmt.Sprintf(format, a...)))
}

func firstOf(pos []string) string {
	if len(pos) == 0 {
		return ""
	}
	return pos[0]
}

// replyTeam is `flower reply RUN [--question Q] "answer"`: the answer to
// the run's question Q (a team run's question ids are its human channel's:
// q1, q3…, as flower runs shows them), or to the question waiting now.
func (m *Command) replyTeam(ctx context.Context, url string, pos []string, question string, skip bool, lang flower.Lang) error {
	if len(pos) < 1 {
		return usageErrorf(text(lang, "replyTeamNoRun"), m.name(), m.name())
	}
	run, err := team.ParseRun(pos[0])
	if err != nil {
		return usageErrorf("%v", err)
	}
	words := strings.TrimSpace(strings.Join(pos[1:], " "))
	if words == "" && !skip {
		return usageErrorf(text(lang, "replyTeamNoWords"), m.name(), pos[0], m.name(), pos[0])
	}
	t, err := m.openTeam(ctx, url, lang)
	if err != nil {
		return err
	}
	defer t.Close()
	kept, err := t.Reply(ctx, run, question, words, skip)
	var refused *team.ReplyRefused
	if errors.As(err, &refused) {
		return errors.New(m.replyRefusal(lang, refused))
	}
	if err != nil {
		return err
	}
	if kept.Waiting {
		m.say(text(lang, "teamReplied"), team.RunName(run), kept.Question)
	} else {
		m.say(text(lang, "teamReplyKept"), team.RunName(run), kept.Question)
	}
	return nil
}

// replyRefusal says in lang why a team run's reply was not kept, and what
// to do instead.
func (m *Command) replyRefusal(lang flower.Lang, r *team.ReplyRefused) string {
	switch r.Why {
	case team.ReplyRunEnded:
		return fmt.Sprintf(text(lang, "teamReplyEnded"), r.Run, cmp.Or(text(lang, "teamState_"+r.State), r.State))
	case team.ReplyNoneWaiting:
		next := "q1"
		if n, err := strconv.Atoi(strings.TrimPrefix(r.Newest, "q")); err == nil && n > 0 {
			next = "q" + strconv.Itoa(n+1)
		}
		return fmt.Sprintf(text(lang, "teamReplyNone"), r.Run, m.name(), r.Run, next, m.name(), r.Run)
	case team.ReplyNotAnID:
		return fmt.Sprintf(text(lang, "teamReplyNotID"), r.Question, m.name(), r.Run)
	case team.ReplySettled:
		return fmt.Sprintf(text(lang, "teamReplySettled"), r.Run, r.Question, questionState(lang, r.State))
	case team.ReplyPassed:
		return fmt.Sprintf(text(lang, "teamReplyPassed"), r.Run, r.Question, r.Newest)
	}
	return r.Error()
}

// questionState is a question's state (human.State) in lang.
func questionState(lang flower.Lang, state string) string {
	if s, ok := texts["teamQState_"+state]; ok {
		if isEn(lang) {
			return s[1]
		}
		return s[0]
	}
	return state
}

// askLine is a question's event as flower runs lists it, with the id a
// reply names it by: "q1 asked: …", "q1 answered: …", "reply to q1: …";
// "" for any other event.
func askLine(e team.Event) string {
	id := e.Str("id")
	if e.Kind != event.Ask || id == "" || e.Str("kind") == "mail" {
		return ""
	}
	if e.Bool("reply") {
		return "reply to " + id + ": " + firstLine(e.Text)
	}
	state := e.Str("state")
	if state == string(human.Asked) {
		return id + " asked: " + firstLine(e.Text)
	}
	return id + " " + state + ": " + firstLine(cmp.Or(e.Str("answer"), e.Text))
}

// replyTexts are the team reply's words (see texts).
var replyTexts = map[string][2]string{
	"teamReplied":            {"+ 已把回答交给 %s 的问题 %s:正在跑它的 worker 马上收到;没人在跑时,下一个接手的 worker 收到", "+ reply given to %s's question %s: the worker running it gets it at once; if none is, the next worker to take it does"},
	"teamReplyKept":          {"+ 已为 %s 的问题 %s 留下回答:它还没问到这个问题;问到时(只有这个问题)会收到它", "+ reply kept for %s's question %s: it has not asked it yet; when it does, that question (and only it) gets this reply"},
	"teamReplyMail":          {"--mail 只用于本机目录里的运行;队列里的运行只收对它提问的回答:%s reply %s [--question Q] \"回答\"", "--mail is for a run in a folder on this machine; a run of the queue takes replies to its questions: %s reply %s [--question Q] \"answer\""},
	"teamReplyEnded":         {"%s 已结束(%s):没有问题在等回答;这条回答没有保存", "%s is %s: nothing waits for a reply; the reply was not kept"},
	"teamReplyNone":          {"%s 现在没有问题在等回答;这条回答没有保存。要回答它以后才问的问题,请写明编号:%s reply %s --question %s \"回答\"(问题按 q1、q2… 编号,%s runs %s 里能看到)", "no question of %s waits now; the reply was not kept. To answer a question it will ask, name it: %s reply %s --question %s \"answer\" (questions are numbered q1, q2…, as %s runs %s shows them)"},
	"teamReplyNotID":         {"%q 不是问题编号:问题编号是 q 加数字(q1、q3),%s runs %s 里能看到", "%q is not a question id: a question id is q and a number (q1, q3), as %s runs %s shows them"},
	"teamReplySettled":       {"%s 的问题 %s 已经%s;这条回答没有保存(要给运行留话,回答它正在等的问题)", "%s's question %s is %s already; the reply was not kept (to tell the run more, answer the question it waits on)"},
	"teamReplyPassed":        {"%s 没问过 %s,也不会再问(它最新的问题是 %s);这条回答没有保存", "%s never asked %s and is past it (its newest question is %s); the reply was not kept"},
	"teamQState_answered":    {"回答过了", "answered"},
	"teamQState_declined":    {"被跳过了", "declined"},
	"teamQState_timeout":     {"超时了", "timed out"},
	"teamQState_over_budget": {"超出提问次数了", "over its quota of questions"},
	"teamQState_invalid":     {"无效", "invalid"},
	"teamQState_cancelled":   {"取消了", "cancelled"},
}

func init() { maps.Copy(texts, replyTexts) }
