package team

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/flowerrun/flower/event"
	"github.com/flowerrun/flower/human"
)

// A team run's question id is the one its human channel gives the
// question: the channel numbers what it is asked and what it is sent with
// one counter (q1, m2, q3…, human.Channel.Ask), its ask events carry that
// id into the run's events (flower runs and flower watch show it), and a
// reply names a question by it. Only a "q" id names a question: an "m" id
// is a message the person sent.
var questionIDForm = regexp.MustCompile(`^q[1-9][0-9]{0,8}$`)

// Why a reply was refused (ReplyRefused.Why).
const (
	ReplyRunEnded    = "ended"        // the run ended: nothing will read the reply
	ReplyNoneWaiting = "none-waiting" // no question id given, and none waits
	ReplyNotAnID     = "not-an-id"    // the id is not of a question's form
	ReplySettled     = "settled"      // the question was answered, declined or timed out already
	ReplyPassed      = "passed"       // the run is past that number and never asked it
)

// ReplyRefused says why Team.Reply kept nothing: the reply would reach no
// question. Its fields let a front end say it in the person's language.
type ReplyRefused struct {
	Run      string // the run's name
	Why      string // ReplyRunEnded, ReplyNoneWaiting, ReplyNotAnID, ReplySettled, ReplyPassed
	Question string // the id the reply named
	State    string // the run's state (ReplyRunEnded) or the question's (ReplySettled)
	Newest   string // the newest question the run asked, "" when none
}

func (e *ReplyRefused) Error() string {
	switch e.Why {
	case ReplyRunEnded:
		return fmt.Sprintf("%s is %s: nothing waits for a reply; the reply was not kept", e.Run, e.State)
	case ReplyNoneWaiting:
		next := "q1"
		if n := questionNumber(e.Newest); n > 0 {
			next = "q" + strconv.Itoa(n+1)
		}
		return fmt.Sprintf("no question of %s waits now; to answer a question it will ask, name it: --question %s (its questions are numbered q1, q2…, as flower runs shows them)", e.Run, next)
	case ReplyNotAnID:
		return fmt.Sprintf("%q is not a question id: a question is named q and its number (q1, q3), as flower runs shows it", e.Question)
	case ReplySettled:
		return fmt.Sprintf("question %s of %s is %s already; the reply was not kept (send words for the run without --question)", e.Question, e.Run, e.State)
	case ReplyPassed:
		return fmt.Sprintf("%s never asked %s and is past it (its newest question is %s); the reply was not kept", e.Run, e.Question, e.Newest)
	}
	return fmt.Sprintf("the reply to %s was refused (%s)", e.Run, e.Why)
}

// ReplyKept is what Team.Reply did with a reply: the question it answers,
// and whether that question waits now (else the reply waits for it).
type ReplyKept struct {
	Question string
	Waiting  bool
}

// questionNumber is N of "qN", 0 for anything else.
func questionNumber(id string) int {
	if !questionIDForm.MatchString(id) {
		return 0
	}
	n, _ := strconv.Atoi(id[1:])
	return n
}

// questions is what a run's recorded ask events say of its questions.
type questions struct {
	state   map[string]string // each question's newest state ("asked" while it waits)
	waiting []string          // the questions waiting now, oldest first
	newest  string            // the highest-numbered question asked
}

// runQuestions reads the run's questions from its events: the ask events
// its human channel wrote (not the replies given, not mail).
func runQuestions(ctx context.Context, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, run int64) (questions, error) {
	rows, err := q.Query(ctx, `select event->'payload'->>'id', coalesce(event->'payload'->>'state', '') from team_events
		where run = $1 and event->>'kind' = $2 and event->'payload' ? 'id'
		and not coalesce((event->'payload'->>'reply')::boolean, false) and coalesce(event->'payload'->>'kind', '') <> 'mail'
		order by id`, run, string(event.Ask))
	if err != nil {
		return questions{}, err
	}
	type ask struct{ id, state string }
	asks, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (ask, error) {
		var a ask
		return a, row.Scan(&a.id, &a.state)
	})
	if err != nil {
		return questions{}, err
	}
	qs := questions{state: map[string]string{}}
	var order []string
	for _, a := range asks {
		if questionNumber(a.id) == 0 {
			continue
		}
		if _, seen := qs.state[a.id]; !seen {
			order = append(order, a.id)
		}
		qs.state[a.id] = a.state
		if questionNumber(a.id) > questionNumber(qs.newest) {
			qs.newest = a.id
		}
	}
	for _, id := range order {
		if qs.state[id] == string(human.Asked) {
			qs.waiting = append(qs.waiting, id)
		}
	}
	return qs, nil
}

// Reply gives a run's question its answer, from any machine. question ""
// is the question waiting now (refused when none waits); a question id
// (q3) is that question: waiting now, or asked later (the reply waits for
// it, and only for it). A question answered already, or one the run is
// past and never asked, is refused. The worker working the run gets the
// reply at once (NOTIFY); a run not being worked gets it when a worker
// takes it and the question waits.
func (t *Team) Reply(ctx context.Context, id int64, question, text string, skip bool) (ReplyKept, error) {
	question = strings.TrimSpace(question)
	var kept ReplyKept
	err := pgx.BeginFunc(ctx, t.pool, func(tx pgx.Tx) error {
		// The run's row, locked: a worker ending it waits until the reply
		// is kept, and a reply waits until the run's end is written.
		var state string
		err := tx.QueryRow(ctx, "select state from team_runs where id = $1 for update", id).Scan(&state)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("%w %s in %s (`flower runs` lists them)", ErrNoRun, RunName(id), t.url)
		}
		if err != nil {
			return err
		}
		if Ended(state) {
			return &ReplyRefused{Run: RunName(id), Why: ReplyRunEnded, State: state}
		}
		if question != "" && questionNumber(question) == 0 {
			return &ReplyRefused{Run: RunName(id), Why: ReplyNotAnID, Question: question}
		}
		qs, err := runQuestions(ctx, tx, id)
		if err != nil {
			return err
		}
		switch st, asked := qs.state[question]; {
		case question == "" && len(qs.waiting) == 0:
			return &ReplyRefused{Run: RunName(id), Why: ReplyNoneWaiting, Newest: qs.newest}
		case question == "":
			question = qs.waiting[0]
		case asked && st != string(human.Asked):
			return &ReplyRefused{Run: RunName(id), Why: ReplySettled, Question: question, State: st}
		case !asked && questionNumber(question) < questionNumber(qs.newest):
			return &ReplyRefused{Run: RunName(id), Why: ReplyPassed, Question: question, Newest: qs.newest}
		}
		kept = ReplyKept{Question: question, Waiting: slices.Contains(qs.waiting, question)}
		if _, err := tx.Exec(ctx, "insert into team_replies (run, question, text, skip) values ($1, $2, $3, $4)", id, question, text, skip); err != nil {
			return err
		}
		if err := recordEvent(ctx, tx, id, event.New(event.Ask, text, map[string]any{"reply": true, "id": question})); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, "select pg_notify($1, $2)", replyChannel, strconv.FormatInt(id, 10))
		return err
	})
	return kept, err
}

// questionWatch is what the run's row was last set from: the ids of the
// questions the run's pending.json listed.
type questionWatch struct {
	shown string
	set   bool
}

// watchQuestions follows the run's waiting questions (its pending.json,
// which its human channel keeps): when they changed, the replies kept for
// them are delivered and the row says waiting, or running again once none
// waits. The answer's event is not what ends the waiting: the row follows
// what the run itself says waits.
func (a *attempt) watchQuestions(ctx context.Context) {
	p, err := human.ReadPending(a.humanDir())
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return // read again at the next tick
	}
	ids := make([]string, 0, len(p.Questions))
	for _, q := range p.Questions {
		ids = append(ids, q.ID)
	}
	key := strings.Join(ids, " ")
	if a.questions.set && a.questions.shown == key {
		return
	}
	if len(ids) > 0 {
		a.deliver(ctx)
	}
	if a.markWaiting(ctx, p) {
		a.questions = questionWatch{shown: key, set: true}
	}
}

// deliver hands the run the replies given for it and not yet delivered, as
// files its human channel reads (as `flower reply` does on the run's own
// machine): each to the question it names, once that question waits. A
// reply to a question the run settled meanwhile (it timed out) goes to it
// too, and the channel puts its words in the run's inbox: nothing is lost.
// A reply to a question not asked yet stays in the database for it.
func (a *attempt) deliver(ctx context.Context) {
	type reply struct {
		id       int64
		question string
		text     string
		skip     bool
	}
	rows, err := a.w.t.pool.Query(ctx, "select id, question, text, skip from team_replies where run = $1 and delivered_at is null order by id", a.run.ID)
	if err != nil {
		return
	}
	replies, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (reply, error) {
		var r reply
		return r, row.Scan(&r.id, &r.question, &r.text, &r.skip)
	})
	if err != nil || len(replies) == 0 {
		return
	}
	dir := a.humanDir()
	p, _ := human.ReadPending(dir)
	waiting := map[string]bool{}
	for _, q := range p.Questions {
		waiting[q.ID] = true
	}
	qs, err := runQuestions(ctx, a.w.t.pool, a.run.ID)
	if err != nil {
		return
	}
	for _, r := range replies {
		hr := human.Reply{ID: r.question, Text: r.text, Skip: r.skip}
		switch st, asked := qs.state[r.question]; {
		case r.question == "" && len(p.Questions) > 0:
			// Given before replies named their question: the first waiting.
			hr.ID = p.Questions[0].ID
		case r.question == "":
			continue
		case waiting[r.question]:
		case asked && st != string(human.Asked):
			// Settled meanwhile: the channel routes the words to the inbox.
		default:
			continue // not asked yet (or not shown waiting yet): kept for it
		}
		// Owned by the run's user before it is there to read: a reply
		// the run sees and cannot open is refused (and was, under load).
		if _, err := human.WriteReplyOwned(dir, hr, a.replyKey, func(p string) error { return a.confine.handOver(p) }); err != nil {
			a.log().Warn("flower worker: a reply was not delivered", "err", err)
			continue
		}
		_ = a.fenced(ctx, func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx, "update team_replies set delivered_at = now() where id = $1", r.id)
			return err
		})
		a.log().Info("flower worker: reply delivered", "question", hr.ID)
	}
}

// markWaiting sets the run waiting with its first waiting question, or
// running again when none waits; false when the row could not be set.
func (a *attempt) markWaiting(ctx context.Context, p human.PendingFile) bool {
	state, question := Running, ""
	if len(p.Questions) > 0 {
		state, question = Waiting, p.Questions[0].Question
	}
	r, err := a.w.t.Run(ctx, a.run.ID)
	if err != nil {
		return false
	}
	if r.State == state && r.Question == question {
		return true
	}
	return a.fenced(ctx, func(tx pgx.Tx) error {
		if err := setStateTx(ctx, tx, a.run.ID, state, a.w.o.Name, "", false); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, "update team_runs set question = $2 where id = $1", a.run.ID, question)
		return err
	}) == nil
}

// replyKeyOf is run's reply key, made now (crypto/rand) if no worker made
// it before: every attempt of the run signs with the same key, so a reply
// delivered and not read before a takeover is still the person's.
func (t *Team) replyKeyOf(ctx context.Context, run int64) ([]byte, error) {
	fresh := make([]byte, 32)
	if _, err := rand.Read(fresh); err != nil {
		return nil, err
	}
	var key []byte
	err := t.pool.QueryRow(ctx, "update team_runs set reply_key = coalesce(reply_key, $2) where id = $1 returning reply_key", run, fresh).Scan(&key)
	if err != nil {
		return nil, fmt.Errorf("team: the run's reply key: %w", err)
	}
	return key, nil
}
