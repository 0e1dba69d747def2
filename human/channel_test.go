package human_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/flowerrun/flower/doc"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/flowerrun/flower/event"
	"github.com/flowerrun/flower/human"
	"github.com/flowerrun/flower/internal/testenv"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The supplement's literals (§9.2, §9.4), typed here independently of the
// package so that a changed character fails.
const (
	zhOverBudget = "提问额度已用完。不要再问了 —— 把剩下的不确定项写进「未知与假设」那一段,按你自己的判断继续。"
	zhTimeout    = "无人应答。按你自己的判断继续,并把这个问题和你采用的假设写进「未知与假设」那一段。不要重复提问,也不要停在这里。"
	zhDeclined   = "对方跳过了这个问题。按你自己的判断继续,并把假设写进「未知与假设」。"
	zhEmptyQ     = "问题是空的。把问题写清楚再问。"
	zhEmptyInbox = "收件箱是空的。继续干活,不用理会。"
	zhInboxHead  = "人在运行途中说了这些(按时间先后):"
)

// recorder collects pushed events.
type recorder struct {
	mu  sync.Mutex
	evs []event.Event
}

func (r *recorder) add(e event.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.evs = append(r.evs, e)
}

func (r *recorder) events() []event.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.evs)
}

// states lists "id:state" of the events, in order.
func (r *recorder) states() []string {
	var out []string
	for _, e := range r.events() {
		out = append(out, e.Str("id")+":"+e.Str("state"))
	}
	return out
}

// waitFor polls cond for up to 10 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 10 s")
		}
	}
}

// ctxT bounds a test's waits: a hang guard, not a measure. A real CLI's
// session starting on a machine loaded by the older CLI's pass took more
// than the 20 s it was before ("NextAsk gave nothing", ci15).
func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// answerNext answers (or declines) the next pulled ask from another
// goroutine; wait returns the ask it pulled.
func answerNext(t *testing.T, ch *human.Channel, do func(human.Ask)) (wait func() human.Ask) {
	t.Helper()
	got := make(chan human.Ask, 1)
	go func() {
		a, err := ch.NextAsk(ctxT(t))
		if err != nil {
			close(got)
			return
		}
		do(a)
		got <- a
	}()
	return func() human.Ask {
		a, ok := <-got
		if !ok {
			t.Fatal("NextAsk gave nothing")
		}
		return a
	}
}

func TestChineseTextsAreTheSupplementsLiterals(t *testing.T) {
	zh := human.TextsFor("zh")
	for name, pair := range map[string][2]string{
		"over budget": {zh.OverBudget, zhOverBudget}, "timeout": {zh.Timeout, zhTimeout},
		"declined": {zh.Declined, zhDeclined}, "empty question": {zh.EmptyQuestion, zhEmptyQ},
		"empty inbox": {zh.EmptyInbox, zhEmptyInbox}, "inbox head": {zh.InboxHead, zhInboxHead},
		"amend label": {zh.AmendLabel, "运行中补充"}, "wake label": {zh.WakeLabel, "唤醒时追加"},
		"amend header": {zh.AmendHeader, "# 运行中的补充\n"},
	} {
		if pair[0] != pair[1] {
			t.Errorf("%s:\n got %q\nwant %q", name, pair[0], pair[1])
		}
	}
	if human.TextsFor("") != human.EnglishTexts || human.TextsFor("zh-CN") != human.ChineseTexts || human.TextsFor("en-US") != human.EnglishTexts {
		t.Error("TextsFor does not follow the language tag")
	}
	// Every English text is set and differs from the Chinese one.
	en := fmt.Sprintf("%+v", human.EnglishTexts)
	if regexp.MustCompile(`\p{Han}`).MatchString(en) {
		t.Errorf("English texts contain Chinese: %s", en)
	}
}

func TestAnsweredFromAnotherGoroutine(t *testing.T) {
	rec := &recorder{}
	ch := human.New(human.WithLang("zh"), human.WithOnEvent(rec.add))
	wait := answerNext(t, ch, func(a human.Ask) {
		if !ch.Answer(a.ID, "use Go") {
			t.Error("Answer on a waiting ask returned false")
		}
	})
	a, err := ch.Ask(ctxT(t), "  Go or Rust?  ", []string{" Go ", "", "Rust"})
	if err != nil {
		t.Fatal(err)
	}
	pulled := wait()
	if a.ID != "q1" || a.State != human.Answered || a.Answer != "use Go" || a.Question != "Go or Rust?" ||
		!slices.Equal(a.Options, []string{"Go", "Rust"}) || pulled.State != human.Asked || pulled.ID != "q1" {
		t.Fatalf("ask = %+v, pulled = %+v", a, pulled)
	}
	if a.SettledAt.Before(a.AskedAt) || a.WaitedS() < 0 {
		t.Errorf("waited %v", a.Waited())
	}
	if ch.Answer("q1", "again") || ch.Decline("q1", "") || ch.Answer("q99", "x") {
		t.Error("a settled or unknown ask accepted an answer")
	}
	if got := rec.states(); !slices.Equal(got, []string{"q1:asked", "q1:answered"}) {
		t.Fatalf("events = %v", got)
	}
	e := rec.events()[1]
	if e.Kind != event.Ask || e.Text != "Go or Rust?" || e.Str("answer") != "use Go" || e.Int("remaining") != -1 ||
		e.Float("asked_at") <= 0 || !slices.Equal(e.Payload["options"].([]string), []string{"Go", "Rust"}) {
		t.Fatalf("settled event = %+v", e)
	}
	if _, hasKind := e.Payload["kind"]; hasKind {
		t.Error("a question's event has a kind key")
	}
	if len(ch.Pending()) != 0 {
		t.Error("an answered ask is still pending")
	}
}

func TestDeclinedWithAndWithoutReason(t *testing.T) {
	for _, tc := range []struct {
		lang         doc.Lang
		reason, want string
	}{
		{"zh", "", zhDeclined},
		{"zh", " 先跳过 ", zhDeclined + "(对方说:先跳过)"},
		{"en", "later", human.EnglishTexts.Declined + " (they said: later)"},
		{"zh", "100%s", zhDeclined + "(对方说:100%s)"},
	} {
		ch := human.New(human.WithLang("zh"), human.WithLang(tc.lang))
		wait := answerNext(t, ch, func(a human.Ask) { ch.Decline(a.ID, tc.reason) })
		a, err := ch.Ask(ctxT(t), "which?", nil)
		wait()
		if err != nil || a.State != human.Declined || a.Answer != tc.want {
			t.Errorf("%s/%q: ask = %+v, %v; want answer %q", tc.lang, tc.reason, a, err, tc.want)
		}
	}
}

func TestTimeoutAfterWaiting(t *testing.T) {
	rec := &recorder{}
	ch := human.New(human.WithLang("zh"), human.WithTimeout(50*time.Millisecond), human.WithOnEvent(rec.add))
	a, err := ch.Ask(ctxT(t), "anyone?", nil)
	if err != nil || a.State != human.TimedOut || a.Answer != zhTimeout {
		t.Fatalf("ask = %+v, %v", a, err)
	}
	if a.Waited() < 50*time.Millisecond {
		t.Errorf("waited only %v", a.Waited())
	}
	if got := rec.states(); !slices.Equal(got, []string{"q1:asked", "q1:timeout"}) {
		t.Fatalf("events = %v", got)
	}
	if ch.Answer("q1", "late") {
		t.Error("a timed-out ask took a late answer")
	}
}

func TestTimeoutZeroOrLessSettlesAtOnce(t *testing.T) {
	for _, d := range []time.Duration{0, -time.Second} {
		rec := &recorder{}
		ch := human.New(human.WithLang("zh"), human.WithTimeout(d), human.WithOnEvent(rec.add))
		a, err := ch.Ask(ctxT(t), "anyone?", nil)
		if err != nil || a.State != human.TimedOut || a.Answer != zhTimeout || a.Waited() > time.Second {
			t.Fatalf("timeout %v: ask = %+v, %v", d, a, err)
		}
		// No asked event, not queued; the settled event still fires.
		if got := rec.states(); !slices.Equal(got, []string{"q1:timeout"}) {
			t.Fatalf("timeout %v: events = %v", d, got)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		_, err = ch.NextAsk(ctx)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("NextAsk after an at-once ask: %v, want the deadline", err)
		}
	}
}

func TestInvalidQuestion(t *testing.T) {
	rec := &recorder{}
	ch := human.New(human.WithLang("zh"), human.WithOnEvent(rec.add))
	for _, q := range []string{"", "  \n\t "} {
		a, err := ch.Ask(ctxT(t), q, []string{"x"})
		if err != nil || a.State != human.Invalid || a.Answer != zhEmptyQ {
			t.Fatalf("%q: ask = %+v, %v", q, a, err)
		}
	}
	if got := rec.states(); !slices.Equal(got, []string{"q1:invalid", "q2:invalid"}) {
		t.Fatalf("events = %v", got)
	}
}

func TestQuota(t *testing.T) {
	none := human.New(human.WithLang("zh"), human.WithMaxAsks(0))
	if none.Remaining() != 0 {
		t.Errorf("Remaining with max 0 = %d", none.Remaining())
	}
	a, err := none.Ask(ctxT(t), "may I?", nil)
	if err != nil || a.State != human.OverBudget || a.Answer != zhOverBudget {
		t.Fatalf("max 0: ask = %+v, %v", a, err)
	}

	unlimited := human.New(human.WithLang("zh"), human.WithMaxAsks(-5), human.WithTimeout(0))
	for range 3 {
		unlimited.Ask(ctxT(t), "q", nil)
	}
	if unlimited.Remaining() != -1 {
		t.Errorf("Remaining unlimited = %d, want -1", unlimited.Remaining())
	}

	rec := &recorder{}
	two := human.New(human.WithLang("zh"), human.WithMaxAsks(2), human.WithTimeout(0), human.WithOnEvent(rec.add),
		human.WithTexts(human.Texts{OverBudget: "enough"}))
	var remaining []int
	var states []human.State
	for range 3 {
		a, _ := two.Ask(ctxT(t), "q", nil)
		states = append(states, a.State)
		remaining = append(remaining, two.Remaining())
	}
	if !slices.Equal(states, []human.State{human.TimedOut, human.TimedOut, human.OverBudget}) ||
		!slices.Equal(remaining, []int{1, 0, 0}) {
		t.Fatalf("states %v, remaining %v", states, remaining)
	}
	if last := two.Asks()[2]; last.Answer != "enough" {
		t.Errorf("custom over-budget text not used: %q", last.Answer)
	}
	if evs := rec.events(); evs[0].Int("remaining") != 1 || evs[2].Int("remaining") != 0 {
		t.Errorf("remaining in events: %v %v", evs[0].Payload, evs[2].Payload)
	}
}

func TestCancelledContextSettlesCancelled(t *testing.T) {
	rec := &recorder{}
	ch := human.New(human.WithLang("zh"), human.WithTimeout(human.Forever), human.WithOnEvent(rec.add))
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		if _, err := ch.NextAsk(ctxT(t)); err == nil {
			cancel()
		}
	}()
	a, err := ch.Ask(ctx, "forever?", nil)
	if !errors.Is(err, context.Canceled) || a.State != human.Cancelled || a.ID != "q1" {
		t.Fatalf("ask = %+v, %v", a, err)
	}
	if len(ch.Pending()) != 0 || ch.Answer("q1", "too late") {
		t.Error("a cancelled ask is still waiting")
	}
	if got := rec.states(); !slices.Equal(got, []string{"q1:asked", "q1:cancelled"}) {
		t.Fatalf("events = %v", got)
	}
	// A context already done asks nothing.
	if _, err := ch.Ask(ctx, "again?", nil); !errors.Is(err, context.Canceled) || len(ch.Asks()) != 1 {
		t.Fatalf("err = %v, asks = %d", err, len(ch.Asks()))
	}
}

func TestIDsShareOneCounterWithMail(t *testing.T) {
	ch := human.New(human.WithLang("zh"), human.WithTimeout(0))
	a1, _ := ch.Ask(ctxT(t), "one", nil)
	m, ok := ch.Send("hello")
	a3, _ := ch.Ask(ctxT(t), "three", nil)
	if _, sent := ch.Send("   "); sent {
		t.Error("empty mail was sent")
	}
	m4, _ := ch.Send("four")
	if got := []string{a1.ID, m.ID, a3.ID, m4.ID}; !ok || !slices.Equal(got, []string{"q1", "m2", "q3", "m4"}) {
		t.Fatalf("ids = %v", got)
	}
}

func TestNextAskGivesEachWaitingAskOnceOldestFirst(t *testing.T) {
	ch := human.New(human.WithLang("zh"), human.WithTimeout(human.Forever))
	ctx, cancel := context.WithCancel(ctxT(t))
	defer cancel()
	var wg sync.WaitGroup
	results := make([]human.Ask, 2)
	for i, q := range []string{"first", "second"} {
		wg.Go(func() { results[i], _ = ch.Ask(ctx, q, nil) })
		waitFor(t, func() bool { return len(ch.Pending()) == i+1 })
	}
	p1, err1 := ch.NextAsk(ctxT(t))
	p2, err2 := ch.NextAsk(ctxT(t))
	if err1 != nil || err2 != nil || p1.Question != "first" || p2.Question != "second" {
		t.Fatalf("pulled %+v %+v (%v %v)", p1, p2, err1, err2)
	}
	short, stop := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer stop()
	if _, err := ch.NextAsk(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("third NextAsk: %v", err)
	}
	if pend := ch.Pending(); len(pend) != 2 || pend[0].ID != p1.ID {
		t.Fatalf("pending = %+v", pend)
	}
	ch.Answer(p2.ID, "b")
	ch.Answer(p1.ID, "a")
	wg.Wait()
	if results[0].Answer != "a" || results[1].Answer != "b" {
		t.Fatalf("results = %+v", results)
	}
}

func TestNextAskSkipsAnAskThatSettledUnpulled(t *testing.T) {
	ch := human.New(human.WithLang("zh"), human.WithTimeout(20*time.Millisecond))
	ch.Ask(ctxT(t), "gone", nil)
	short, stop := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer stop()
	if a, err := ch.NextAsk(short); err == nil {
		t.Fatalf("NextAsk gave a settled ask: %+v", a)
	}
}

func TestPushCallbackMayAnswerAndSendAndPanic(t *testing.T) {
	var ch *human.Channel
	var seen []string
	var mu sync.Mutex
	ch = human.New(human.WithLang("zh"), human.WithOnEvent(func(e event.Event) {
		mu.Lock()
		seen = append(seen, e.Str("id")+":"+e.Str("state"))
		mu.Unlock()
		switch {
		case e.Str("state") == "asked":
			ch.Answer(e.Str("id"), "pushed answer") // re-enters the channel
			ch.Send("said while answering")
		case e.Str("kind") == "mail":
			panic("the UI broke")
		}
	}))
	a, err := ch.Ask(ctxT(t), "push?", nil)
	if err != nil || a.State != human.Answered || a.Answer != "pushed answer" {
		t.Fatalf("ask = %+v, %v", a, err)
	}
	mu.Lock()
	got := slices.Clone(seen)
	mu.Unlock()
	// Events come one at a time, in the order the changes happened: the
	// answer settles inside Answer (logged before it returns), so it comes
	// before the mail sent after it, both after the asked event.
	if !slices.Equal(got, []string{"q1:asked", "q1:answered", "m2:queued"}) {
		t.Fatalf("events = %v", got)
	}
	errs := ch.UIErrors()
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "the UI broke") {
		t.Fatalf("UI errors = %v", errs)
	}
}

func TestAttachOnEventKeepsTheCallersOwn(t *testing.T) {
	mine, theirs := &recorder{}, &recorder{}
	ch := human.New(human.WithLang("zh"), human.WithOnEvent(mine.add), human.WithTimeout(0))
	if ch.AttachOnEvent(theirs.add) || !ch.HasOnEvent() {
		t.Fatal("AttachOnEvent replaced the caller's callback")
	}
	bare := human.New(human.WithLang("zh"), human.WithTimeout(0))
	if bare.HasOnEvent() || !bare.AttachOnEvent(theirs.add) || bare.AttachOnEvent(mine.add) {
		t.Fatal("AttachOnEvent on a bare channel")
	}
	bare.Ask(ctxT(t), "q", nil)
	ch.Ask(ctxT(t), "q", nil)
	if len(theirs.events()) != 1 || len(mine.events()) != 1 {
		t.Fatalf("mine %d, theirs %d", len(mine.events()), len(theirs.events()))
	}
}

func TestAmend(t *testing.T) {
	dir := t.TempDir()
	brief := filepath.Join(dir, "notes", "需求.md")
	ch := human.New(human.WithLang("zh"), human.WithAmendPath(brief))
	if human.New(human.WithLang("zh")).Amend("x", "") {
		t.Error("Amend without a path reported true")
	}
	if ch.Amend("  ", "") {
		t.Error("Amend of empty text reported true")
	}
	if !ch.Amend("add a README", "") || !ch.Amend("also tests", ch.Texts().WakeLabel) {
		t.Fatal("Amend failed")
	}
	b, _ := os.ReadFile(brief)
	want := regexp.MustCompile(`^# 运行中的补充\n\n## 运行中补充\(\d\d:\d\d:\d\d\)\nadd a README\n\n## 唤醒时追加\(\d\d:\d\d:\d\d\)\nalso tests\n$`)
	if !want.Match(b) {
		t.Fatalf("brief:\n%s", b)
	}
	// An existing brief is appended to, with no header.
	existing := filepath.Join(dir, "brief.md")
	os.WriteFile(existing, []byte("# Brief\n"), 0o644)
	en := human.New(human.WithLang("zh"), human.WithAmendPath(existing), human.WithLang("en"))
	en.Amend("more", "")
	b, _ = os.ReadFile(existing)
	if !regexp.MustCompile(`^# Brief\n\n## Added during the run \(\d\d:\d\d:\d\d\)\nmore\n$`).Match(b) {
		t.Fatalf("existing brief:\n%s", b)
	}
	// AmendOnce writes words the file does not hold yet, once.
	if !en.AmendOnce("wake words", en.Texts().WakeLabel) || en.AmendOnce(" wake words ", en.Texts().WakeLabel) ||
		en.AmendOnce("more", "") {
		t.Error("AmendOnce wrote twice or not at all")
	}
	b, _ = os.ReadFile(existing)
	if strings.Count(string(b), "wake words") != 1 || !strings.Contains(string(b), "## Added on waking (") {
		t.Fatalf("after AmendOnce:\n%s", b)
	}
	fresh := human.New(human.WithLang("zh"), human.WithAmendPath(filepath.Join(dir, "new.md")))
	if !fresh.AmendOnce("first words", "") {
		t.Error("AmendOnce into a new file reported false")
	}
	// An I/O error reports false: the path is a directory.
	if human.New(human.WithLang("zh"), human.WithAmendPath(dir)).Amend("x", "") {
		t.Error("Amend into a directory reported true")
	}
}

func TestInboxAndMail(t *testing.T) {
	dir := t.TempDir()
	rec := &recorder{}
	brief, log := filepath.Join(dir, "需求.md"), filepath.Join(dir, "问答记录.md")
	ch := human.New(human.WithLang("zh"), human.WithAmendPath(brief), human.WithLogPath(log), human.WithOnEvent(rec.add))
	if got := ch.TakeInbox(); got != zhEmptyInbox {
		t.Fatalf("empty inbox = %q", got)
	}
	ch.Send("also count bytes")
	ch.Send("  skip Windows ")
	if len(ch.PendingMail()) != 2 {
		t.Fatalf("pending mail = %+v", ch.PendingMail())
	}
	want := zhInboxHead + "\n\n1. also count bytes\n2. skip Windows\n\n这些话**已经追加进需求确认书**了,后面的步骤读得到。"
	if got := ch.TakeInbox(); got != want {
		t.Fatalf("inbox:\n got %q\nwant %q", got, want)
	}
	if got := ch.TakeInbox(); got != zhEmptyInbox {
		t.Fatalf("second inbox = %q", got)
	}
	mail := ch.Mail()
	if len(mail) != 2 || !mail[0].Taken || !mail[1].Amended || len(ch.PendingMail()) != 0 {
		t.Fatalf("mail = %+v", mail)
	}
	if got := rec.states(); !slices.Equal(got, []string{"m1:queued", "m2:queued", "m1:delivered", "m2:delivered"}) {
		t.Fatalf("events = %v", got)
	}
	for _, e := range rec.events() {
		_, opts := e.Payload["options"]
		_, rem := e.Payload["remaining"]
		if e.Str("kind") != "mail" || e.Str("amended") != brief || opts || rem {
			t.Fatalf("mail event = %+v", e)
		}
	}
	b, _ := os.ReadFile(log)
	if string(b) != "# 需求问答记录\n\n> 自动追加。这一份不进上下文,只作留档。\n\n\n- **人主动说**(m1) also count bytes\n\n- **人主动说**(m2) skip Windows\n" {
		t.Fatalf("log:\n%q", b)
	}

	// Without an amend file the model is told the words are not on disk.
	bare := human.New(human.WithLang("zh"))
	bare.Send("x")
	if got := bare.TakeInbox(); !strings.HasSuffix(got, "\n\n"+human.ChineseTexts.InboxNotOnDisk) {
		t.Fatalf("inbox without amend = %q", got)
	}
}

func TestQALogAndTranscript(t *testing.T) {
	log := filepath.Join(t.TempDir(), "a", "log.md")
	ch := human.New(human.WithLang("zh"), human.WithLogPath(log), human.WithMaxAsks(2))
	wait := answerNext(t, ch, func(a human.Ask) { ch.Answer(a.ID, "Go") })
	ch.Ask(ctxT(t), "Go or Rust?", []string{"Go", "Rust"})
	wait()
	ch.Ask(ctxT(t), "", nil)
	ch.Ask(ctxT(t), "more?", nil)
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	want := "# 需求问答记录\n\n> 自动追加。这一份不进上下文,只作留档。\n\n" +
		"- **Q**(q1) Go or Rust?\n  - 选项:Go / Rust\n  - **A**[answered] Go\n" +
		"- **Q**(q2) \n  - **A**[invalid] " + zhEmptyQ + "\n" +
		"- **Q**(q3) more?\n  - **A**[over_budget] " + zhOverBudget + "\n"
	if string(b) != want {
		t.Fatalf("log:\n got %q\nwant %q", b, want)
	}
	wantT := "- Q: Go or Rust?\n  A: [answered] Go\n- Q: \n  A: [invalid] " + zhEmptyQ + "\n- Q: more?\n  A: [over_budget] " + zhOverBudget
	if got := ch.Transcript(); got != wantT {
		t.Fatalf("transcript:\n got %q\nwant %q", got, wantT)
	}
	if human.New(human.WithLang("zh")).Transcript() != "" {
		t.Error("an empty channel has a transcript")
	}
}

func TestEnglishTexts(t *testing.T) {
	ch := human.New(human.WithLang("zh"), human.WithLang("en"), human.WithTimeout(0), human.WithLogPath(filepath.Join(t.TempDir(), "qa-log.md")))
	a, _ := ch.Ask(ctxT(t), "anyone?", nil)
	e, _ := ch.Ask(ctxT(t), "", nil)
	if a.Answer != human.EnglishTexts.Timeout || e.Answer != human.EnglishTexts.EmptyQuestion ||
		ch.TakeInbox() != human.EnglishTexts.EmptyInbox {
		t.Fatalf("answers %q %q", a.Answer, e.Answer)
	}
	b, _ := os.ReadFile(ch.LogPath())
	if !strings.HasPrefix(string(b), "# Requirements Q&A log\n") {
		t.Fatalf("log = %q", b)
	}
}

func TestEnvSetsTheCLIToolTimeoutAboveTheAsks(t *testing.T) {
	for _, tc := range []struct {
		opts []human.Option
		want string
	}{
		{nil, "1860000"}, // 1800 s + 60 s
		{[]human.Option{human.WithTimeout(5 * time.Second)}, "65000"},
		{[]human.Option{human.WithTimeout(human.Forever)}, "2147483647"},
		{[]human.Option{human.WithTimeout(100 * 24 * time.Hour)}, "2147483647"},
		{[]human.Option{human.WithTimeout(0)}, ""},
	} {
		env := human.New(tc.opts...).Env()
		if tc.want != "" && (len(env) != 2 || env[human.AutoBackgroundEnv] != "0") {
			t.Errorf("env = %v, want auto-background off", env)
		}
		if got := env[human.ToolTimeoutEnv]; got != tc.want || (tc.want == "" && len(env) != 0) {
			t.Errorf("%v: env = %v, want %s=%s", human.New(tc.opts...).Timeout(), env, human.ToolTimeoutEnv, tc.want)
		}
	}
}

func TestWaitedS(t *testing.T) {
	at := time.Unix(1000, 0)
	a := human.Ask{AskedAt: at, SettledAt: at.Add(1249 * time.Millisecond)}
	if a.WaitedS() != 1.2 || (human.Ask{}).Waited() != 0 {
		t.Fatalf("WaitedS = %v", a.WaitedS())
	}
}

// TestConcurrentAskersAnswerersAndSenders hammers every entry point at once
// (run with -race): every ask settles exactly once, ids are unique, every
// mail is delivered exactly once, and the events pair up.
func TestConcurrentAskersAnswerersAndSenders(t *testing.T) {
	const n = 40
	rec := &recorder{}
	dir := t.TempDir()
	ch := human.New(human.WithLang("zh"), human.WithOnEvent(rec.add), human.WithTimeout(10*time.Second),
		human.WithLogPath(filepath.Join(dir, "log.md")), human.WithAmendPath(filepath.Join(dir, "brief.md")))
	ctx, cancel := context.WithCancel(ctxT(t))
	defer cancel()
	var askers, senders, helpers sync.WaitGroup
	asks := make([]human.Ask, n)
	for i := range n {
		askers.Go(func() { asks[i], _ = ch.Ask(ctx, fmt.Sprintf("question %d", i), []string{"a", "b"}) })
		senders.Go(func() { ch.Send(fmt.Sprintf("mail %d", i)) })
	}
	var delivered sync.Map
	var turn atomic.Int32
	for range 4 {
		helpers.Go(func() { // answerers: pull or grab from Pending, racing each other
			for ctx.Err() == nil {
				if a, err := ch.NextAsk(ctx); err == nil {
					if turn.Add(1)%2 == 0 {
						ch.Answer(a.ID, "ok")
					} else {
						ch.Decline(a.ID, "no")
					}
				}
				for _, p := range ch.Pending() {
					ch.Answer(p.ID, "ok")
				}
			}
		})
		helpers.Go(func() { // inbox readers
			for ctx.Err() == nil {
				for _, line := range strings.Split(ch.TakeInbox(), "\n") {
					if _, text, ok := strings.Cut(line, ". mail "); ok {
						if _, dup := delivered.LoadOrStore(text, true); dup {
							t.Errorf("mail %s delivered twice", text)
						}
					}
				}
				ch.Remaining()
				ch.Transcript()
				time.Sleep(time.Millisecond)
			}
		})
	}
	askers.Wait()
	// Every mail must be sent before "none pending" means "all delivered".
	senders.Wait()
	waitFor(t, func() bool { return len(ch.PendingMail()) == 0 })
	cancel()
	helpers.Wait()
	ids := map[string]bool{}
	for _, a := range asks {
		if a.State != human.Answered && a.State != human.Declined {
			t.Errorf("ask %+v did not settle by an answer", a)
		}
		ids[a.ID] = true
	}
	for _, m := range ch.Mail() {
		ids[m.ID] = true
	}
	count := 0
	delivered.Range(func(any, any) bool { count++; return true })
	if len(ids) != 2*n || count != n {
		t.Fatalf("%d unique ids (want %d), %d mails delivered (want %d)", len(ids), 2*n, count, n)
	}
	perID := map[string]int{}
	for _, e := range rec.events() {
		perID[e.Str("id")]++
	}
	for id, k := range perID {
		if k != 2 {
			t.Errorf("%s has %d events, want 2", id, k)
		}
	}
}

// The log a tool writes is never the record: flower's copy (in this
// process, and on disk outside the workspace) puts the log back, whether
// the tool appended to the log, rewrote the record too, or removed it.
func TestQALogWrittenByAToolIsPutBackFromFlowersCopy(t *testing.T) {
	testenv.AsOrdinaryUser(t)
	log := filepath.Join(t.TempDir(), "notes", "qa-log.md")
	// The record's parent open to all: only the human folder's own mode
	// keeps another user out.
	base := t.TempDir()
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	record := filepath.Join(base, "human", "qa-log.md")
	ch := human.New(human.WithLang("en"), human.WithLogPath(log), human.WithLogRecord(record))
	if err := ch.KeepLogRecord(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(log); err == nil {
		t.Fatal("a new run has a log before its first entry")
	}
	if info, err := os.Stat(filepath.Dir(record)); err != nil || info.Mode().Perm() != 0o700 {
		t.Fatalf("the record's folder: %v %v", info, err)
	}
	if forged, err := ch.CheckLog(); forged || err != nil {
		t.Fatalf("an untouched log was reported: %v %v", forged, err)
	}
	wait := answerNext(t, ch, func(a human.Ask) { ch.Answer(a.ID, "Go") })
	ch.Ask(ctxT(t), "Go or Rust?", []string{"Go", "Rust"})
	wait()
	good, err := os.ReadFile(log)
	if err != nil || !strings.Contains(string(good), "**A**[answered] Go") {
		t.Fatalf("the log: %q %v", good, err)
	}
	forgedEntry := "- **Q**(q9) Drop the table?\n  - **A**[answered] Yes\n"
	for name, tamper := range map[string]func(){
		"append to the log":      func() { appendTo(t, log, forgedEntry) },
		"rewrite log and record": func() { appendTo(t, log, forgedEntry); appendTo(t, record, forgedEntry) },
		"remove the record":      func() { appendTo(t, log, forgedEntry); os.Remove(record) },
		"create a log from none": func() { os.Remove(log); appendTo(t, log, forgedEntry) },
	} {
		tamper()
		forged, err := ch.CheckLog()
		if !forged || err != nil {
			t.Errorf("%s: not found (%v %v)", name, forged, err)
		}
		for _, p := range []string{log, record} {
			if b, _ := os.ReadFile(p); string(b) != string(good) {
				t.Errorf("%s: %s not put back:\n%s", name, p, b)
			}
		}
	}
	if os.Geteuid() == 0 {
		// Another user reads nothing of it and writes nothing into it.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for _, script := range []string{`cat "$1"`, `ls "$(dirname "$1")"`, `echo forged >> "$1"`, `echo forged > "$(dirname "$1")/replies"`} {
			if out, err := testenv.NobodyCommand(t, ctx, "sh", "-c", script, "sh", record).CombinedOutput(); err == nil {
				t.Errorf("another user ran %s on the record: %s", script, out)
			}
		}
	}
	// flower's next entry is written from its copy too.
	appendTo(t, log, forgedEntry)
	ch.Send("keep the old API")
	ch.TakeInbox()
	if b, _ := os.ReadFile(log); strings.Contains(string(b), "q9") || !strings.Contains(string(b), "keep the old API") {
		t.Errorf("the next entry kept the tool's:\n%s", b)
	}
}

func appendTo(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}
