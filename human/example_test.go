package human_test

import (
	"context"
	"fmt"
	"time"

	"github.com/flowerrun/flower/human"
)

// A pull UI: one goroutine takes questions with NextAsk and answers them
// while the asker (the ask tool, or a workflow) waits.
func Example() {
	ch := human.New(human.WithLang("zh"), human.WithLang("en"), human.WithTimeout(time.Minute))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		q, err := ch.NextAsk(ctx)
		if err != nil {
			return
		}
		ch.Answer(q.ID, "Go")
	}()
	a, _ := ch.Ask(ctx, "Go or Rust?", []string{"Go", "Rust"})
	<-done
	fmt.Println(a.ID, a.State, a.Answer)

	m, _ := ch.Send("also count bytes")
	fmt.Println(m.ID, len(ch.PendingMail()))
	fmt.Println(ch.Remaining())
	// Output:
	// q1 answered Go
	// m2 1
	// -1
}
