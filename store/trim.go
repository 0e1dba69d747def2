package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/ephemeral"
	"github.com/flowerrun/flower/internal/atomicfile"
	"github.com/flowerrun/flower/internal/pointer"
	"github.com/flowerrun/flower/workbench"
)

// ProjectLister lists the project keys a store holds (sorted).
type ProjectLister interface {
	Projects(ctx context.Context) ([]string, error)
}

// SessionChecker tells whether a session's main transcript exists, without
// loading it.
type SessionChecker interface {
	HasSession(ctx context.Context, projectKey, sessionID string) (bool, error)
}

// LastContextReader reads the context size (input plus cache tokens) of a
// session's newest turn that reported usage; 0 when none did.
type LastContextReader interface {
	LastContext(ctx context.Context, projectKey, sessionID string) (int, error)
}

// Trimming decorates any claude.SessionStore so that a resumed session gets
// a lighter history: on Load, stale ephemeral results (git status, ls…) are
// marked expired, then bulky old tool results are spilled to files in the
// workspace and replaced by pointers. Append passes through, and the base
// store is never changed: every Load starts again from the stored rows.
//
// The optional capabilities of claude.SessionStore (and ProjectLister,
// SessionChecker, LastContextReader) are forwarded to the base; see each
// method for what happens when the base lacks one.
//
// A Trimming is safe for concurrent use; each Load computes its own Report
// and LastReport returns the one of the Load that finished last.
type Trimming struct {
	base      claude.SessionStore
	workspace string
	trim      TrimPolicy
	eph       EphemeralPolicy
	prune     *PrunePolicy // set only for a Pruning
	log       *slog.Logger // nil: slog.Default()

	mu   sync.Mutex
	last Report
}

var (
	_ claude.SessionStore         = (*Trimming)(nil)
	_ claude.SessionLister        = (*Trimming)(nil)
	_ claude.SessionSummaryLister = (*Trimming)(nil)
	_ claude.SessionDeleter       = (*Trimming)(nil)
	_ claude.SubkeyLister         = (*Trimming)(nil)
	_ ProjectLister               = (*Trimming)(nil)
	_ SessionChecker              = (*Trimming)(nil)
	_ LastContextReader           = (*Trimming)(nil)
)

// NewTrimming wraps base. workspace is the directory the spill files go
// under (made absolute); it is required unless trim is Disabled. Zero-valued
// policies are the defaults. It fails with a *PolicyError when base is nil,
// the workspace is missing, or SpillDirname is absolute or leaves the
// workspace.
func NewTrimming(base claude.SessionStore, workspace string, trim TrimPolicy, eph EphemeralPolicy) (*Trimming, error) {
	return newTrimming(base, workspace, trim, eph, nil)
}

func newTrimming(base claude.SessionStore, workspace string, trim TrimPolicy, eph EphemeralPolicy, prune *PrunePolicy) (*Trimming, error) {
	if base == nil {
		return nil, &PolicyError{Field: "base", Value: "<nil>", Reason: "a base SessionStore is required (for example the SQLite store)"}
	}
	trim = trim.withDefaults()
	if err := trim.validate(); err != nil {
		return nil, err
	}
	if workspace == "" && !trim.Disabled {
		return nil, &PolicyError{Field: "workspace", Value: "", Reason: "trimming spills into the workspace: give its directory, or set TrimPolicy.Disabled"}
	}
	if workspace != "" {
		abs, err := filepath.Abs(workspace)
		if err != nil {
			return nil, &PolicyError{Field: "workspace", Value: workspace, Reason: err.Error()}
		}
		workspace = abs
	}
	if prune != nil {
		p := prune.withDefaults()
		prune = &p
	}
	return &Trimming{base: base, workspace: workspace, trim: trim, eph: eph.withDefaults(), prune: prune}, nil
}

// Base returns the decorated store.
func (t *Trimming) Base() claude.SessionStore { return t.base }

// Workspace returns the absolute workspace directory ("" if none was given).
func (t *Trimming) Workspace() string { return t.workspace }

// TrimPolicy returns the trim policy in force, defaults filled in.
func (t *Trimming) TrimPolicy() TrimPolicy { return t.trim }

// EphemeralPolicy returns the expiry policy in force, defaults filled in.
func (t *Trimming) EphemeralPolicy() EphemeralPolicy { return t.eph }

// LastReport returns the counts of the last Load that finished (zero before
// any, and while a Load of this store runs after a finished one cleared it).
func (t *Trimming) LastReport() Report {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.last
}

// TrimReport is the Chinese summary of the last Load, like
// "裁掉 3 个工具结果(保留最近 20 个),省下 ~2100 tokens", or "未裁剪".
func (t *Trimming) TrimReport() string { return t.LastReport().Text("zh") }

// TrimReportIn is the summary of the last Load in lang ("en" or "zh").
func (t *Trimming) TrimReportIn(lang string) string { return t.LastReport().Text(lang) }

func (t *Trimming) logger() *slog.Logger {
	if t.log != nil {
		return t.log
	}
	return slog.Default()
}

func (t *Trimming) setLast(r Report) {
	t.mu.Lock()
	t.last = r
	t.mu.Unlock()
}

// Append stores entries unchanged in the base store.
func (t *Trimming) Append(ctx context.Context, key claude.SessionKey, entries []json.RawMessage) error {
	return t.base.Append(ctx, key, entries)
}

// IdempotentAppend is the base store's: Append passes through unchanged.
func (t *Trimming) IdempotentAppend() bool {
	is, ok := t.base.(claude.IdempotentStore)
	return ok && is.IdempotentAppend()
}

// Load returns the base store's entries for key, made lighter as the
// policies say; the rows in the base store are not changed and the returned
// entries are new JSON (untouched entries keep their original bytes). An
// entry that is not a JSON object is passed through as is (and logged). A
// base error is returned wrapped with the key.
func (t *Trimming) Load(ctx context.Context, key claude.SessionKey) ([]json.RawMessage, error) {
	t.setLast(Report{})
	rows, err := t.base.Load(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("store: load %s: %w", layerKeyLabel(key), err)
	}
	if rows == nil {
		return nil, nil
	}
	out, rep, err := t.lighten(ctx, key, rows)
	if err != nil {
		return nil, fmt.Errorf("store: load %s: %w", layerKeyLabel(key), err)
	}
	t.setLast(rep)
	return out, nil
}

// lighten runs the load-time layers over rows: expire, trim, prune.
func (t *Trimming) lighten(ctx context.Context, key claude.SessionKey, rows []json.RawMessage) ([]json.RawMessage, Report, error) {
	var rep Report
	es, bad := decodeTranscript(rows)
	if len(bad) > 0 {
		var first []int
		for i := range rows {
			if _, ok := bad[i]; ok && len(first) < 10 {
				first = append(first, i)
			}
		}
		t.logger().Warn("store: transcript entries that are not JSON objects were passed through untouched",
			"key", layerKeyLabel(key), "count", len(bad), "indexes", first, "error", bad[first[0]])
	}
	expired := map[string]bool{}
	if !t.eph.Disabled {
		t.expire(key, es, &rep, expired)
	}
	if !t.trim.Disabled {
		if err := t.trimSites(ctx, key, es, &rep, expired); err != nil {
			return nil, Report{}, err
		}
	}
	if t.prune != nil && !t.prune.Disabled {
		es = pruneTranscript(es, *t.prune, &rep)
	}
	out, err := encodeTranscript(es)
	if err != nil {
		return nil, Report{}, err
	}
	return out, rep, nil
}

// expire replaces old results of ephemeral Bash commands with the expiry
// text. An ephemeral site is the result of a Bash tool_use (found in an
// earlier assistant entry) whose command passes ephemeral.Is; permission
// denials and interrupted results carry no output and are not counted. The
// newest KeepRecent are exempt, longer than MaxChars are left to trimming,
// opaque ones (images, documents) are never touched. A result that is a
// pointer to a file (a spill, the CLI's persisted output) is expired
// whatever its size, and its expiry text still names the file.
//
// The age a note shows is the one of the Load that first expired its
// result, kept in the workspace (see expiryAge), so that a note stays the
// same bytes on every later Load and a resumed history is rewritten once:
// a note whose age grew with every newer glance would change the history
// far back, and the CLI's next request would write it all to the prompt
// cache again.
//
// The tool_use ids of the results it expired are added to expired.
func (t *Trimming) expire(key claude.SessionKey, es []*transcriptEntry, rep *Report, expired map[string]bool) {
	uses := findToolUses(es)
	type ephemeralSite struct {
		site
		cmd string
	}
	var sites []ephemeralSite
	for _, s := range findSites(es) {
		u, ok := uses[s.id]
		if !ok || u.entry >= s.entry || u.name != "Bash" {
			continue
		}
		cmd, _ := u.input["command"].(string)
		if !ephemeral.Is(cmd) || isInterrupted(s.block) || es[s.entry].str("toolDenialKind") != "" {
			continue
		}
		sites = append(sites, ephemeralSite{s, cmd})
	}
	keep := atLeastZero(t.eph.KeepRecent)
	maxChars := atLeastZero(t.eph.MaxChars)
	n := len(sites)
	for i, s := range sites {
		if i >= n-keep {
			break
		}
		if s.opaque {
			continue
		}
		// A result standing in for an output on disk is short whatever the
		// output's size, and the expiry must keep naming the file: the
		// output is history that the model may need again, not state.
		files := pointer.Files(s.text)
		if len(files) == 0 && s.chars() > maxChars {
			continue
		}
		text := expiryText(t.eph.Text, s.cmd, t.expiryAge(key, s.id, s.cmd, n-i))
		if len(files) > 0 {
			text += strings.ReplaceAll(t.eph.PointerText, "{path}", strings.Join(files, " "))
		}
		s.setContent(es, text)
		rep.Expired++
		expired[s.id] = true
	}
}

// expiryText fills {cmd} (the first line, at most 60 characters, in
// backticks) and {age} into the template.
func expiryText(template, cmd string, age int) string {
	line, _, _ := strings.Cut(strings.TrimSpace(cmd), "\n")
	line = strings.TrimSpace(line)
	if utf8.RuneCountInString(line) > 60 {
		line = string([]rune(line)[:60])
	}
	return strings.NewReplacer("{cmd}", "`"+line+"`", "{age}", strconv.Itoa(age)).Replace(template)
}

// expiryAge returns the age the expiry note of a result shows: the age
// recorded in the workspace when an earlier Load expired it, else now (the
// ephemeral sites from this one to the newest), which it records. The
// record is <SpillDirname>/expired/<16 hex of sha256 of tool_use id and
// command>, holding the age in decimal. It is keyed by the call rather than
// the session, so that a fork, which copies the calls, shows the same notes
// (and reads the cache the original wrote); the API's tool_use ids are
// unique, so two sessions in one workspace do not share a record.
// Without a workspace, or when the record cannot be read or written, the
// age is now's (and the failure to write is logged).
func (t *Trimming) expiryAge(key claude.SessionKey, toolUseID, cmd string, now int) int {
	if t.workspace == "" {
		return now
	}
	dir := filepath.Join(t.workspace, filepath.Clean(t.trim.SpillDirname))
	sum := sha256.Sum256([]byte(toolUseID + "\x00" + cmd))
	path := filepath.Join(dir, "expired", hex.EncodeToString(sum[:8]))
	if data, err := os.ReadFile(path); err == nil {
		if age, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil && age > 0 {
			return age
		}
	}
	err := os.MkdirAll(filepath.Dir(path), 0o700)
	if err == nil {
		err = workbench.KeepOutOfGit(dir)
	}
	if err == nil {
		err = atomicfile.WriteNoSync(path, []byte(strconv.Itoa(now)), 0o600)
	}
	if err != nil {
		t.logger().Warn("store: cannot record the age of an expired result; a later load may show another age",
			"key", layerKeyLabel(key), "path", path, "error", err)
	}
	return now
}

// trimSites spills every site of at least MinChars characters, except the
// newest KeepRecent sites, and points to the spill file instead. The file is
// written before the content changes; when it cannot be, the site stays
// whole. An older site that is the spill guard's pointer is shortened to
// the stub whatever its size (see shortenPointer); the results expiry
// replaced (expired, by tool_use id) stay as it left them.
func (t *Trimming) trimSites(ctx context.Context, key claude.SessionKey, es []*transcriptEntry, rep *Report, expired map[string]bool) error {
	sites := findSites(es)
	keep := min(atLeastZero(t.trim.KeepRecent), len(sites))
	rep.Kept = keep
	minChars := atLeastZero(t.trim.MinChars)
	for _, s := range sites[:len(sites)-keep] {
		if err := ctx.Err(); err != nil {
			return err
		}
		n := s.chars()
		if s.opaque || n == 0 || expired[s.id] {
			continue
		}
		// The CLI's <persisted-output> is a pointer already: archiving it
		// would hide the path it names one file further away.
		if pointer.Persisted(s.text) {
			continue
		}
		if n < minChars {
			if stub, ok := t.shortenPointer(s.text); ok {
				s.setContent(es, stub)
				rep.Cleared++
				rep.CharsSaved += n - utf8.RuneCountInString(stub)
			}
			continue
		}
		rel, abs := t.spillPath(s.text)
		stub := strings.NewReplacer("{chars}", strconv.Itoa(n), "{path}", rel).Replace(t.trim.Stub)
		saved := n - utf8.RuneCountInString(stub)
		if saved <= 0 {
			continue
		}
		if err := writeSpill(abs, s.text); err != nil {
			t.logger().Warn("store: cannot spill a tool result; it stays whole",
				"key", layerKeyLabel(key), "path", abs, "error", err)
			rep.SpillFailed++
			continue
		}
		s.setContent(es, stub)
		rep.Cleared++
		rep.CharsSaved += saved
	}
	return nil
}

// shortenPointer returns the stub for text when text is the spill guard's
// pointer to a file: it names one file, that file holds more than text
// does, and text holds the file's start (the guard's preview, newlines as
// spaces), so the file is the output text stands for. The stub names the
// same file and counts the whole output. An old pointer's preview is most
// of what an old call keeps in a resumed history (about 550 of 700 bytes,
// the economy benchmark measured); the model acted on it long ago and the
// whole is one Read away, as for any trimmed result. Anything else,
// including a pointer whose file is gone, is left as it is.
func (t *Trimming) shortenPointer(text string) (string, bool) {
	files := pointer.Files(text)
	if len(files) != 1 {
		return "", false
	}
	path := files[0]
	if !filepath.IsAbs(path) {
		path = filepath.Join(t.workspace, filepath.FromSlash(path))
	}
	data, err := os.ReadFile(path)
	if err != nil || !utf8.Valid(data) {
		return "", false
	}
	whole := string(data)
	chars := utf8.RuneCountInString(whole)
	head := whole
	if r := []rune(whole); len(r) > spillPreviewChars {
		head = string(r[:spillPreviewChars])
	}
	if chars <= utf8.RuneCountInString(text) || !strings.Contains(text, strings.ReplaceAll(head, "\n", " ")) {
		return "", false
	}
	stub := strings.NewReplacer("{chars}", strconv.Itoa(chars), "{path}", files[0]).Replace(t.trim.Stub)
	if utf8.RuneCountInString(stub) >= utf8.RuneCountInString(text) {
		return "", false
	}
	return stub, true
}

// spillPreviewChars is how much of an output the spill guard's pointer
// shows (guard's spillPreview; the store cannot import guard). Checking a
// shorter start than the pointer shows would accept more texts as
// pointers, a longer one none.
const spillPreviewChars = 400

// spillPath names the spill file of text: <SpillDirname>/<16 hex of
// sha256>.txt, relative to the workspace (with '/') and absolute.
func (t *Trimming) spillPath(text string) (rel, abs string) {
	sum := sha256.Sum256([]byte(text))
	name := hex.EncodeToString(sum[:8]) + ".txt"
	dir := filepath.Clean(t.trim.SpillDirname)
	return filepath.ToSlash(filepath.Join(dir, name)), filepath.Join(t.workspace, dir, name)
}

// writeSpill writes text to path atomically, readable by this user only (a
// spill is a tool's output, which may hold secrets), in a folder kept out of
// git. A regular file of the right size already there is kept: the name is
// the content's hash. There is no sync: a file a crash left short or missing
// is written again by the next Load, from the stored rows, and syncing each
// of the hundreds a first Load of a long session writes would slow it by
// about a second.
func writeSpill(path, text string) error {
	if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() && fi.Size() == int64(len(text)) {
		return nil
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if err := workbench.KeepOutOfGit(dir); err != nil {
		return err
	}
	return atomicfile.WriteNoSync(path, []byte(text), 0o600)
}

// ListSessions forwards to the base; without claude.SessionLister it fails
// with an error wrapping errors.ErrUnsupported.
func (t *Trimming) ListSessions(ctx context.Context, projectKey string) ([]claude.SessionInfo, error) {
	l, ok := t.base.(claude.SessionLister)
	if !ok {
		return nil, t.unsupported("ListSessions")
	}
	return l.ListSessions(ctx, projectKey)
}

// ListSessionSummaries forwards to the base; without
// claude.SessionSummaryLister it returns no summaries (nil, nil), so callers
// fall back to ListSessions and Load as they would without the capability.
func (t *Trimming) ListSessionSummaries(ctx context.Context, projectKey string) ([]claude.SessionSummary, error) {
	l, ok := t.base.(claude.SessionSummaryLister)
	if !ok {
		return nil, nil
	}
	return l.ListSessionSummaries(ctx, projectKey)
}

// Delete forwards to the base; without claude.SessionDeleter it is a no-op,
// as for a store without the capability.
func (t *Trimming) Delete(ctx context.Context, key claude.SessionKey) error {
	d, ok := t.base.(claude.SessionDeleter)
	if !ok {
		return nil
	}
	return d.Delete(ctx, key)
}

// ListSubkeys forwards to the base; without claude.SubkeyLister it returns
// no subkeys (nil, nil), as for a store without the capability.
func (t *Trimming) ListSubkeys(ctx context.Context, projectKey, sessionID string) ([]string, error) {
	l, ok := t.base.(claude.SubkeyLister)
	if !ok {
		return nil, nil
	}
	return l.ListSubkeys(ctx, projectKey, sessionID)
}

// Projects forwards to the base; without ProjectLister it fails with an
// error wrapping errors.ErrUnsupported.
func (t *Trimming) Projects(ctx context.Context) ([]string, error) {
	l, ok := t.base.(ProjectLister)
	if !ok {
		return nil, t.unsupported("Projects")
	}
	return l.Projects(ctx)
}

// HasSession forwards to the base; without SessionChecker it loads the main
// transcript from the base and reports whether it has entries.
func (t *Trimming) HasSession(ctx context.Context, projectKey, sessionID string) (bool, error) {
	if c, ok := t.base.(SessionChecker); ok {
		return c.HasSession(ctx, projectKey, sessionID)
	}
	key := claude.SessionKey{ProjectKey: projectKey, SessionID: sessionID}
	rows, err := t.base.Load(ctx, key)
	if err != nil {
		return false, fmt.Errorf("store: load %s: %w", layerKeyLabel(key), err)
	}
	return len(rows) > 0, nil
}

// LastContext forwards to the base; without LastContextReader it fails with
// an error wrapping errors.ErrUnsupported.
func (t *Trimming) LastContext(ctx context.Context, projectKey, sessionID string) (int, error) {
	r, ok := t.base.(LastContextReader)
	if !ok {
		return 0, t.unsupported("LastContext")
	}
	return r.LastContext(ctx, projectKey, sessionID)
}

func (t *Trimming) unsupported(method string) error {
	return fmt.Errorf("store: the base store %T has no %s method: %w", t.base, method, errors.ErrUnsupported)
}

// layerKeyLabel names a key as project/session[/subpath] in errors and logs.
func layerKeyLabel(key claude.SessionKey) string {
	s := key.ProjectKey + "/" + key.SessionID
	if key.Subpath != "" {
		s += "/" + key.Subpath
	}
	return s
}
