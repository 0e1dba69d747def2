package human_test

import (
	"path/filepath"
	"testing"

	"github.com/flowerrun/flower/human"
)

// A run continued by another process numbers its questions after the ones
// its Q&A log holds: a question id names one question of the run, so a
// reply given for q3 is never taken by a second "q1".
func TestAChannelNumbersAfterTheQuestionsOfItsLog(t *testing.T) {
	dir := t.TempDir()
	log, record := filepath.Join(dir, "notes", "qa-log.md"), filepath.Join(dir, "human", "qa-log.md")
	open := func() *human.Channel {
		ch := human.New(human.WithLang("en"), human.WithLogPath(log), human.WithLogRecord(record))
		if err := ch.KeepLogRecord(); err != nil {
			t.Fatal(err)
		}
		return ch
	}
	ask := func(ch *human.Channel, question string) string {
		wait := answerNext(t, ch, func(a human.Ask) { ch.Answer(a.ID, "yes") })
		a, err := ch.Ask(ctxT(t), question, nil)
		wait()
		if err != nil {
			t.Fatal(err)
		}
		return a.ID
	}
	first := open()
	if a, b := ask(first, "Go?"), ask(first, "Tabs?"); a != "q1" || b != "q2" {
		t.Fatalf("the first process asked %s and %s, want q1 and q2", a, b)
	}
	if id := ask(open(), "Tests?"); id != "q3" {
		t.Errorf("the next process of the run asked %s, want q3 (its log holds q1 and q2)", id)
	}
}
