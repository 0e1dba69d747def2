package sqlite

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowerrun/flower/claude"
)

// The multi-process tests re-execute the test binary as helper processes
// (TestMain runs runHelper when helperDBEnv is set).
const (
	helperDBEnv   = "FLOWER_STORE_HELPER_DB"
	helperNameEnv = "FLOWER_STORE_HELPER_NAME"
	helperModeEnv = "FLOWER_STORE_HELPER_MODE"
	helperEntries = 500
	helperFrozen  = 1_700_000_000_000 // every appender's clock stands still here

	// modeAppend opens the database, then appends helperEntries entries
	// from two goroutines (helperAppender); modeOpen opens a database that
	// may not exist yet, appends one entry and closes it.
	modeAppend = "append"
	modeOpen   = "open"
)

// runHelper is the helper process. It tells the parent it is ready with a
// "READY" line on stdout, then waits for a line on stdin, so that the
// parent can release several helpers at one instant.
func runHelper(path string) error {
	name := os.Getenv(helperNameEnv)
	switch mode := os.Getenv(helperModeEnv); mode {
	case modeOpen:
		if err := awaitGo(); err != nil {
			return err
		}
		s, err := Open(path)
		if err != nil {
			return err
		}
		key := claude.SessionKey{ProjectKey: "-open", SessionID: name}
		if err := s.Append(context.Background(), key, []json.RawMessage{json.RawMessage(`{"type":"user","uuid":"` + name + `"}`)}); err != nil {
			s.Close()
			return err
		}
		return s.Close()
	case modeAppend:
		return helperAppender(path, name)
	default:
		return fmt.Errorf("unknown helper mode %q", mode)
	}
}

// awaitGo says READY and waits for the parent's line.
func awaitGo() error {
	fmt.Println("READY")
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		return fmt.Errorf("waiting for the parent's go: %w", err)
	}
	return nil
}

// helperProc is a running helper process as its parent sees it.
type helperProc struct {
	name   string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
	stderr bytes.Buffer
}

// startHelpers starts one helper per name on the database at path and
// returns when every one has said READY. A helper that exits before (its
// stdout ends) makes it return at once, with the helper's output; ctx bounds
// them all (exec kills a helper when it ends). The helpers are killed when
// the test ends, unless finished.
func startHelpers(t *testing.T, ctx context.Context, mode, path string, names ...string) ([]*helperProc, error) {
	t.Helper()
	hs := make([]*helperProc, len(names))
	for i, name := range names {
		h := &helperProc{name: name, cmd: exec.CommandContext(ctx, os.Args[0])}
		h.cmd.Env = append(os.Environ(), helperDBEnv+"="+path, helperNameEnv+"="+name, helperModeEnv+"="+mode,
			// A race-enabled binary sleeps 1 s at exit by default; the
			// create test starts 400 of them.
			"GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
		h.cmd.Stderr = &h.stderr
		var err error
		if h.stdin, err = h.cmd.StdinPipe(); err != nil {
			return nil, err
		}
		out, err := h.cmd.StdoutPipe()
		if err != nil {
			return nil, err
		}
		h.stdout = bufio.NewReader(out)
		if err := h.cmd.Start(); err != nil {
			return nil, err
		}
		t.Cleanup(func() {
			if h.cmd.ProcessState == nil { // not finished: the test failed early
				_ = h.cmd.Process.Kill()
				_ = h.cmd.Wait()
			}
		})
		hs[i] = h
	}
	for _, h := range hs {
		line, err := h.stdout.ReadString('\n')
		if err != nil || line != "READY\n" {
			_, _ = io.Copy(io.Discard, h.stdout)
			werr := h.cmd.Wait()
			return nil, fmt.Errorf("helper %s did not get ready (said %q, %v; exit: %v): %s", h.name, line, err, werr, strings.TrimSpace(h.stderr.String()))
		}
	}
	return hs, nil
}

// release lets every helper go, as close to one instant as the parent can.
func release(t *testing.T, hs []*helperProc) {
	t.Helper()
	for _, h := range hs {
		if _, err := io.WriteString(h.stdin, "GO\n"); err != nil {
			t.Fatalf("release helper %s: %v", h.name, err)
		}
	}
}

// finish reads the rest of the helper's stdout and waits for it to exit.
// The error says how it failed, with what it wrote on stderr.
func (h *helperProc) finish() (string, error) {
	out, rerr := io.ReadAll(h.stdout)
	err := h.cmd.Wait()
	if err == nil {
		err = rerr
	}
	if err != nil {
		return string(out), fmt.Errorf("helper %s: %w: %s", h.name, err, strings.TrimSpace(h.stderr.String()))
	}
	return string(out), nil
}

// helperAppender appends helperEntries entries to a shared key and as many
// to its own key, from two goroutines at once, with a frozen clock, and
// prints the mtime of every append it committed. It opens the database
// before saying READY, so that helpers started together race to create it.
func helperAppender(path, name string) error {
	s, err := Open(path)
	if err != nil {
		return err
	}
	defer s.Close()
	s.Now = func() time.Time { return time.UnixMilli(helperFrozen) }
	if err := awaitGo(); err != nil {
		return err
	}
	var lines []string // in commit order: afterAppend runs holding the writer slot
	s.afterAppend = func(key claude.SessionKey, mtime int64) {
		lines = append(lines, fmt.Sprintf("MTIME %s %s %d", name, key.SessionID, mtime))
	}
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for _, sid := range []string{"shared", "own-" + name} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := claude.SessionKey{ProjectKey: "-two-procs", SessionID: sid}
			for i, b := 0, 0; i < helperEntries; b++ {
				var batch []json.RawMessage
				for j := 0; j < 1+b%9 && i < helperEntries; j++ {
					batch = append(batch, json.RawMessage(fmt.Sprintf(`{"type":"user","uuid":"%s-%s-%d","proc":%q,"i":%d}`, name, sid, i, name, i)))
					i++
				}
				if err := s.Append(context.Background(), key, batch); err != nil {
					errs <- err
					return
				}
				// A pause, as between mirror flushes, gives the other
				// process's busy wait a chance to win the lock.
				time.Sleep(time.Duration(b%4) * time.Millisecond)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		return err
	}
	fmt.Println(strings.Join(lines, "\n"))
	return nil
}

// Two processes created the database at once, and one of them failed in
// milliseconds, about one run in thirteen: a journal_mode(WAL) pragma on
// every new connection upgraded a read lock to a write lock on the fresh
// file, and SQLite answers that with BUSY at once instead of waiting.
// Released together, 200 pairs of processes must all open the new file.
func TestSQLiteTwoProcessesCreateTheDatabaseAtOnce(t *testing.T) {
	const pairs = 200
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	var failures []string
	for i := range pairs {
		dir := filepath.Join(t.TempDir(), "run") // MkdirAll races too
		path := filepath.Join(dir, "sessions.db")
		hs, err := startHelpers(t, ctx, modeOpen, path, "A", "B")
		if err != nil {
			t.Fatal(err)
		}
		release(t, hs)
		for _, h := range hs {
			if _, err := h.finish(); err != nil {
				failures = append(failures, fmt.Sprintf("pair %d: %v", i, err))
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("out of time after %d pairs: %v", i, ctx.Err())
		}
	}
	t.Logf("%d pairs in %v", pairs, time.Since(start).Round(time.Millisecond))
	if len(failures) > 0 {
		t.Fatalf("%d of %d processes failed to open a new database; the first:\n%s", len(failures), 2*pairs, strings.Join(failures[:min(len(failures), 5)], "\n"))
	}
}

func TestSQLiteTwoProcessesLoseNothing(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	path := filepath.Join(t.TempDir(), "sessions.db") // both helpers create it at once
	procs := []string{"A", "B"}
	hs, err := startHelpers(t, ctx, modeAppend, path, procs...)
	if err != nil {
		t.Fatal(err)
	}
	release(t, hs)
	outs := make([]string, len(hs))
	for i, h := range hs {
		out, err := h.finish()
		if err != nil {
			t.Fatal(err)
		}
		outs[i] = out
	}

	// Every append got its own tick of one clock, in commit order within
	// each process; with frozen clocks the ticks are exactly frozen,
	// frozen+1, … — the clock read the database inside each transaction.
	var all []int64
	for i, name := range procs {
		var last int64
		sc := bufio.NewScanner(strings.NewReader(outs[i]))
		n := 0
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) != 4 || f[0] != "MTIME" {
				continue
			}
			m, err := strconv.ParseInt(f[3], 10, 64)
			if err != nil || f[1] != name {
				t.Fatalf("helper %s printed %q", name, sc.Text())
			}
			if m <= last {
				t.Fatalf("helper %s: mtime %d after %d", name, m, last)
			}
			last = m
			all = append(all, m)
			n++
		}
		if n == 0 {
			t.Fatalf("helper %s printed no mtimes:\n%s", name, outs[i])
		}
	}
	slices.Sort(all)
	for i, m := range all {
		if m != helperFrozen+int64(i) {
			t.Fatalf("mtimes are not one strictly increasing clock: tick %d is %d, want %d", i, m, helperFrozen+int64(i))
		}
	}

	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	check := func(sid string, procs ...string) {
		t.Helper()
		got, err := s.Load(t.Context(), claude.SessionKey{ProjectKey: "-two-procs", SessionID: sid})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != helperEntries*len(procs) {
			t.Fatalf("%s holds %d entries, want %d", sid, len(got), helperEntries*len(procs))
		}
		next := map[string]int{}
		switches, prev := 0, ""
		defer func() { t.Logf("%s: the writer changed %d times along the transcript", sid, switches) }()
		for _, raw := range got {
			var e struct {
				Proc string `json:"proc"`
				I    int    `json:"i"`
			}
			if err := json.Unmarshal(raw, &e); err != nil {
				t.Fatal(err)
			}
			if e.I != next[e.Proc] {
				t.Fatalf("%s: process %s's entry %d where %d was due", sid, e.Proc, e.I, next[e.Proc])
			}
			next[e.Proc]++
			if prev != "" && e.Proc != prev {
				switches++
			}
			prev = e.Proc
		}
	}
	check("shared", procs...)
	for _, name := range procs {
		check("own-"+name, name)
	}
	infos, err := s.ListSessions(t.Context(), "-two-procs")
	if err != nil || len(infos) != 3 {
		t.Fatalf("ListSessions = %+v, %v", infos, err)
	}
	if infos[0].Mtime != all[len(all)-1] {
		t.Fatalf("the newest session's mtime %d is not the last tick %d", infos[0].Mtime, all[len(all)-1])
	}
}

// A helper that dies before it is ready fails the test at once (the
// two-process test used to poll 60 s for a ready file that never came).
func TestStartHelpersReturnsAtOnceWhenAHelperDies(t *testing.T) {
	// A directory where the database should be: Open fails before READY.
	path := filepath.Join(t.TempDir(), "sessions.db")
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	start := time.Now()
	_, err := startHelpers(t, ctx, modeAppend, path, "A", "B")
	if err == nil {
		t.Fatal("startHelpers returned no error although its helpers cannot open the database")
	}
	if ctx.Err() != nil {
		t.Fatalf("startHelpers waited until its bound (%v) for a dead helper: %v", time.Since(start), err)
	}
	if !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("the error does not carry the helper's own: %v", err)
	}
	t.Logf("returned after %v: %v", time.Since(start).Round(time.Millisecond), err)
}
