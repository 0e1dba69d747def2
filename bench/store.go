package main

// The store benchmark: what the SQLite session store costs a run, against
// the JSONL file the CLI would read without it.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/internal/transcripttest"
	"github.com/flowerrun/flower/store"
	"github.com/flowerrun/flower/store/sqlite"
)

func init() {
	register(benchmark{
		name:  "store",
		about: "session store: appends/s, Load+expire+trim+prune vs reading the JSONL, resume preparation (BENCH_ENTRIES, BENCH_REPS)",
		run: func(ctx context.Context) error {
			entries, err := envCount("BENCH_ENTRIES", 10_000)
			if err != nil {
				return err
			}
			reps, err := envCount("BENCH_REPS", 7)
			if err != nil {
				return err
			}
			return runStore(ctx, storeConfig{out: os.Stdout, entries: entries, reps: reps})
		},
	})
}

// storeConfig is one store benchmark run.
type storeConfig struct {
	out     io.Writer
	entries int // the session's length
	reps    int
}

// storeFigures are one repetition's measurements.
type storeFigures struct {
	single, batched time.Duration // appending storeSingle entries one at a time; the session in batches
	jsonl, load     time.Duration // decoding the JSONL file; the pruning store's Load
	sqlite          time.Duration // the SQLite rows alone, before the load-time layers
	resume, connect time.Duration // a store-backed Connect; the same Connect without a resume
}

// storeSingle is how many entries are appended one at a time: the
// mirror's eager mode, one transaction each, far slower than a batch.
const storeSingle = 1000

// storeBatch is the batch size of the batched appends.
const storeBatch = 100

func runStore(ctx context.Context, cfg storeConfig) error {
	out := cfg.out
	dir, err := os.MkdirTemp("", "flower-bench-store-")
	if err != nil {
		return fmt.Errorf("a folder for the store: %w", err)
	}
	defer os.RemoveAll(dir)
	entries := transcripttest.Generate(cfg.entries, 7)
	var size int
	for _, e := range entries {
		size += len(e) + 1
	}
	db, err := sqlite.Open(filepath.Join(dir, "sessions.db"))
	if err != nil {
		return err
	}
	defer db.Close()
	ws := filepath.Join(dir, "ws")
	if err := os.MkdirAll(ws, 0o700); err != nil {
		return err
	}
	key := claude.SessionKey{ProjectKey: claude.ProjectKey(ws), SessionID: transcripttest.SessionID(7)}
	for i := 0; i < len(entries); i += 500 {
		if err := db.Append(ctx, key, entries[i:min(i+500, len(entries))]); err != nil {
			return fmt.Errorf("fill the store: %w", err)
		}
	}
	jsonl := filepath.Join(dir, key.SessionID+".jsonl")
	var buf bytes.Buffer
	for _, e := range entries {
		buf.Write(e)
		buf.WriteByte('\n')
	}
	if err := os.WriteFile(jsonl, buf.Bytes(), 0o600); err != nil {
		return err
	}
	pruning, err := store.NewPruning(db, ws, store.TrimPolicy{}, store.PrunePolicy{}, store.EphemeralPolicy{})
	if err != nil {
		return err
	}
	// The first load writes the trimmed results' files; the resumes after
	// it find them there, as every resume but a session's first does.
	first, err := pruning.Load(ctx, key)
	if err != nil {
		return fmt.Errorf("the first load: %w", err)
	}
	rep := pruning.LastReport()
	fmt.Fprintf(out, "a %d-entry session (%.1f MB of JSONL), %d repetitions, interleaved; the load keeps %d entries, trims %d results\n",
		len(entries), float64(size)/1e6, cfg.reps, len(first), rep.Cleared)
	fakeCLI, err := storeFakeCLI(dir)
	if err != nil {
		return err
	}

	steps := []struct {
		name string
		run  func(rep int, f *storeFigures) error
	}{
		{"jsonl", func(_ int, f *storeFigures) error {
			start := time.Now()
			n, err := storeReadJSONL(jsonl)
			f.jsonl = time.Since(start)
			if err == nil && n != len(entries) {
				err = fmt.Errorf("the JSONL file gave %d entries, want %d", n, len(entries))
			}
			return err
		}},
		{"sqlite", func(_ int, f *storeFigures) error {
			start := time.Now()
			got, err := db.Load(ctx, key)
			f.sqlite = time.Since(start)
			if err == nil && len(got) != len(entries) {
				err = fmt.Errorf("the store gave %d entries, want %d", len(got), len(entries))
			}
			return err
		}},
		{"load", func(_ int, f *storeFigures) error {
			start := time.Now()
			got, err := pruning.Load(ctx, key)
			f.load = time.Since(start)
			if err == nil && len(got) != len(first) {
				err = fmt.Errorf("a resume load gave %d entries, the first %d", len(got), len(first))
			}
			return err
		}},
		{"append", func(r int, f *storeFigures) error {
			var err error
			f.single, f.batched, err = storeAppends(ctx, db, entries, r)
			return err
		}},
		{"resume", func(_ int, f *storeFigures) error {
			var err error
			f.resume, f.connect, err = storeResume(ctx, pruning, fakeCLI, ws, filepath.Join(dir, "home"), key.SessionID)
			return err
		}},
	}
	var figs []storeFigures
	for r := range cfg.reps {
		var f storeFigures
		for _, s := range drvRotate(steps, r) {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := s.run(r, &f); err != nil {
				return fmt.Errorf("%s, repetition %d: %w", s.name, r+1, err)
			}
		}
		figs = append(figs, f)
	}
	storeReport(out, figs, len(entries), len(first))
	return nil
}

// storeAppends appends storeSingle entries one at a time and all of
// entries in batches, each to a session of its own.
func storeAppends(ctx context.Context, db *sqlite.Store, entries []json.RawMessage, rep int) (single, batched time.Duration, err error) {
	one := claude.SessionKey{ProjectKey: "-bench-append", SessionID: fmt.Sprintf("single-%d", rep)}
	n := min(storeSingle, len(entries))
	start := time.Now()
	for _, e := range entries[:n] {
		if err := db.Append(ctx, one, []json.RawMessage{e}); err != nil {
			return 0, 0, err
		}
	}
	single = time.Since(start) * time.Duration(storeSingle) / time.Duration(n)
	many := claude.SessionKey{ProjectKey: "-bench-append", SessionID: fmt.Sprintf("batched-%d", rep)}
	start = time.Now()
	for i := 0; i < len(entries); i += storeBatch {
		if err := db.Append(ctx, many, entries[i:min(i+storeBatch, len(entries))]); err != nil {
			return 0, 0, err
		}
	}
	return single, time.Since(start), nil
}

// storeReadJSONL reads a transcript file and decodes every line, as a
// resume from the CLI's own file must.
func storeReadJSONL(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	n := 0
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			return n, fmt.Errorf("line %d: %w", n+1, err)
		}
		n++
	}
	return n, sc.Err()
}

// storeFakeCLI writes a "claude" that exits at once: Connect then does all
// of a resume's preparation (the store's Load, the temporary config
// directory, the spawn) and fails at initialize, so the preparation is
// timed without a CLI's own start-up.
func storeFakeCLI(dir string) (string, error) {
	p := filepath.Join(dir, "claude")
	if err := os.WriteFile(p, []byte("#!/bin/sh\nexit 3\n"), 0o755); err != nil {
		return "", fmt.Errorf("a stand-in CLI: %w", err)
	}
	return p, nil
}

// storeResume times a store-backed Connect resuming sid and the same
// Connect without a resume; both end in the stand-in CLI's failure.
func storeResume(ctx context.Context, st claude.SessionStore, cli, cwd, home, sid string) (resume, connect time.Duration, err error) {
	o := claude.Options{CLIPath: cli, Cwd: cwd, SkipVersionCheck: true, BaseEnv: []string{"PATH=" + os.Getenv("PATH")},
		Env: map[string]string{"HOME": home, "CLAUDE_CONFIG_DIR": filepath.Join(home, ".claude")}}
	try := func(o claude.Options) (time.Duration, error) {
		start := time.Now()
		c, err := claude.Connect(ctx, o)
		d := time.Since(start)
		if err == nil {
			c.Close()
			return 0, errors.New("the stand-in CLI was connected to")
		}
		var ce *claude.ConnectionError
		var pe *claude.ProcessError
		if !errors.As(err, &ce) && !errors.As(err, &pe) {
			return 0, fmt.Errorf("want the stand-in CLI's failure, got: %w", err)
		}
		return d, nil
	}
	if connect, err = try(o); err != nil {
		return 0, 0, err
	}
	o.SessionStore, o.Resume = st, sid
	resume, err = try(o)
	return resume, connect, err
}

func storeReport(out io.Writer, figs []storeFigures, entries, kept int) {
	pick := func(get func(storeFigures) time.Duration) drvSpread {
		var ds []time.Duration
		for _, f := range figs {
			ds = append(ds, get(f))
		}
		return drvSpreadOf(ds)
	}
	rate := func(n int, d time.Duration) string {
		if d <= 0 {
			return "-"
		}
		return fmt.Sprintf("%.0f", float64(n)/d.Seconds())
	}
	perSec := func(n int, s drvSpread) string {
		// The fastest time is the highest rate.
		return fmt.Sprintf("%s/s [%s … %s]", rate(n, s.med), rate(n, s.max), rate(n, s.min))
	}
	single := pick(func(f storeFigures) time.Duration { return f.single })
	batched := pick(func(f storeFigures) time.Duration { return f.batched })
	jsonl := pick(func(f storeFigures) time.Duration { return f.jsonl })
	sqlite := pick(func(f storeFigures) time.Duration { return f.sqlite })
	load := pick(func(f storeFigures) time.Duration { return f.load })
	resume := pick(func(f storeFigures) time.Duration { return f.resume })
	connect := pick(func(f storeFigures) time.Duration { return f.connect })
	prep := pick(func(f storeFigures) time.Duration { return f.resume - f.connect })
	ratio := func(a, b drvSpread) string {
		if b.med == 0 {
			return "-"
		}
		return fmt.Sprintf("%.2f×", float64(a.med)/float64(b.med))
	}
	fmt.Fprint(out, drvTable([][]string{
		{"figure", "median [min … max]", "÷jsonl read"},
		{"append, one entry a transaction", perSec(storeSingle, single), "-"},
		{fmt.Sprintf("append, batches of %d", storeBatch), perSec(entries, batched), "-"},
		{"read + decode the JSONL file", jsonl.String(), "1.00×"},
		{"store Load, SQLite rows only", sqlite.String(), ratio(sqlite, jsonl)},
		{"store Load + expire + trim + prune", load.String(), ratio(load, jsonl)},
		{"Connect resuming from the store", resume.String(), ratio(resume, jsonl)},
		{"  of it: resume preparation", prep.String(), ratio(prep, jsonl)},
		{"Connect without resume", connect.String(), "-"},
	}))
	fmt.Fprintf(out, "  the load returns %d of %d entries; resume preparation = store-backed Connect − plain Connect, to a stand-in CLI that exits at once\n", kept, entries)
	verdict := func(ok bool) string {
		if ok {
			return "met"
		}
		return "missed"
	}
	r := float64(load.med) / float64(jsonl.med)
	fmt.Fprintf(out, "goal (load+trim ≤ 1.5× the JSONL read): %.2f×: %s\n", r, verdict(r <= 1.5))
	b := float64(entries) / batched.med.Seconds()
	fmt.Fprintf(out, "goal (≥ 20,000 appends/s batched): %.0f/s: %s\n", b, verdict(b >= 20_000))
}
