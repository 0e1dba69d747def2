package app

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/flowerrun/flower/human"
	"github.com/flowerrun/flower/internal/screen"
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
	fl.BoolVar(&skip, "skip", false, "")
	fl.BoolVar(&mail, "mail", false, "")
	fl.DurationVar(&wait, "wait", wait, "")
	var db dbFlags
	db.register(fl)
	pos, err := m.parse(fl, m.replyUsage(), args)
	if err != nil {
		return err
	}
	if m.teamRun(fl, pos) {
		// A run of the team's queue, answered from any machine.
		url, err := m.teamDB(db, "reply", m.language(&g, ""))
		if err != nil {
			return err
		}
		if mail {
			id = ""
		}
		return m.replyTeam(ctx, url, pos, id, skip, m.language(&g, ""))
	}
	text := strings.TrimSpace(strings.Join(pos, " "))
	switch {
	case skip && mail:
		return usageErrorf("--skip declines a question and --mail leaves a message; give one")
	case text == "" && !skip:
		return usageErrorf("%s reply needs the words: %s reply \"use PostgreSQL\" (a number picks a choice; --skip declines the question)", m.name(), m.name())
	case wait < 0:
		return usageErrorf("--wait %s: give 0 (do not wait) or a duration such as 10s", wait)
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
	r := human.Reply{Text: text, Skip: skip}
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
