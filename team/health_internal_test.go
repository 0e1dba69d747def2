package team

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/riverqueue/river/rivertype"

	"github.com/flowerrun/flower"
	"github.com/flowerrun/flower/internal/pgtest"
)

// The worker's words about its environment exist in both languages and
// say the same: the same values in the same order, Chinese in the one,
// none in the other.
func TestHealthTextsSayTheSameInBothLanguages(t *testing.T) {
	verbs := regexp.MustCompile(`%[a-z]`)
	for key, tx := range healthTexts {
		zh, en := tx[0], tx[1]
		if zh == "" || en == "" {
			t.Errorf("%s: a language is missing: %q / %q", key, zh, en)
		}
		if !slices.Equal(verbs.FindAllString(zh, -1), verbs.FindAllString(en, -1)) {
			t.Errorf("%s: the two languages take other values: %q / %q", key, zh, en)
		}
		if !strings.ContainsFunc(zh, func(r rune) bool { return unicode.Is(unicode.Han, r) }) {
			t.Errorf("%s: the Chinese text has no Chinese: %q", key, zh)
		}
		if strings.ContainsFunc(en, func(r rune) bool { return unicode.Is(unicode.Han, r) }) {
			t.Errorf("%s: the English text has Chinese: %q", key, en)
		}
	}
}

// checkEnv finds each broken part of a worker's own environment as its
// runs would meet it, and passes a whole one.
func TestCheckEnvFindsWhatIsBrokenAndPassesAWholeEnvironment(t *testing.T) {
	tmp := t.TempDir()
	cli := filepath.Join(tmp, "claude")
	flowerBin := filepath.Join(tmp, "bin", "flower")
	for _, f := range []string{cli, flowerBin} {
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	aFile := filepath.Join(tmp, "a-file")
	if err := os.WriteFile(aFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	broken := filepath.Join(tmp, "bin", "claude-broken")
	if err := os.WriteFile(broken, []byte("#!/bin/sh\necho starting\necho 'error while loading shared libraries' >&2\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	whole := []string{"PATH=/nonexistent", "FLOWER_CLAUDE=" + cli, "ANTHROPIC_API_KEY=sk-test-0123456789", "HOME=" + tmp}
	without := func(env []string, key string) []string {
		return slices.DeleteFunc(slices.Clone(env), func(kv string) bool { return strings.HasPrefix(kv, key+"=") })
	}
	worker := func(dir string, env []string, lang flower.Lang) *Worker {
		return &Worker{o: WorkerOptions{Name: "wk", Dir: dir, Flower: flowerBin, Env: env, Lang: lang}}
	}
	cases := []struct {
		name string
		w    *Worker
		want string // "" for whole
	}{
		{"whole", worker(filepath.Join(tmp, "runs"), whole, ""), ""},
		{"a --dir under a file", worker(filepath.Join(aFile, "runs"), whole, ""), "cannot be made (not a directory)"},
		{"a --dir under a file, in Chinese", worker(filepath.Join(aFile, "runs"), whole, flower.Chinese), "建不出来(not a directory)"},
		{"no flower", &Worker{o: WorkerOptions{Name: "wk", Dir: tmp, Flower: filepath.Join(tmp, "gone"), Env: whole}}, "cannot be run (no such file or directory)"},
		{"FLOWER_CLAUDE missing", worker(tmp, append(without(whole, "FLOWER_CLAUDE"), "FLOWER_CLAUDE="+filepath.Join(tmp, "gone")), ""), "FLOWER_CLAUDE=" + filepath.Join(tmp, "gone") + " is not an executable file"},
		// The worker's own HOME may hold a pinned CLI: a run's HOME is its
		// own, so only XDG_CACHE_HOME or PATH would reach it.
		{"no CLI anywhere", worker(tmp, without(whole, "FLOWER_CLAUDE"), ""), "no claude is on PATH"},
		{"no key", worker(tmp, without(whole, "ANTHROPIC_API_KEY"), ""), "no credentials for the model"},
		{"a CLI that does not start", worker(tmp, append(without(whole, "FLOWER_CLAUDE"), "FLOWER_CLAUDE="+broken), ""),
			"the Claude Code CLI " + broken + " does not start inside a run's confinement (exit status 3: error while loading shared libraries)"},
	}
	for _, c := range cases {
		p := c.w.checkEnv(context.Background())
		switch {
		case c.want == "" && p != nil:
			t.Errorf("%s: found %q", c.name, p.what)
		case c.want != "" && (p == nil || !strings.Contains(p.what, c.want)):
			t.Errorf("%s: found %v, want %q", c.name, p, c.want)
		case p != nil && p.fix == "":
			t.Errorf("%s: %q says nothing to do", c.name, p.what)
		}
	}
	// A key in the .env beside the flower program reaches the runs (their
	// flower loads it): whole.
	if err := os.WriteFile(filepath.Join(filepath.Dir(flowerBin), ".env"), []byte("ANTHROPIC_API_KEY=sk-test-0123456789\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if p := worker(tmp, without(whole, "ANTHROPIC_API_KEY"), "").checkEnv(context.Background()); p != nil {
		t.Errorf("a key in the installation's .env: found %q", p.what)
	}
	// A CLI that started in a run's confinement is not started there again
	// for every run: once per file (the lookup reads its version each time).
	counted := filepath.Join(tmp, "bin", "claude-counted")
	starts := filepath.Join(tmp, "starts")
	if err := os.WriteFile(counted, []byte("#!/bin/sh\ncase $HOME in */.flower-probe-*) echo x >> '"+starts+"';; esac\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	w := worker(tmp, append(without(whole, "FLOWER_CLAUDE"), "FLOWER_CLAUDE="+counted), "")
	for range 3 {
		if p := w.checkEnv(context.Background()); p != nil {
			t.Fatalf("a CLI that starts: found %q", p.what)
		}
	}
	if b, _ := os.ReadFile(starts); string(b) != "x\n" {
		t.Errorf("three checks started the CLI %d times, want once", strings.Count(string(b), "x"))
	}
	if got := w.cliPath(); got != counted {
		t.Errorf("the runs' CLI is %q, want %q", got, counted)
	}
	// The probe leaves nothing behind.
	if left, _ := filepath.Glob(filepath.Join(tmp, ".flower-probe-*")); len(left) > 0 {
		t.Errorf("probe files left: %v", left)
	}
}

// An attempt that fails while the worker's own environment is broken (its
// run's folders cannot be made) is the worker's failure, not the run's:
// nothing is counted on the run, which goes back to the queue saying why,
// and the job is handed back (snoozed, no attempt counted). The same
// failure on a whole worker counts as the run's.
func TestAnAttemptFailedByTheWorkersEnvironmentIsNotTheRunsFailure(t *testing.T) {
	ctx := context.Background()
	url := pgtest.Database(t)
	tm, err := Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer tm.Close()
	tmp := t.TempDir()
	cli, flowerBin := filepath.Join(tmp, "claude"), filepath.Join(tmp, "flower")
	for _, f := range []string{cli, flowerBin} {
		if err := os.WriteFile(f, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	aFile := filepath.Join(tmp, "a-file")
	if err := os.WriteFile(aFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=/nonexistent", "FLOWER_CLAUDE=" + cli, "ANTHROPIC_API_KEY=sk-test-0123456789"}
	failOn := func(name, dir string) (Run, error) {
		t.Helper()
		r, err := tm.Submit(ctx, Submission{Request: "task-1", Repo: filepath.Join(tmp, "origin.git")})
		if err != nil {
			t.Fatal(err)
		}
		// The job as River hands it to a worker: running, its first attempt.
		if _, err := tm.pool.Exec(ctx, "update river_job set state = 'running', attempt = 1, attempted_at = now() where id = $1", r.JobID); err != nil {
			t.Fatal(err)
		}
		w, err := tm.NewWorker(url, WorkerOptions{Name: name, Dir: dir, Flower: flowerBin, Env: env, Unconfined: true, Rescue: 8 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		a := &attempt{w: w, run: r, job: &rivertype.JobRow{ID: r.JobID, Attempt: 1}}
		ferr := a.failed(ctx, fmt.Errorf("worker %s cannot make %s: not a directory", name, filepath.Join(dir, "r1", "home")))
		after, err := tm.Run(ctx, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		return after, ferr
	}

	r, err := failOn("wk-broken", filepath.Join(aFile, "runs"))
	var snooze *rivertype.JobSnoozeError
	if !errors.As(err, &snooze) {
		t.Errorf("a failure of the worker's environment returned %v, want the job handed back (snoozed)", err)
	}
	if len(r.Failures) != 0 || r.State != Queued || !strings.Contains(r.Reason, "worker wk-broken cannot take runs: its --dir") {
		t.Errorf("the run after a failure of the worker's environment: %s, %d failures, reason %q", r.State, len(r.Failures), r.Reason)
	}

	r, err = failOn("wk-whole", filepath.Join(tmp, "runs"))
	if errors.As(err, &snooze) || len(r.Failures) != 1 {
		t.Errorf("a failure on a whole worker returned %v with %d failures recorded, want it counted as the run's", err, len(r.Failures))
	}
}

// A worker stopped before it has started (a person's Ctrl-C in its first
// second, while it registers) ends as cleanly as one stopped later: Run
// returned "context canceled", which the command printed, exiting 1.
func TestAWorkerStoppedBeforeItStartsEndsCleanly(t *testing.T) {
	t.Parallel()
	url := pgtest.Database(t)
	tm, err := Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer tm.Close()
	flowerBin := filepath.Join(t.TempDir(), "flower")
	if err := os.WriteFile(flowerBin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	w, err := tm.NewWorker(url, WorkerOptions{Name: "wk-stopped", Dir: t.TempDir(), Flower: flowerBin, Unconfined: true, Rescue: 8 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := w.Run(ctx); err != nil {
		t.Errorf("a worker stopped before it started: %v, want a clean end", err)
	}
}
