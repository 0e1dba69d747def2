package claude

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
)

var uuidRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// materialized is a temporary CLAUDE_CONFIG_DIR holding a session loaded
// from the store, laid out like ~/.claude so that the CLI can resume it.
type materialized struct {
	dir       string
	sessionID string
	// durable is the config directory the CLI would use without a store
	// (configDir of the child's environment): the files the CLI writes
	// into dir for the model to read back (tool-results/…) are kept there,
	// where the CLI keeps them itself in a session it did not resume from
	// a store. See keepFiles.
	durable string
	// laid is what was written into each transcript file, for the
	// mirror's catch-up to tell the CLI's new lines from the store's.
	laid map[string]entrySet
}

// configDir is where the child keeps its transcripts: CLAUDE_CONFIG_DIR of
// the child's environment, else $HOME/.claude.
func configDir(env []string) string {
	var home, cfg string
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "CLAUDE_CONFIG_DIR":
			cfg = v
		case "HOME":
			home = v
		}
	}
	if cfg != "" {
		return cfg
	}
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	return filepath.Join(home, ".claude")
}

// materialize loads the session to resume (or the most recent one, for
// ContinueConversation) from the store into a temporary config directory.
// It returns nil when there is nothing to load: the CLI then starts as
// usual.
func materialize(ctx context.Context, o *Options, childEnv []string) (*materialized, error) {
	cwd := o.Cwd
	if cwd == "" {
		cwd, _ = os.Getwd()
	}
	pk := ProjectKey(cwd)
	timeout := orDefault(o.StoreTimeout, 60*time.Second)
	load := func(key SessionKey) ([]json.RawMessage, error) {
		lctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		entries, err := o.SessionStore.Load(lctx, key)
		if err != nil {
			return nil, fmt.Errorf("claude: load %s/%s from the session store: %w", key.SessionID, key.Subpath, err)
		}
		return entries, nil
	}
	var sid string
	var entries []json.RawMessage
	switch {
	case o.Resume != "":
		if !uuidRE.MatchString(o.Resume) {
			// A title or other non-id: let the CLI resolve it itself.
			return nil, nil
		}
		var err error
		sid = o.Resume
		if entries, err = load(SessionKey{ProjectKey: pk, SessionID: sid}); err != nil {
			return nil, err
		}
	case o.ContinueConversation:
		lister := o.SessionStore.(SessionLister)
		lctx, cancel := context.WithTimeout(ctx, timeout)
		sessions, err := lister.ListSessions(lctx, pk)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("claude: list sessions in the session store: %w", err)
		}
		sort.SliceStable(sessions, func(i, j int) bool { return sessions[i].Mtime > sessions[j].Mtime })
		for _, s := range sessions {
			e, err := load(SessionKey{ProjectKey: pk, SessionID: s.SessionID})
			if err != nil {
				return nil, err
			}
			if len(e) == 0 || isSidechain(e[0]) {
				continue
			}
			sid, entries = s.SessionID, e
			break
		}
	default:
		return nil, nil
	}
	if len(entries) == 0 {
		return nil, nil
	}
	dir, err := os.MkdirTemp("", resumeDirPattern)
	if err == nil {
		// MkdirTemp makes it 0700 under a usual umask; say so explicitly:
		// it holds credentials and whole transcripts.
		err = os.Chmod(dir, 0o700)
	}
	if err != nil {
		return nil, fmt.Errorf("claude: create resume directory: %w", err)
	}
	m := &materialized{dir: dir, sessionID: sid, durable: configDir(childEnv), laid: map[string]entrySet{}}
	if err := m.lay(ctx, o, pk, sid, entries, load, childEnv); err != nil {
		m.remove()
		return nil, err
	}
	return m, nil
}

func (m *materialized) lay(ctx context.Context, o *Options, pk, sid string, main []json.RawMessage, load func(SessionKey) ([]json.RawMessage, error), childEnv []string) error {
	sessDir := filepath.Join(m.dir, "projects", pk)
	if err := m.writeTranscript(filepath.Join(sessDir, sid+".jsonl"), m.repoint(main)); err != nil {
		return err
	}
	if lister, ok := o.SessionStore.(SubkeyLister); ok {
		lctx, cancel := context.WithTimeout(ctx, orDefault(o.StoreTimeout, 60*time.Second))
		subs, err := lister.ListSubkeys(lctx, pk, sid)
		cancel()
		if err != nil {
			return fmt.Errorf("claude: list subagent transcripts: %w", err)
		}
		base := filepath.Join(sessDir, sid)
		for _, sub := range subs {
			target, err := safeSubpath(base, sub)
			if err != nil {
				slog.Warn("claude: unsafe subpath skipped on resume", "subpath", sub, "err", err)
				continue
			}
			entries, err := load(SessionKey{ProjectKey: pk, SessionID: sid, Subpath: sub})
			if err != nil {
				return err
			}
			var lines []json.RawMessage
			var meta json.RawMessage
			for _, e := range entries {
				if entryType(e) == "agent_metadata" {
					meta = e
					continue
				}
				lines = append(lines, e)
			}
			if err := m.writeTranscript(target+".jsonl", m.repoint(lines)); err != nil {
				return err
			}
			if meta != nil {
				if err := writeMeta(target+".meta.json", meta); err != nil {
					return err
				}
			}
		}
	}
	return copyAuth(m.dir, configDir(childEnv), childEnv)
}

// resumeDirPattern names the temporary resume directories (in os.TempDir).
const resumeDirPattern = "claude-resume-*"

// keptNote marks a resume directory kept on purpose: it holds the only full
// copy of a session's transcript.
const keptNote = "KEPT-TRANSCRIPT.txt"

// credentialFiles are what copyAuth puts into a resume directory that must
// not outlive the CLI that needed them.
var credentialFiles = []string{".credentials.json", ".claude.json"}

// keep leaves the directory for a human (or a later resume by hand) without
// the credentials copyAuth put there, and says why it is there.
func (m *materialized) keep() {
	// The outputs the CLI saved go where later resumes look for them,
	// whatever becomes of this directory.
	if err := m.keepFiles(); err != nil {
		slog.Warn("claude: the files the CLI wrote for a resumed session stay only in its resume directory", "dir", m.dir, "err", err)
	}
	m.keepNoting("The session store missed entries of session " + m.sessionID + ", or the driver stopped reading\n" +
		"the CLI's output early. This directory holds the CLI's own transcript under projects/;\n" +
		"copy what you need, then delete the directory. Credentials were removed.\n")
	slog.Warn("claude: the session store missed entries of a resumed session; its transcript is kept", "dir", m.dir)
}

// keepNoting strips the credentials and writes the note that makes
// SweepResumeDirs spare the directory.
func (m *materialized) keepNoting(note string) {
	stripCredentials(m.dir)
	if err := os.WriteFile(filepath.Join(m.dir, keptNote), []byte(note), 0o600); err != nil {
		slog.Warn("claude: resume directory note", "err", err)
	}
}

func stripCredentials(dir string) {
	for _, name := range credentialFiles {
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			slog.Warn("claude: could not remove credentials from a resume directory", "dir", dir, "err", err)
		}
	}
}

// SweepResumeDirs cleans up the resume directories of this user that
// nothing has touched for olderThan, left by a crash or kept after a loss:
// it removes their credentials always, and removes a directory entirely
// unless it was kept on purpose (it holds the only full copy of a
// transcript: see MirrorError). Call it at start; olderThan must exceed the
// longest session that may still be running in another process (a day is
// a safe choice). It returns the directories removed.
func SweepResumeDirs(olderThan time.Duration) ([]string, error) {
	matches, err := filepath.Glob(filepath.Join(os.TempDir(), resumeDirPattern))
	if err != nil {
		return nil, fmt.Errorf("claude: sweep resume directories: %w", err)
	}
	cutoff := time.Now().Add(-olderThan)
	var removed []string
	for _, dir := range matches {
		info, err := os.Lstat(dir)
		if err != nil || !info.IsDir() || !ownedByMe(info) || newestMtime(dir).After(cutoff) {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, keptNote)); err == nil {
			stripCredentials(dir)
			continue
		}
		if err := os.RemoveAll(dir); err != nil {
			stripCredentials(dir)
			slog.Warn("claude: could not remove a stale resume directory", "dir", dir, "err", err)
			continue
		}
		removed = append(removed, dir)
	}
	return removed, nil
}

// newestMtime is the latest modification time of anything under dir: a
// running CLI keeps writing its transcript deep inside.
func newestMtime(dir string) time.Time {
	var newest time.Time
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if info, err := d.Info(); err == nil && info.ModTime().After(newest) {
			newest = info.ModTime()
		}
		return nil
	})
	return newest
}

func (m *materialized) remove() {
	if err := m.keepFiles(); err != nil {
		// Better a directory left behind than a file the model was
		// pointed at gone: only what must not outlive the CLI goes.
		m.keepNoting("Session " + m.sessionID + ": the files the CLI wrote under projects/ for the model to read back\n" +
			"(tool-results/…) could not be copied to " + m.durable + " (" + err.Error() + ").\n" +
			"The transcript refers to them here: copy them there, then delete the directory. Credentials were removed.\n")
		slog.Warn("claude: the files the CLI wrote for a resumed session could not be kept; its resume directory stays",
			"dir", m.dir, "err", err)
		return
	}
	// The CLI may still be releasing files: retry briefly.
	for i := 0; i < 5; i++ {
		if err := os.RemoveAll(m.dir); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	slog.Warn("claude: could not remove resume directory", "dir", m.dir)
}

// keepFiles copies every file the CLI wrote under dir's projects/ other
// than transcripts (which the store holds) into the same place under
// durable: the outputs the CLI saved whole when it cut them
// (<session>/tool-results/<id>.txt), whose paths the transcript and the
// model hold. A later resume points those paths at the copies (repoint).
// A file already there with the same size is left as it is. The copies are
// on this machine: a session resumed elsewhere from a shared store finds
// those references dangling (the spill guard's copies in the workbench
// are another matter).
func (m *materialized) keepFiles() error {
	if m.durable == "" || m.durable == m.dir {
		return nil
	}
	root := filepath.Join(m.dir, "projects")
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if !d.Type().IsRegular() || strings.HasSuffix(p, ".jsonl") || strings.HasSuffix(p, ".meta.json") {
			return nil
		}
		rel, err := filepath.Rel(m.dir, p)
		if err != nil {
			return err
		}
		return copyFileOnce(p, filepath.Join(m.durable, rel))
	})
}

// copyFileOnce copies src to dst (this user's only, like every file the CLI
// keeps) unless dst already has src's size.
func copyFileOnce(src, dst string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return fmt.Errorf("claude: keep %s: %w", src, err)
	}
	if fi, err := os.Stat(dst); err == nil && fi.Mode().IsRegular() && fi.Size() == int64(len(data)) {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return fmt.Errorf("claude: keep %s: %w", src, err)
	}
	tmp := dst + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("claude: keep %s in %s: %w", src, dst, err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("claude: keep %s in %s: %w", src, dst, err)
	}
	return nil
}

// resumePathRE matches a path into an earlier resume directory's projects/
// as transcripts hold it (a JSON string never escapes '/'). The CLI's
// project keys, session ids and file names use only the characters of the
// group, so a path ends where the text around it resumes ("….txt,需要时").
var resumePathRE = regexp.MustCompile(regexp.QuoteMeta(filepath.ToSlash(os.TempDir())) +
	`/claude-resume-[A-Za-z0-9]+/(projects/[A-Za-z0-9._/+-]+)`)

// repoint rewrites, in entries, every path into an earlier resume directory
// whose file keepFiles kept under durable, so that the transcript's
// references (the CLI's <persisted-output> pointers, a spill pointer naming
// the CLI's whole copy) resolve again. A path whose copy is not there is
// left as it is: that directory may still exist.
func (m *materialized) repoint(entries []json.RawMessage) []json.RawMessage {
	if m.durable == "" {
		return entries
	}
	out, copied := entries, false
	for i, e := range entries {
		if !resumePathRE.Match(e) {
			continue
		}
		if !copied { // the caller's slice stays as it was
			out, copied = append([]json.RawMessage(nil), entries...), true
		}
		out[i] = resumePathRE.ReplaceAllFunc(e, func(match []byte) []byte {
			rel := resumePathRE.FindSubmatch(match)[1]
			kept := filepath.Join(m.durable, filepath.FromSlash(string(rel)))
			if _, err := os.Stat(kept); err != nil {
				return match
			}
			return []byte(filepath.ToSlash(kept))
		})
	}
	return out
}

// ErrUnsafeSubpath marks a store subpath that would escape the session
// directory.
var ErrUnsafeSubpath = errors.New("unsafe subpath")

// safeSubpath joins a store subpath under base, refusing absolute paths,
// '..', drive prefixes, NUL and anything resolving outside base.
func safeSubpath(base, sub string) (string, error) {
	switch {
	case sub == "":
		return "", fmt.Errorf("%w: empty", ErrUnsafeSubpath)
	case strings.ContainsRune(sub, 0):
		return "", fmt.Errorf("%w: NUL byte", ErrUnsafeSubpath)
	case strings.HasPrefix(sub, "/") || strings.HasPrefix(sub, "\\") || filepath.IsAbs(sub):
		return "", fmt.Errorf("%w: absolute %q", ErrUnsafeSubpath, sub)
	case len(sub) >= 2 && sub[1] == ':':
		return "", fmt.Errorf("%w: drive prefix %q", ErrUnsafeSubpath, sub)
	}
	for _, seg := range strings.FieldsFunc(sub, func(r rune) bool { return r == '/' || r == '\\' }) {
		if seg == ".." {
			return "", fmt.Errorf("%w: %q contains ..", ErrUnsafeSubpath, sub)
		}
	}
	target := filepath.Join(base, filepath.FromSlash(path.Clean(sub)))
	rel, err := filepath.Rel(base, target)
	if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
		return "", fmt.Errorf("%w: %q resolves outside the session", ErrUnsafeSubpath, sub)
	}
	return target, nil
}

// writeTranscript lays a transcript file out and records its lines.
func (m *materialized) writeTranscript(p string, entries []json.RawMessage) error {
	set := entrySet{}
	m.laid[p] = set
	return writeJSONL(p, entries, set)
}

// writeJSONL writes entries one compact JSON object a line, adding each
// line as written to set.
func writeJSONL(p string, entries []json.RawMessage, set entrySet) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return fmt.Errorf("claude: resume directory: %w", err)
	}
	var b []byte
	for _, e := range entries {
		var compact json.RawMessage
		if c, err := json.Marshal(e); err == nil {
			compact = c
		} else {
			return fmt.Errorf("claude: stored entry is not JSON: %w", err)
		}
		b = append(append(b, compact...), '\n')
		set.add(compact)
	}
	if err := os.WriteFile(p, b, 0o600); err != nil {
		return fmt.Errorf("claude: write transcript for resume: %w", err)
	}
	return nil
}

func writeMeta(p string, entry json.RawMessage) error {
	m, err := decodeObject(entry)
	if err != nil {
		return err
	}
	delete(m, "type")
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return os.WriteFile(p, b, 0o600)
}

func entryType(e json.RawMessage) string {
	var h struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(e, &h)
	return h.Type
}

func isSidechain(e json.RawMessage) bool {
	var h struct {
		IsSidechain bool `json:"isSidechain"`
	}
	_ = json.Unmarshal(e, &h)
	return h.IsSidechain
}

// copyAuth gives the temporary config directory the parent's credentials
// and settings: the OAuth refresh token removed (the child must not rotate
// the parent's token), and settings without plugins, marketplaces or a
// CLAUDE_CONFIG_DIR of their own.
func copyAuth(dst, src string, env []string) error {
	if b, err := os.ReadFile(filepath.Join(src, ".credentials.json")); err == nil {
		if m, err := decodeObject(b); err == nil {
			if oauth, ok := m["claudeAiOauth"].(map[string]any); ok {
				delete(oauth, "refreshToken")
			}
			if out, err := json.Marshal(m); err == nil {
				if err := os.WriteFile(filepath.Join(dst, ".credentials.json"), out, 0o600); err != nil {
					return fmt.Errorf("claude: copy credentials: %w", err)
				}
			}
		}
	}
	claudeJSON := filepath.Join(src, ".claude.json")
	if _, err := os.Stat(claudeJSON); err != nil {
		claudeJSON = filepath.Join(filepath.Dir(src), ".claude.json")
		for _, kv := range env {
			if v, ok := strings.CutPrefix(kv, "HOME="); ok {
				claudeJSON = filepath.Join(v, ".claude.json")
			}
		}
	}
	if b, err := os.ReadFile(claudeJSON); err == nil {
		if err := os.WriteFile(filepath.Join(dst, ".claude.json"), b, 0o600); err != nil {
			return fmt.Errorf("claude: copy .claude.json: %w", err)
		}
	}
	for _, name := range []string{"settings.json", "cowork_settings.json"} {
		b, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			continue
		}
		m, err := decodeObject(b)
		if err != nil {
			continue
		}
		delete(m, "enabledPlugins")
		delete(m, "extraKnownMarketplaces")
		if envBlock, ok := m["env"].(map[string]any); ok {
			delete(envBlock, "CLAUDE_CONFIG_DIR")
		}
		out, _ := json.Marshal(m)
		if err := os.WriteFile(filepath.Join(dst, name), out, 0o600); err != nil {
			return fmt.Errorf("claude: copy %s: %w", name, err)
		}
	}
	return nil
}
