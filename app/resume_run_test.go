package app

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flowerrun/flower/claude/claudetest"
	"github.com/flowerrun/flower/internal/demo"
)

// A team's next attempt carries a run on with --resume-run: the request is
// the run's own, so it is not added to the brief as a wake's new words and
// the goal set from the brief is not set again (the worker passed the
// request as words before: the brief grew an "Added on waking" block and
// the goal step ran a second time). Without the flag, words given on a
// wake still amend the brief.
func TestResumeRunCarriesTheRunOnWithoutAddingItsRequestToTheBrief(t *testing.T) {
	t.Parallel()
	for _, resume := range []bool{true, false} {
		name := map[bool]string{true: "resume-run", false: "words"}[resume]
		t.Run(name, func(t *testing.T) {
			ws := t.TempDir()
			texts := demo.TextsFor("en")
			g := newGate()
			srv := starterServer(t, ws, nil, g.held)
			env := binEnv(t, srv)
			first := exec.Command(flowerBin, "go", "-w", ws, "--lang", "en", "--timeout", "0", texts.Ask)
			first.Env, first.Dir = env, t.TempDir()
			if err := first.Start(); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the work step's request", func() bool {
				return hasRequest(srv, func(r *claudetest.Request) bool { return r.HasText(workMarker) })
			})
			// The machine dies in the work step.
			for _, pid := range append(childPIDs(first.Process.Pid), first.Process.Pid) {
				_ = syscall.Kill(-pid, syscall.SIGKILL)
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			_ = first.Wait()
			close(g.open)
			goals := countRequests(srv, "into a goal that can be decided")
			clarifies := countRequests(srv, texts.Ask)

			args := []string{"go", "-w", ws, "--lang", "en", "--timeout", "0"}
			if resume {
				args = append(args, "--resume-run")
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			again := exec.CommandContext(ctx, flowerBin, append(args, texts.Ask)...)
			again.Env, again.Dir = env, t.TempDir()
			// The worker's input: a pipe that never closes.
			stdin, hold, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer hold.Close()
			again.Stdin = stdin
			out, err := again.CombinedOutput()
			stdin.Close()
			if err != nil {
				t.Fatalf("the continuation: %v\n%s", err, out)
			}
			found, _ := filepath.Glob(filepath.Join(ws, ".flower", "*", "brief.md"))
			if len(found) != 1 {
				t.Fatalf("briefs in the workbench: %v", found)
			}
			brief, err := os.ReadFile(found[0])
			if err != nil {
				t.Fatal(err)
			}
			amended := strings.Contains(string(brief), "Added on waking")
			setAgain := countRequests(srv, "into a goal that can be decided") > goals
			if resume && (amended || setAgain) {
				t.Errorf("--resume-run: the brief amended %v, the goal set again %v:\n%s", amended, setAgain, brief)
			}
			if !resume && !amended {
				t.Errorf("words given on a wake did not reach the brief:\n%s", brief)
			}
			if resume && countRequests(srv, texts.Ask) > clarifies+1 {
				t.Errorf("the continuation clarified again: %d requests carry the request, %d before", countRequests(srv, texts.Ask), clarifies)
			}
			if data, err := os.ReadFile(filepath.Join(ws, texts.File)); err != nil || strings.TrimSpace(string(data)) != "hello" {
				t.Errorf("%s: %q %v\n%s", texts.File, data, err, out)
			}
		})
	}
}

func countRequests(srv *claudetest.Server, marker string) int {
	n := 0
	for _, r := range srv.Requests() {
		if r.HasText(marker) {
			n++
		}
	}
	return n
}
