package team_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/internal/pgtest"
	"github.com/flowerrun/flower/team"
)

// TestChaos: twelve runs on three workers while workers are killed (their
// process groups), paused past their interval and continued, drained with
// SIGTERM, PostgreSQL restarts and the remote refuses pushes for 30 s.
// Afterwards every run is achieved with its work on its branch, or parked
// with its reasons (a worker killed while the remote refused its finished
// work parks its run: that work was on its disk alone), no step was
// started more than twice (once, and once more for a cut call), every
// transcript line in the database is there once and after its parent, the
// last holder's transcripts are all in the database, and no process of a
// run outlived its worker.
func TestChaos(t *testing.T) {
	t.Parallel()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("FLOWER_CHAOS_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("chaos seed %d (FLOWER_CHAOS_SEED repeats it)", seed)
	rnd := rand.New(rand.NewPCG(seed, seed))

	srv := pgtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	db, err := srv.CreateDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w := newWorldOn(t, db)
	tm := w.open()
	// The remote refuses pushes while this file exists.
	refuse := filepath.Join(t.TempDir(), "refuse-pushes")
	hook := "#!/bin/sh\nif [ -e " + refuse + " ]; then echo 'pushes are refused for a while' >&2; exit 1; fi\n"
	if err := os.WriteFile(filepath.Join(w.remote, "hooks", "pre-receive"), []byte(hook), 0o755); err != nil {
		t.Fatal(err)
	}
	const runs = 12
	for i := 1; i <= runs; i++ {
		w.submit(fmt.Sprintf("task-%d pause", i))
	}
	const rescue = 6 * time.Second
	names := []string{"machine-a", "machine-b", "machine-c"}
	machines := map[string]*machine{}
	var all []*machine
	start := func(name string) {
		m := w.worker(name, "--rescue", rescue.String())
		machines[name] = m
		all = append(all, m)
	}
	for _, n := range names {
		start(n)
	}

	ended := func() bool {
		rs, err := tm.Runs(ctx, team.RunFilter{})
		return err == nil && len(rs) == runs && allEnded(rs)
	}
	// The chaos: an act every few seconds until every run ended or four
	// minutes passed; PostgreSQL's restart and the push outage once each.
	acts := []string{"kill", "pause", "drain", "pgrestart", "refuse"}
	var cuts []time.Time // when a worker was killed or paused
	done := map[string]bool{}
	for deadline := time.Now().Add(4 * time.Minute); time.Now().Before(deadline) && !ended(); {
		time.Sleep(time.Duration(4+rnd.IntN(6)) * time.Second)
		act := acts[rnd.IntN(len(acts))]
		if (act == "pgrestart" || act == "refuse") && done[act] {
			act = "kill"
		}
		done[act] = true
		name := names[rnd.IntN(len(names))]
		m := machines[name]
		t.Logf("%s: %s %s", time.Now().Format("15:04:05.0"), act, name)
		switch act {
		case "kill":
			cuts = append(cuts, time.Now())
			run := descendants(m.cmd.Process.Pid)
			_ = syscall.Kill(-m.cmd.Process.Pid, syscall.SIGKILL)
			<-m.done
			m.done <- nil
			for limit := time.Now().Add(5 * time.Second); len(living(run)) > 0; time.Sleep(50 * time.Millisecond) {
				if time.Now().After(limit) {
					t.Errorf("5 s after %s was killed its run's processes %v live on", name, living(run))
					break
				}
			}
			start(name)
		case "pause":
			cuts = append(cuts, time.Now())
			_ = syscall.Kill(-m.cmd.Process.Pid, syscall.SIGSTOP)
			time.Sleep(rescue * 3 / 2)
			_ = syscall.Kill(-m.cmd.Process.Pid, syscall.SIGCONT)
		case "drain":
			_ = m.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case err := <-m.done:
				m.done <- err
			case <-time.After(3 * time.Minute):
				t.Fatalf("%s did not stop after SIGTERM:\n%s", name, m.out)
			}
			start(name)
		case "pgrestart":
			if err := srv.Restart(ctx); err != nil {
				t.Fatalf("restart: %v\n%s", err, srv.Log())
			}
		case "refuse":
			if err := os.WriteFile(refuse, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			go func() {
				time.Sleep(30 * time.Second)
				os.Remove(refuse)
			}()
		}
	}
	os.Remove(refuse)
	final := waitFor(t, tm, 8*time.Minute, "every run ended", func(rs []team.Run) bool { return len(rs) == runs && allEnded(rs) })

	achieved := 0
	for _, r := range final {
		switch {
		case r.State == team.Achieved:
			achieved++
			task := "task-" + strconv.FormatInt(r.ID, 10)
			if got := branchFile(t, w.remote, r.Branch, task+".txt"); got != task {
				t.Errorf("%s achieved, but its branch holds %q in %s.txt", r.Name(), got, task)
			}
		case r.State == team.Failed && strings.TrimSpace(r.Reason) != "":
			t.Logf("%s parked: %s", r.Name(), r.Reason)
		default:
			t.Errorf("%s ended %s without its reasons: %q %+v", r.Name(), r.State, r.Reason, r.Failures)
		}
	}
	t.Logf("%d of %d runs achieved", achieved, runs)

	// No step started again but for an attempt that was cut in it: a
	// step's first request carries its prompt as the last message, and a
	// run's attempts bound how often that may be sent.
	for i := 1; i <= runs; i++ {
		task := fmt.Sprintf("task-%d", i)
		attempts := len(startedBy(t, tm, int64(i)))
		starts := map[string]int{}
		for _, req := range w.srv.Requests() {
			if len(req.Messages) == 0 || !strings.Contains(requestText(req), task+" ") {
				continue
			}
			last := req.Messages[len(req.Messages)-1]
			for _, b := range last.Content {
				switch {
				case b.Type == "text" && strings.Contains(b.Text, "Plan the change"):
					starts["plan"]++
				case b.Type == "text" && strings.Contains(b.Text, "Now make the change"):
					starts["build"]++
				}
			}
		}
		for step, n := range starts {
			if n > attempts {
				t.Errorf("%s's %s step started %d times in %d attempts", task, step, n, attempts)
			}
		}
	}

	// Every request a run's processes made (its task in the conversation;
	// the CLI's quota probes belong to no run) is in that run's cost,
	// those of killed attempts included, but for what a machine answered
	// in the few seconds before it died or was paused: its transcript
	// lines may never have left it (a named gap).
	lost := func(at time.Time) bool {
		for _, c := range cuts {
			if at.After(c.Add(-4*time.Second)) && at.Before(c.Add(time.Second)) {
				return true
			}
		}
		return false
	}
	for _, r := range final {
		task := "task-" + strconv.FormatInt(r.ID, 10) + " "
		spent := 0.0
		for _, req := range w.srv.Requests() {
			if req.Err != nil || req.MaxTokens == 16 || !strings.Contains(requestText(req), task) || lost(req.At) {
				continue
			}
			c, _ := claude.RequestCost(req.Model, claude.RequestUsage{Usage: claude.Usage{InputTokens: req.Usage.InputTokens, OutputTokens: req.Usage.OutputTokens,
				CacheCreationInputTokens: req.Usage.CacheCreationInputTokens, CacheReadInputTokens: req.Usage.CacheReadInputTokens}})
			spent += c
		}
		if r.Cost < spent-1e-9 {
			t.Errorf("%s's recorded cost $%.6f is below what its requests cost ($%.6f)", r.Name(), r.Cost, spent)
		}
	}

	// Every transcript line in the database once (a unique index holds
	// that) and after the line it answers.
	rows, err := tm.Pool().Query(ctx, "select store_key, payload from session_entries order by store_key, seq")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]map[string]bool{}
	stored := map[string]bool{}
	for rows.Next() {
		var key string
		var payload []byte
		if err := rows.Scan(&key, &payload); err != nil {
			t.Fatal(err)
		}
		var e struct {
			UUID   string  `json:"uuid"`
			Parent *string `json:"parentUuid"`
		}
		if json.Unmarshal(payload, &e) != nil || e.UUID == "" {
			continue
		}
		if seen[key] == nil {
			seen[key] = map[string]bool{}
		}
		// A cut call's healing line (a version-5 uuid) is made by the
		// session store each time it loads the transcript, never stored.
		healed := e.Parent != nil && len(*e.Parent) == 36 && (*e.Parent)[14] == '5'
		if e.Parent != nil && *e.Parent != "" && !healed && !seen[key][*e.Parent] {
			t.Errorf("%s: %s comes before the line it answers (%s): %.300s", key, e.UUID, *e.Parent, payload)
		}
		seen[key][e.UUID] = true
		stored[e.UUID] = true
	}
	rows.Close()
	// The last holder's own store of each run holds nothing the database
	// lacks.
	for _, r := range final {
		if r.State != team.Achieved {
			continue
		}
		// The newest instance of the last holder that has the run's folder
		// (a drained or killed worker was started again in a new one).
		path := ""
		for _, m := range all {
			p := filepath.Join(m.dir, r.Name(), "work", "runs", "sessions.db")
			if _, err := os.Stat(p); err == nil && m.name == r.Host {
				path = p
			}
		}
		if path == "" {
			t.Errorf("%s: no session store on its last holder %s", r.Name(), r.Host)
			continue
		}
		local, err := sql.Open("sqlite", path+"?mode=ro")
		if err != nil {
			t.Fatal(err)
		}
		var missing int
		lrows, err := local.Query("select uid from entries where uid is not null")
		if err != nil {
			t.Errorf("%s: its last holder's session store: %v", r.Name(), err)
		} else {
			for lrows.Next() {
				var uid string
				if lrows.Scan(&uid) == nil && !stored[uid] {
					missing++
				}
			}
			lrows.Close()
		}
		local.Close()
		if missing > 0 {
			t.Errorf("%s: %d transcript lines of its last holder %s are not in the database", r.Name(), missing, r.Host)
		}
	}

	// Every worker stopped: no process of any run is left.
	for _, m := range all {
		_ = m.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, m := range all {
		select {
		case err := <-m.done:
			m.done <- err
		case <-time.After(3 * time.Minute):
			t.Errorf("%s did not stop", m.name)
		}
	}
	// A process killed while the kernel makes its namespaces (bwrap in
	// unshare(CLONE_NEWNET), which waits on the kernel's namespace locks
	// while other runs' namespaces are torn down) dies once that returns:
	// the kernel is given a minute; a process that outlives it leaked.
	var left []string
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(500 * time.Millisecond) {
		left = left[:0]
		procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
		for _, p := range procs {
			b, err := os.ReadFile(p)
			if err != nil {
				continue
			}
			for _, m := range all {
				if strings.Contains(string(b), m.dir) && len(living([]int{pidOf(p)})) > 0 {
					left = append(left, m.name+": "+strings.ReplaceAll(string(b), "\x00", " "))
				}
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			break
		}
	}
	for _, l := range left {
		t.Errorf("a process of a run outlived its worker %s", l)
	}
}

func pidOf(procPath string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(procPath)))
	return n
}
