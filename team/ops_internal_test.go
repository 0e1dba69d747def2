package team

import (
	"testing"
	"time"

	"github.com/riverqueue/river/rivertype"
)

// A failing run's retries are spaced 10 s, 30 s, 90 s... up to a cap, so
// that a 30-second outage (the remote, the network) is waited out on one
// worker before its failures could park the run; a retried run's new job
// counts from the first step again.
func TestFailuresBackOffUpToACap(t *testing.T) {
	b := backoff{first: min(10*time.Second, DefaultRescue), most: max(10*DefaultRescue, 2*time.Minute)}
	want := []time.Duration{10 * time.Second, 30 * time.Second, 90 * time.Second, 270 * time.Second, 810 * time.Second, 20 * time.Minute, 20 * time.Minute}
	var total time.Duration
	for i, w := range want {
		if got := b.after(i + 1); got != w {
			t.Errorf("after failure %d: %s, want %s", i+1, got, w)
		}
		if i < 2*DefaultMaxFailures-1 {
			total += b.after(i + 1)
		}
	}
	if total < 30*time.Second {
		t.Errorf("the retries before a run is parked span %s: a 30-second outage would park it", total)
	}
	// NextRetry counts the job's recorded errors plus the one failing now.
	job := &rivertype.JobRow{Errors: make([]rivertype.AttemptError, 2)}
	if d := time.Until(b.NextRetry(job)); d < 89*time.Second || d > 90*time.Second {
		t.Errorf("the third failure waits %s, want 90s", d)
	}
	short := backoff{first: min(10*time.Second, MinRescue), most: max(10*MinRescue, 2*time.Minute)}
	if short.after(1) != MinRescue || short.after(10) != 2*time.Minute {
		t.Errorf("with the shortest rescue: %s first, %s at most", short.after(1), short.after(10))
	}
}
