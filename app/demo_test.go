package app

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowerrun/flower/human"
	"github.com/flowerrun/flower/internal/screen"
)

func TestTheSimulatedHumanGivesThePerson15sAndWaitsWhileTheyType(t *testing.T) {
	shown := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return shown.Add(time.Duration(s * float64(time.Second))) }
	tests := []struct {
		name      string
		lastInput time.Time
		due       time.Time
	}{
		{"nobody typed: 15 s after the question", time.Time{}, at(15)},
		{"input before the question does not delay it", at(-30), at(15)},
		{"input early on: still 15 s", at(3), at(15)},
		{"input at 12 s: 5 s of quiet after it", at(12), at(17)},
		{"input at 40 s (a side question): 5 s after it", at(40), at(45)},
	}
	for _, tt := range tests {
		if got := demoAnswerDue(shown, tt.lastInput, defaultDemoPause); !got.Equal(tt.due) {
			t.Errorf("%s: due %v after the question, want %v", tt.name, got.Sub(shown), tt.due.Sub(shown))
		}
	}
	if d, err := demoPause(""); err != nil || d != 15*time.Second {
		t.Errorf("default pause %v %v", d, err)
	}
	if d, err := demoPause("250ms"); err != nil || d != 250*time.Millisecond {
		t.Errorf("FLOWER_DEMO_PAUSE=250ms: %v %v", d, err)
	}
	for _, bad := range []string{"soon", "-1s", "15"} {
		if _, err := demoPause(bad); err == nil || !strings.Contains(err.Error(), "FLOWER_DEMO_PAUSE") {
			t.Errorf("FLOWER_DEMO_PAUSE=%s: %v", bad, err)
		}
	}
}

// TestTheSimulatedHumanAnswersOnlyAfterThePausePastThePersonsLastInput
// runs the simulated human on a real channel: a line typed late in the
// pause puts its answer off.
func TestTheSimulatedHumanAnswersOnlyAfterThePausePastThePersonsLastInput(t *testing.T) {
	var out bytes.Buffer
	var mu sync.Mutex
	ui := &UI{Screen: screen.NewWriter(lockedWriter{&mu, &out}), Lang: "en"}
	ch := human.New(human.WithTimeout(time.Minute))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const pause = 3 * time.Second
	done := make(chan struct{})
	go func() { defer close(done); answerAsDemo(ctx, ui, ch, "hello", pause) }()
	answered := make(chan human.Ask, 1)
	go func() {
		a, _ := ch.Ask(ctx, "What should hello.txt say?", nil)
		answered <- a
	}()
	var a human.Ask
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if p := ch.Pending(); len(p) > 0 {
			a = p[0]
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the question never waited")
		}
	}
	time.Sleep(time.Until(a.AskedAt.Add(pause - 500*time.Millisecond)))
	ui.touched() // a line typed half a second before the pause is over
	typed := ui.LastInput()
	var got human.Ask
	select {
	case got = <-answered:
	case <-time.After(30 * time.Second):
		t.Fatal("the simulated human never answered")
	}
	cancel()
	<-done
	if got.State != human.Answered || got.Answer != "hello" {
		t.Fatalf("ask settled %s %q", got.State, got.Answer)
	}
	if early := typed.Add(pause / 3).Sub(got.SettledAt); early > 0 {
		t.Errorf("answered %v after the person's last line, before the %v of quiet", got.SettledAt.Sub(typed), pause/3)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(out.String(), "the simulated human answered hello") {
		t.Errorf("screen: %q", out.String())
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
