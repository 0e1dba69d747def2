package main

// The store benchmark: what the session stores (SQLite, and PostgreSQL on a
// throwaway cluster started for the run) cost a run, side by side, against
// the JSONL file the CLI would read without them.

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
	"github.com/flowerrun/flower/internal/pgtest"
	"github.com/flowerrun/flower/internal/transcripttest"
	"github.com/flowerrun/flower/store"
	"github.com/flowerrun/flower/store/postgres"
	"github.com/flowerrun/flower/store/sqlite"
)

func init() {
	register(benchmark{
		name:  "store",
		about: "session stores, SQLite beside PostgreSQL: appends/s, Load+expire+trim+prune vs reading the JSONL, resume preparation (BENCH_ENTRIES, BENCH_REPS)",
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

// storeFigures are one repetition's measurements of one backend.
type storeFigures struct {
	single, batched time.Duration // appending storeSingle entries one at a time; the session in batches
	rows, load      time.Duration // the backend's rows alone; the pruning store's Load over them
}

// storeBackend is one session store measured: SQLite, or PostgreSQL on a
// throwaway cluster the benchmark starts.
type storeBackend struct {
	name    string
	db      claude.SessionStore
	pruning *store.Pruning
	figs    []storeFigures
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
	ws := filepath.Join(dir, "ws")
	if err := os.MkdirAll(ws, 0o700); err != nil {
		return err
	}
	key := claude.SessionKey{ProjectKey: claude.ProjectKey(ws), SessionID: transcripttest.SessionID(7)}

	lite, err := sqlite.Open(filepath.Join(dir, "sessions.db"))
	if err != nil {
		return err
	}
	defer lite.Close()
	backends := []*storeBackend{{name: "SQLite", db: lite}}
	pg, stopPG, err := storePostgres(ctx)
	if err != nil {
		return err
	}
	defer stopPG()
	if pg != nil {
		backends = append(backends, &storeBackend{name: "PostgreSQL", db: pg})
	} else {
		fmt.Fprintf(out, "PostgreSQL: no server binaries found, measured SQLite only (install them: %s)\n", pgtest.Install)
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
	var first []json.RawMessage
	var rep store.Report
	for _, b := range backends {
		for i := 0; i < len(entries); i += 500 {
			if err := b.db.Append(ctx, key, entries[i:min(i+500, len(entries))]); err != nil {
				return fmt.Errorf("fill the %s store: %w", b.name, err)
			}
		}
		// Each backend's layers spill into a workspace of their own.
		bws := filepath.Join(ws, b.name)
		if b.pruning, err = store.NewPruning(b.db, bws, store.TrimPolicy{}, store.PrunePolicy{}, store.EphemeralPolicy{}); err != nil {
			return err
		}
		// The first load writes the trimmed results' files; the resumes
		// after it find them there, as every resume but a session's first
		// does.
		got, err := b.pruning.Load(ctx, key)
		if err != nil {
			return fmt.Errorf("the first load from %s: %w", b.name, err)
		}
		if first != nil && len(got) != len(first) {
			return fmt.Errorf("the first load from %s kept %d entries, from %s %d", b.name, len(got), backends[0].name, len(first))
		}
		first, rep = got, b.pruning.LastReport()
	}
	fmt.Fprintf(out, "a %d-entry session (%.1f MB of JSONL), %d repetitions, interleaved; the load keeps %d entries, trims %d results\n",
		len(entries), float64(size)/1e6, cfg.reps, len(first), rep.Cleared)
	fakeCLI, err := storeFakeCLI(dir)
	if err != nil {
		return err
	}

	type step struct {
		name string
		run  func(rep int) error
	}
	var jsonlTimes, resumeTimes, connectTimes []time.Duration
	figs := make([]storeFigures, len(backends)) // the current repetition's
	steps := []step{
		{"jsonl", func(int) error {
			start := time.Now()
			n, err := storeReadJSONL(jsonl)
			jsonlTimes = append(jsonlTimes, time.Since(start))
			if err == nil && n != len(entries) {
				err = fmt.Errorf("the JSONL file gave %d entries, want %d", n, len(entries))
			}
			return err
		}},
		{"resume", func(int) error {
			resume, connect, err := storeResume(ctx, backends[0].pruning, fakeCLI, ws, filepath.Join(dir, "home"), key.SessionID)
			resumeTimes, connectTimes = append(resumeTimes, resume), append(connectTimes, connect)
			return err
		}},
	}
	for i, b := range backends {
		f := &figs[i]
		steps = append(steps,
			step{b.name + " rows", func(int) error {
				start := time.Now()
				got, err := b.db.Load(ctx, key)
				f.rows = time.Since(start)
				if err == nil && len(got) != len(entries) {
					err = fmt.Errorf("the store gave %d entries, want %d", len(got), len(entries))
				}
				return err
			}},
			step{b.name + " load", func(int) error {
				start := time.Now()
				got, err := b.pruning.Load(ctx, key)
				f.load = time.Since(start)
				if err == nil && len(got) != len(first) {
					err = fmt.Errorf("a resume load gave %d entries, the first %d", len(got), len(first))
				}
				return err
			}},
			step{b.name + " append", func(r int) error {
				var err error
				f.single, f.batched, err = storeAppends(ctx, b.db, entries, r)
				return err
			}})
	}
	for r := range cfg.reps {
		for _, s := range drvRotate(steps, r) {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := s.run(r); err != nil {
				return fmt.Errorf("%s, repetition %d: %w", s.name, r+1, err)
			}
		}
		for i, b := range backends {
			b.figs = append(b.figs, figs[i])
		}
	}
	storeReport(out, backends, jsonlTimes, resumeTimes, connectTimes, len(entries), len(first))
	return nil
}

// storePostgres starts a throwaway PostgreSQL cluster (as durable as a
// production server: fsync on) and opens the session store on a database
// of it; stop removes the cluster. Without the server binaries it returns a
// nil store and no error.
func storePostgres(ctx context.Context) (db *postgres.Store, stop func(), err error) {
	srv, err := pgtest.StartServer(ctx, pgtest.Options{Durable: true})
	if errors.Is(err, pgtest.ErrNoServer) {
		return nil, func() {}, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("start a PostgreSQL cluster: %w", err)
	}
	u, err := srv.CreateDatabase(ctx)
	if err != nil {
		srv.Remove()
		return nil, nil, err
	}
	db, err = postgres.Open(ctx, u)
	if err != nil {
		srv.Remove()
		return nil, nil, err
	}
	return db, func() { db.Close(); srv.Remove() }, nil
}

// storeAppends appends storeSingle entries one at a time and all of
// entries in batches, each to a session of its own.
func storeAppends(ctx context.Context, db claude.SessionStore, entries []json.RawMessage, rep int) (single, batched time.Duration, err error) {
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

func storeReport(out io.Writer, backends []*storeBackend, jsonlTimes, resumeTimes, connectTimes []time.Duration, entries, kept int) {
	pick := func(b *storeBackend, get func(storeFigures) time.Duration) drvSpread {
		var ds []time.Duration
		for _, f := range b.figs {
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
	ratio := func(a, b drvSpread) string {
		if b.med == 0 {
			return "-"
		}
		return fmt.Sprintf("%.2f×", float64(a.med)/float64(b.med))
	}
	jsonl := drvSpreadOf(jsonlTimes)
	resume := drvSpreadOf(resumeTimes)
	connect := drvSpreadOf(connectTimes)
	var prepTimes []time.Duration
	for i := range resumeTimes {
		prepTimes = append(prepTimes, resumeTimes[i]-connectTimes[i])
	}
	prep := drvSpreadOf(prepTimes)

	rows := [][]string{{"figure", "median [min … max]", "÷jsonl read"}}
	type measured struct{ single, batched, rows, load drvSpread }
	var ms []measured
	for _, b := range backends {
		m := measured{
			single:  pick(b, func(f storeFigures) time.Duration { return f.single }),
			batched: pick(b, func(f storeFigures) time.Duration { return f.batched }),
			rows:    pick(b, func(f storeFigures) time.Duration { return f.rows }),
			load:    pick(b, func(f storeFigures) time.Duration { return f.load }),
		}
		ms = append(ms, m)
		rows = append(rows,
			[]string{b.name + ": append, one entry a transaction", perSec(storeSingle, m.single), "-"},
			[]string{fmt.Sprintf("%s: append, batches of %d", b.name, storeBatch), perSec(entries, m.batched), "-"},
			[]string{b.name + ": store Load, rows only", m.rows.String(), ratio(m.rows, jsonl)},
			[]string{b.name + ": store Load + expire + trim + prune", m.load.String(), ratio(m.load, jsonl)})
	}
	rows = append(rows,
		[]string{"read + decode the JSONL file", jsonl.String(), "1.00×"},
		[]string{"Connect resuming from the SQLite store", resume.String(), ratio(resume, jsonl)},
		[]string{"  of it: resume preparation", prep.String(), ratio(prep, jsonl)},
		[]string{"Connect without resume", connect.String(), "-"})
	fmt.Fprint(out, drvTable(rows))
	fmt.Fprintf(out, "  the load returns %d of %d entries; resume preparation = store-backed Connect − plain Connect, to a stand-in CLI that exits at once\n", kept, entries)
	verdict := func(ok bool) string {
		if ok {
			return "met"
		}
		return "missed"
	}
	r := float64(ms[0].load.med) / float64(jsonl.med)
	fmt.Fprintf(out, "goal (SQLite load+trim ≤ 1.5× the JSONL read): %.2f×: %s\n", r, verdict(r <= 1.5))
	for i, b := range backends {
		rate := float64(entries) / ms[i].batched.med.Seconds()
		fmt.Fprintf(out, "goal (%s: ≥ 20,000 appends/s batched): %.0f/s: %s\n", b.name, rate, verdict(rate >= 20_000))
	}
	if len(backends) > 1 {
		r := float64(ms[1].load.med) / float64(ms[0].load.med)
		fmt.Fprintf(out, "goal (PostgreSQL load+trim ≤ 1.5× SQLite's): %.2f×: %s\n", r, verdict(r <= 1.5))
		r = float64(ms[1].rows.med) / float64(ms[0].rows.med)
		fmt.Fprintf(out, "  rows only: PostgreSQL %.2f× SQLite's\n", r)
	}
}
