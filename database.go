package flower

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/human"
	"github.com/flowerrun/flower/runstate"
	"github.com/flowerrun/flower/runstate/pgrun"
	"github.com/flowerrun/flower/store"
	"github.com/flowerrun/flower/store/postgres"
	"github.com/flowerrun/flower/workbench"
)

// DatabaseEnv names the variable that gives the command a database.
const DatabaseEnv = "FLOWER_DATABASE_URL"

// RunNameEnv names the variable that names the run in the database, when
// the default (see RunName) is not wanted.
const RunNameEnv = "FLOWER_RUN"

// LeaseEnv names the variable that sets DatabaseOptions.Lease for the
// command (a Go duration: 30s, 2m).
const LeaseEnv = "FLOWER_DATABASE_LEASE"

// LeashFDEnv and LeashEnv tie a team run's process to its worker: the
// file descriptor of a pipe the worker writes to each time it confirmed
// the run's job attempt, and how long (a Go duration) the process works
// on without a byte before it stops itself. flower's go command reads
// them (app); a team's worker sets them.
const (
	LeashFDEnv = "FLOWER_LEASH_FD"
	LeashEnv   = "FLOWER_LEASH"
)

// APISocketEnv names the unix socket of a team worker's API proxy. A
// confined run has a network of its own with nothing in it; its flower
// listens on ANTHROPIC_BASE_URL's address inside that network and
// forwards each connection to this socket, the run's only way out.
const APISocketEnv = "FLOWER_API_SOCKET"

// NetSocketEnv names the unix socket of a team run's way out to the hosts
// its submission lists (flower submit --net): the run's flower serves
// NetProxyAddr inside the run's own network, which HTTP_PROXY and
// HTTPS_PROXY name, and forwards each connection to this socket, where
// the worker lets through what the list allows.
const NetSocketEnv = "FLOWER_NET_SOCKET"

// NetProxyAddr is the address of a team run's way out (NetSocketEnv) in
// the run's own network, where nothing else listens.
const NetProxyAddr = "127.0.0.1:3128"

// CLIApartEnv names the bubblewrap a confined team run starts each of its
// CLIs through (CLIApart); a team's worker sets it.
const CLIApartEnv = "FLOWER_CLI_APART"

// CLIApart is the launcher (claude.Options.Launcher) that starts a CLI
// through bubblewrap in a PID namespace of its own, with a /proc of its
// own: the CLI and the tools it runs see, trace and signal only one
// another, and the run's flower, which decides the judge, the
// measurement and the budget, is not among them. Files, network and
// user stay the run's; bubblewrap's own first process reaps the tools'
// orphans and ignores their signals.
func CLIApart(bwrap string) []string {
	return []string{bwrap, "--dev-bind", "/", "/", "--proc", "/proc", "--unshare-pid", "--die-with-parent", "--"}
}

// ReplyKeyFDEnv names the file descriptor a team worker gives a run's
// process its reply key on (a pipe holding the key, read once at start):
// the run's front end takes only the reply files signed with it
// (human.ServeSignedFiles), since the run's own processes can write that
// folder. Not an environment value: those the run's tools can read.
const ReplyKeyFDEnv = "FLOWER_REPLY_KEY_FD"

// DatabaseWait bounds how long a run waits for its database to come back
// (a restart, a network blip) before it stops, resumable.
const DatabaseWait = 2 * time.Minute

// openWait bounds OpenDatabase: connecting, migrating, taking the run and
// laying its files out.
const openWait = 2 * time.Minute

// ErrDatabase is wrapped by every error of a run's database: unreachable,
// refused, of another schema.
var ErrDatabase = errors.New("flower: the database")

// Database is a run's whole state in PostgreSQL, so that any machine of a
// team can continue the run: the transcripts (the session store) and the
// run's files (lineage, manifest, events, the human's side, the
// workbench's documents and spills, the outputs the CLI kept whole), which
// stay the working copy on each machine and are written back as they
// change. The process that opens it holds the run until Close; another
// process opening the same run is told where it is busy.
type Database struct {
	url  string // redacted
	wait time.Duration
	// onWait is told when a call starts waiting for the database: the
	// running step's retry event (see Runtime.Run).
	onWait   atomic.Pointer[func(string)]
	name     string
	sessions *postgres.Store
	pool     *pgxpool.Pool
	mirror   *runstate.Mirror
}

// DatabaseOptions say which run a Database holds and where its files are
// on this machine.
type DatabaseOptions struct {
	// Workspace and RunDir as for the Runtime and the starter flow
	// (default "." and DefaultRunDir(Workspace)); Isolate as for
	// StarterOptions (where the workbench is).
	Workspace, RunDir string
	Isolate           bool
	// Run names the run in the database; default RunName(Workspace, RunDir).
	Run string
	// ConfigDir is the CLI's configuration folder the sessions use
	// (default $CLAUDE_CONFIG_DIR, else ~/.claude): where it keeps whole
	// outputs for the model to read back.
	ConfigDir string
	// Lease is how long the run stays held without a heartbeat: how soon
	// another machine may take over after this process dies (default
	// runstate.DefaultTTL).
	Lease time.Duration
	// Wait bounds how long a step's end waits for a database that does
	// not answer before the run stops, resumable (default DatabaseWait).
	Wait time.Duration
	// HumanDir is where the run's human side is on this machine (default
	// human.Dir(RunDir)): a team's worker, which keeps the run's state for
	// a process started with its own $FLOWER_STATE_DIR, names it.
	HumanDir string
	// Authority, when set, is what says this process holds the run (a
	// team's job attempt): the run is taken whenever it says so, and
	// every write of the run's files checks it (see pgrun.Backend.Under).
	Authority pgrun.Authority
}

// OpenDatabase connects to the PostgreSQL database at url, brings its
// tables up to this flower's version, takes the run for this process and
// lays out on this machine what the database holds of it. Errors name the
// URL with its password masked.
func OpenDatabase(ctx context.Context, url string, o DatabaseOptions) (*Database, error) {
	shown := postgres.Redact(url)
	ws, err := filepath.Abs(cmp.Or(o.Workspace, "."))
	if err != nil {
		return nil, err
	}
	runDir := o.RunDir
	if runDir == "" {
		runDir = DefaultRunDir(ws)
	}
	if runDir, err = filepath.Abs(runDir); err != nil {
		return nil, err
	}
	name := o.Run
	if name == "" {
		if name, err = RunName(ctx, ws, runDir); err != nil {
			return nil, err
		}
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("%w URL %s does not parse (want postgres://user:password@host:port/database): %v", ErrDatabase, shown, postgres.Scrub(err, url))
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		// A host that drops packets fails in seconds, not minutes.
		cfg.ConnConfig.ConnectTimeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, openWait)
	defer cancel()
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("%w at %s: %v", ErrDatabase, shown, postgres.Scrub(err, url))
	}
	fail := func(err error) (*Database, error) {
		pool.Close()
		return nil, fmt.Errorf("%w at %s: %w", ErrDatabase, shown, postgres.Scrub(err, url))
	}
	pctx, pcancel := context.WithTimeout(ctx, 30*time.Second)
	err = pool.Ping(pctx)
	pcancel()
	if err != nil {
		return fail(err)
	}
	backend, err := pgrun.New(ctx, pool)
	if err != nil {
		return fail(err)
	}
	if o.Authority != nil {
		backend = backend.Under(o.Authority)
	}
	sessions, err := postgres.Open(ctx, url)
	if err != nil {
		pool.Close()
		return nil, err // it names the URL, masked, itself
	}
	configDir := o.ConfigDir
	if configDir == "" {
		configDir = cliConfigDir()
	}
	places := runstate.Places{
		runstate.RunDir:    runDir,
		runstate.Human:     cmp.Or(o.HumanDir, human.Dir(runDir)),
		runstate.Workbench: workbench.Location(ws, o.Isolate),
	}
	if configDir != "" {
		places[runstate.CLIFiles] = filepath.Join(configDir, "projects", claude.ProjectKey(ws))
	}
	wait := cmp.Or(o.Wait, DatabaseWait)
	// The last write-back is a step's end too: it waits for the database
	// as one does, up to the mirror's own bound.
	mirror, err := runstate.Open(ctx, backend, name, places, runstate.Options{TTL: o.Lease, CloseWait: min(runstate.DefaultCloseWait, wait)})
	if err != nil {
		sessions.Close()
		pool.Close()
		var busy *runstate.BusyError
		if errors.As(err, &busy) {
			return nil, err
		}
		return nil, fmt.Errorf("%w at %s: %w", ErrDatabase, shown, postgres.Scrub(err, url))
	}
	if err := adoptLineage(runDir, ws); err != nil {
		slog.Warn("flower: the lineage names another workspace and was not changed", "err", err)
	}
	return &Database{url: shown, wait: wait, name: name, sessions: sessions, pool: pool, mirror: mirror}, nil
}

// Name is the run's name in the database.
func (d *Database) Name() string { return d.name }

// URL is the database's URL with its password masked.
func (d *Database) URL() string { return d.url }

// Sessions is the session store the run's Runtime uses, before its layers:
// every checkout's sessions filed under the run.
func (d *Database) Sessions() claude.SessionStore {
	return patientStore{OneProject: store.OneProject{Base: d.sessions, Project: "run:" + d.name, Guard: func() error {
		if err := d.mirror.Check(); err != nil {
			return fmt.Errorf("flower: transcript not stored: %w", err)
		}
		return nil
	}}, d: d}
}

// patientStore waits out a database that cannot be reached (a restart, a
// network blip) in Append and Load, up to the Database's wait or the
// caller's deadline, instead of failing the first time.
type patientStore struct {
	store.OneProject
	d *Database
}

func (s patientStore) Append(ctx context.Context, key claude.SessionKey, entries []json.RawMessage) error {
	return s.d.patient(ctx, func(ctx context.Context) error { return s.OneProject.Append(ctx, key, entries) })
}

func (s patientStore) Load(ctx context.Context, key claude.SessionKey) (out []json.RawMessage, err error) {
	err = s.d.patient(ctx, func(ctx context.Context) error {
		out, err = s.OneProject.Load(ctx, key)
		return err
	})
	return out, err
}

// patient runs try until it succeeds, fails for another reason than an
// unreachable database, or the wait is over.
func (d *Database) patient(ctx context.Context, try func(context.Context) error) error {
	deadline := time.Now().Add(d.wait)
	told := false
	for {
		err := try(ctx)
		if err == nil || !unreachable(err) || time.Now().After(deadline) {
			if err == nil && told {
				slog.Info("flower: the database answers again", "url", d.url)
			}
			return err
		}
		if !told {
			why := fmt.Sprintf("waiting for the database at %s (up to %s): %v", d.url, d.wait, err)
			if f := d.onWait.Load(); f != nil {
				(*f)(why)
			} else {
				slog.Warn("flower: " + why)
			}
			told = true
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Second):
		}
	}
}

// unreachable says err is the database being away (connection refused or
// cut, the server shutting down or starting), not a refusal of what was
// asked.
func unreachable(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		// 08: connection exception; 57P01-57P03: shutdown, crash,
		// cannot connect now (starting up).
		return strings.HasPrefix(pgErr.Code, "08") || strings.HasPrefix(pgErr.Code, "57P")
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	return errors.As(err, &ce) || errors.As(err, &ne) || pgconn.SafeToRetry(err) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ENOENT)
}

// watch is ctx, cancelled when another process takes the run over.
func (d *Database) watch(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	go func() {
		select {
		case <-d.Lost():
			cancel(runstate.ErrLeaseLost)
		case <-ctx.Done():
		}
	}()
	return ctx, func() { cancel(nil) }
}

// Valid reports whether this process still holds the run: false once
// another took it over, or while the lease could not be confirmed (this
// process was paused, or the database is unreachable). Nothing may be
// written then.
func (d *Database) Valid() bool { return d.mirror.Valid() }

// Lost is closed when another process took the run over.
func (d *Database) Lost() <-chan struct{} { return d.mirror.Lost() }

// Sync writes back the run's files that changed, waiting up to
// DatabaseOptions.Wait for a database that does not answer; wait is told
// once when it starts waiting. It fails with runstate.ErrLeaseLost after a
// takeover.
func (d *Database) Sync(ctx context.Context, wait func(string)) error {
	deadline := time.Now().Add(d.wait)
	told := false
	for {
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := d.mirror.Sync(sctx)
		cancel()
		if err == nil || errors.Is(err, runstate.ErrLeaseLost) || ctx.Err() != nil {
			return err
		}
		if !unreachable(err) && d.mirror.Valid() {
			return fmt.Errorf("%w at %s: the run's files were not written: %w", ErrDatabase, d.url, err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w at %s did not answer for %s (%v); the run stopped and continues when it is back", ErrDatabase, d.url, d.wait, err)
		}
		if !told && wait != nil {
			wait(fmt.Sprintf("waiting for the database at %s (up to %s): %v", d.url, d.wait, err))
			told = true
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
}

// Close writes the run's files back, releases the run and disconnects,
// within a minute. The write-back is retried for up to 30 seconds (less
// with a shorter DatabaseOptions.Wait); when it still fails, Close fails
// with a *runstate.NotWrittenError that names the files: they stay on this
// machine, and are written back when the run is opened here again, in the
// same folders. The caller must not call such a run a success.
func (d *Database) Close(ctx context.Context) error {
	err := d.release(ctx, d.mirror.Close)
	if err != nil && !errors.Is(err, runstate.ErrLeaseLost) {
		return fmt.Errorf("%w at %s: %w", ErrDatabase, d.url, err)
	}
	return err
}

// Abandon releases the run and disconnects without writing back what
// changed since the last Sync (a team's worker whose job attempt was
// taken over must write nothing more); what changed stays on this
// machine.
func (d *Database) Abandon(ctx context.Context) error { return d.release(ctx, d.mirror.Abandon) }

// release ends the mirror with end, within a minute, and disconnects.
func (d *Database) release(ctx context.Context, end func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	err := end(ctx)
	d.sessions.Close()
	d.pool.Close()
	return err
}

// RunName is the default name of a run in a database: the same on every
// clone of a repository, so that another machine finds the run from its
// own checkout. It is "git:<the repository's first commit>" and the paths
// of the workspace in the repository and of the run directory in the
// workspace. Outside a git repository there is nothing every machine
// shares: name the run ($FLOWER_RUN, DatabaseOptions.Run).
func RunName(ctx context.Context, workspace, runDir string) (string, error) {
	if v := strings.TrimSpace(os.Getenv(RunNameEnv)); v != "" {
		return v, nil
	}
	git := func(args ...string) (string, error) {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		out, err := exec.CommandContext(cctx, "git", append([]string{"-C", workspace}, args...)...).Output()
		return strings.TrimSpace(string(out)), err
	}
	roots, err := git("rev-list", "--max-parents=0", "HEAD")
	if err != nil || roots == "" {
		return "", fmt.Errorf("flower: a run in a database needs a name every machine can derive, and %s is not a git repository with a commit: set %s=<name>", workspace, RunNameEnv)
	}
	top, err := git("rev-parse", "--show-toplevel")
	if err != nil {
		return "", fmt.Errorf("flower: %s: %w", workspace, err)
	}
	first := strings.Fields(roots)
	inRepo, err := filepath.Rel(top, workspace)
	if err != nil || strings.HasPrefix(inRepo, "..") {
		inRepo = "."
	}
	runRel, err := filepath.Rel(workspace, runDir)
	if err != nil || strings.HasPrefix(runRel, "..") {
		runRel = runDir // outside the workspace: only this machine's path says which
	}
	return "git:" + first[len(first)-1] + ":" + filepath.ToSlash(inRepo) + ":" + filepath.ToSlash(runRel), nil
}

// cliConfigDir is where the CLI keeps its files: $CLAUDE_CONFIG_DIR, else
// ~/.claude.
func cliConfigDir() string {
	if d := os.Getenv("CLAUDE_CONFIG_DIR"); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil {
		slog.Warn("flower: no home directory: the CLI's kept outputs are not kept with the run", "err", err)
		return ""
	}
	return filepath.Join(home, ".claude")
}

// withoutDatabase is environ without what reaches a database: its URL
// ($FLOWER_DATABASE_URL, $DATABASE_URL), libpq's settings (PGPASSWORD,
// PGPASSFILE, PGSERVICE...) and any variable holding a PostgreSQL URL
// with a password; and the OTLP exporter's settings (OTEL_EXPORTER_OTLP_*).
// The CLI and every tool it runs get it: what a run's
// Bash can read, it can use (DESIGN.md, "Who may write what").
func withoutDatabase(environ []string) []string {
	out := make([]string, 0, len(environ))
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		switch {
		case k == DatabaseEnv || k == LeaseEnv || k == "DATABASE_URL" || strings.HasPrefix(k, "PG"):
			continue
		case holdsDatabasePassword(v):
			continue
		case strings.HasPrefix(k, "OTEL_EXPORTER_OTLP_"):
			// flower's trace exporter's: its headers carry the
			// collector's token, its endpoint takes writes.
			continue
		}
		out = append(out, kv)
	}
	return out
}

// holdsDatabasePassword says v holds a postgres:// or postgresql:// URL
// with a password, or a libpq keyword string with one.
func holdsDatabasePassword(v string) bool {
	l := strings.ToLower(v)
	for _, scheme := range []string{"postgres://", "postgresql://"} {
		for i := strings.Index(l, scheme); i >= 0; {
			rest := l[i+len(scheme):]
			end := strings.IndexAny(rest, "/?# \t")
			if end < 0 {
				end = len(rest)
			}
			if at := strings.LastIndex(rest[:end], "@"); at >= 0 && strings.Contains(rest[:at], ":") {
				return true
			}
			next := strings.Index(rest, scheme)
			if next < 0 {
				break
			}
			i += len(scheme) + next
		}
	}
	return strings.Contains(l, "password=")
}
