package human

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// serve runs ServeFiles on ch in a fresh directory until the test ends.
func serve(t *testing.T, ch *Channel) string { t.Helper(); return serveSigned(t, ch, nil) }

// serveSigned is serve taking only replies signed with key (nil: all).
func serveSigned(t *testing.T, ch *Channel, key []byte) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "human")
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := ServeSignedFiles(ctx, ch, dir, key); err != nil {
			t.Error(err)
		}
	}()
	t.Cleanup(func() { cancel(); wg.Wait() })
	return dir
}

// waitPending waits until pending.json lists n questions.
func waitPending(t *testing.T, dir string, n int) PendingFile {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		p, err := ReadPending(dir)
		if err == nil && len(p.Questions) == n {
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("pending.json never listed %d questions: %+v %v", n, p, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func reply(t *testing.T, dir string, r Reply) Outcome {
	t.Helper()
	name, err := WriteReply(dir, r)
	if err != nil {
		t.Fatal(err)
	}
	return outcomeOf(t, dir, name)
}

// outcomeOf waits for the outcome of reply file name, 10 s at most.
func outcomeOf(t *testing.T, dir, name string) Outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	o, err := WaitOutcome(ctx, dir, name)
	if err != nil {
		t.Fatalf("no outcome for %s: %v", name, err)
	}
	return o
}

func TestServeFilesPublishesTheQuestionAndADigitPicksAChoice(t *testing.T) {
	ch := New(WithTimeout(time.Minute))
	dir := serve(t, ch)
	waitPending(t, dir, 0)
	got := make(chan Ask, 1)
	go func() {
		a, _ := ch.Ask(context.Background(), "Which database?", []string{"Postgres", "SQLite"})
		got <- a
	}()
	p := waitPending(t, dir, 1)
	q := p.Questions[0]
	if q.Question != "Which database?" || len(q.Options) != 2 || p.PID != os.Getpid() {
		t.Fatalf("pending.json: %+v", p)
	}
	if o := reply(t, dir, Reply{ID: q.ID, Text: "2"}); o.Result != "answered" || o.Answer != "SQLite" {
		t.Errorf("outcome %+v", o)
	}
	if a := <-got; a.State != Answered || a.Answer != "SQLite" {
		t.Errorf("the ask: %+v", a)
	}
	waitPending(t, dir, 0)
	if entries, _ := os.ReadDir(filepath.Join(dir, RepliesDir)); len(entries) != 0 {
		t.Errorf("reply files left: %v", entries)
	}
}

func TestServeFilesSkipsAndMailsAndNeverLosesWords(t *testing.T) {
	ch := New(WithTimeout(time.Minute))
	dir := serve(t, ch)
	got := make(chan Ask, 2)
	go func() {
		a, _ := ch.Ask(context.Background(), "First?", nil)
		got <- a
	}()
	q := waitPending(t, dir, 1).Questions[0]
	if o := reply(t, dir, Reply{ID: q.ID, Skip: true, Text: "busy"}); o.Result != "declined" {
		t.Errorf("skip: %+v", o)
	}
	if a := <-got; a.State != Declined {
		t.Errorf("the ask: %+v", a)
	}
	// A reply to a question already settled goes to the inbox.
	if o := reply(t, dir, Reply{ID: q.ID, Text: "late answer"}); o.Result != "mail" {
		t.Errorf("late: %+v", o)
	}
	if o := reply(t, dir, Reply{Text: "also add tests"}); o.Result != "mail" {
		t.Errorf("mail: %+v", o)
	}
	if m := ch.PendingMail(); len(m) != 2 || m[0].Text != "late answer" || m[1].Text != "also add tests" {
		t.Errorf("inbox: %+v", m)
	}
	// A file that is not JSON is set aside, not lost and not retried.
	os.WriteFile(filepath.Join(dir, RepliesDir, "zz.json"), []byte("{not json"), 0o600)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(dir, RepliesDir, "zz.json.bad")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a bad reply file was not set aside")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestServeFilesClearsPendingWhenItStops(t *testing.T) {
	ch := New(WithTimeout(time.Minute))
	dir := filepath.Join(t.TempDir(), "human")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ServeFiles(ctx, ch, dir) }()
	actx, acancel := context.WithCancel(context.Background())
	asked := make(chan struct{})
	go func() { ch.Ask(actx, "Still there?", nil); close(asked) }()
	waitPending(t, dir, 1)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if p, err := ReadPending(dir); err != nil || len(p.Questions) != 0 {
		t.Errorf("a stopped run still lists questions: %+v %v", p, err)
	}
	acancel()
	<-asked
}

// A root worker delivers replies to a run that runs as another user: the
// file must be the run's before the run can see it under its name. Before,
// the worker wrote the reply and then handed it over; a run that looked in
// between could not open it, refused it as bad, and the person's answer was
// lost (the team's reply test failed so under load).
func TestWriteReplyOwnedOwnsTheFileBeforeItAppears(t *testing.T) {
	dir := t.TempDir()
	var owned []string
	own := func(p string) error {
		if strings.HasSuffix(p, RepliesDir) {
			owned = append(owned, RepliesDir)
			return nil
		}
		if names, _ := filepath.Glob(filepath.Join(dir, RepliesDir, "*.json")); len(names) > 0 {
			t.Errorf("the reply %v is readable by name before it is owned", names)
		}
		if !strings.HasPrefix(filepath.Base(p), ".") {
			t.Errorf("the file being owned, %s, is not a dot name the reader skips", p)
		}
		owned = append(owned, "file")
		return nil
	}
	name, err := WriteReplyOwned(dir, Reply{ID: "q1", Text: "call it tidy"}, nil, own)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(owned, ",") != RepliesDir+",file" {
		t.Errorf("owned %v, want the new replies folder, then the file", owned)
	}
	b, err := os.ReadFile(filepath.Join(dir, RepliesDir, name))
	if err != nil || !strings.Contains(string(b), "call it tidy") {
		t.Errorf("the reply reads %q, %v", b, err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, RepliesDir, ".*")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}

	// An owner that fails leaves no reply, whole or part.
	_, err = WriteReplyOwned(dir, Reply{ID: "q2", Text: "x"}, nil, func(p string) error { return os.ErrPermission })
	if err == nil {
		t.Fatal("a failed hand-over was not reported")
	}
	if entries, _ := os.ReadDir(filepath.Join(dir, RepliesDir)); len(entries) != 1 {
		t.Errorf("after a failed hand-over the folder holds %d entries, want the first reply only", len(entries))
	}
}

// A signed front end (a team run's) takes only the replies its worker
// signed: a file the run's own processes drop into the folder, unsigned,
// signed with another key, or a signed one copied under another name, is
// refused and named, and the question still waits for the person.
func TestServeSignedFilesRefusesRepliesTheRunWroteItself(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	ch := New(WithTimeout(time.Minute))
	dir := serveSigned(t, ch, key)
	waitPending(t, dir, 0)
	got := make(chan Ask, 1)
	go func() {
		a, _ := ch.Ask(context.Background(), "Ship it?", nil)
		got <- a
	}()
	q := waitPending(t, dir, 1).Questions[0]
	wait := func(name string) Outcome { t.Helper(); return outcomeOf(t, dir, name) }
	forged := []struct {
		what string
		key  []byte
	}{{"unsigned", nil}, {"signed with another key", []byte("another key of the run's own....")}}
	for _, f := range forged {
		name, err := WriteReplyOwned(dir, Reply{ID: q.ID, Text: "yes, ship it"}, f.key, nil)
		if err != nil {
			t.Fatal(err)
		}
		if o := wait(name); o.Result != "refused" || !strings.Contains(o.Note, name) || !strings.Contains(o.Note, "not signed by the person's side") {
			t.Errorf("a reply %s: %+v, want refused and named", f.what, o)
		}
	}
	// A signed reply copied under another name.
	name, err := WriteReplyOwned(dir, Reply{ID: "q99", Text: "the person's words"}, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	signed, err := os.ReadFile(filepath.Join(dir, RepliesDir, name))
	wait(name)
	if err != nil {
		t.Fatal(err)
	}
	copied := strings.Replace(name, ".json", "9.json", 1)
	if err := os.WriteFile(filepath.Join(dir, RepliesDir, copied), []byte(strings.Replace(string(signed), `"q99"`, `"`+q.ID+`"`, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if o := wait(copied); o.Result != "refused" {
		t.Errorf("a signed reply copied under another name with its question changed: %+v, want refused", o)
	}
	if len(ch.Pending()) != 1 {
		t.Fatalf("a refused reply settled the question: %+v", ch.Pending())
	}
	name, err = WriteReplyOwned(dir, Reply{ID: q.ID, Text: "no, wait"}, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	if o := wait(name); o.Result != "answered" || o.Answer != "no, wait" {
		t.Errorf("the worker's signed reply: %+v", o)
	}
	if a := <-got; a.Answer != "no, wait" {
		t.Errorf("the question was answered %q, want the signed reply's words", a.Answer)
	}
}
