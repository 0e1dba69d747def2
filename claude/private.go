package claude

import (
	"cmp"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
)

// privateProject makes the CLI's folder for the sessions of cwd (under
// the config directory's projects/) its owner's alone before the CLI
// starts: the CLI writes transcripts, tool results and subagents'
// transcripts there with mode 0644 in 0755 folders, and a tool's output
// may carry a key or a token. It returns the folder, "" when it could not
// be made.
func privateProject(env []string, cwd string) string {
	if cwd == "" {
		cwd, _ = os.Getwd()
	}
	if abs, err := filepath.Abs(cwd); err == nil {
		cwd = abs
	}
	dir := filepath.Join(configDir(env), "projects", ProjectKey(cwd))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		slog.Debug("claude: the session folder could not be made private", "dir", dir, "err", err)
		return ""
	}
	if fi, err := os.Stat(dir); err == nil && ownedByMe(fi) && fi.Mode().Perm() != 0o700 {
		if err := os.Chmod(dir, 0o700); err != nil {
			slog.Debug("claude: the session folder could not be made private", "dir", dir, "err", err)
		}
	}
	return dir
}

// privateFiles narrows what the CLI wrote under dir to its owner: files
// 0600, folders 0700. It runs when the CLI has exited.
func privateFiles(dir string) {
	if dir == "" {
		return
	}
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		fi, err := d.Info()
		if err != nil || !ownedByMe(fi) {
			return nil
		}
		want := fs.FileMode(0o600)
		if d.IsDir() {
			want = 0o700
		}
		if fi.Mode().Perm()&^want != 0 {
			if err := os.Chmod(p, fi.Mode().Perm()&want); err != nil {
				slog.Debug("claude: a session file could not be made private", "path", p, "err", err)
			}
		}
		return nil
	})
}

// tempProject is the CLI's folder for the sessions of cwd in its temporary
// directory: <CLAUDE_CODE_TMPDIR, else the system's>/claude-<uid>/<key of
// cwd>/. The CLI keeps there the output of every command it runs in the
// background (<session>/tasks/<id>.output), and of a foreground command it
// moves there, unmasked.
func tempProject(env []string, cwd string) string {
	vars := map[string]string{}
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			vars[k] = v
		}
	}
	// Node's os.tmpdir() on Unix: TMPDIR, TMP, TEMP, then /tmp.
	tmp := cmp.Or(vars["CLAUDE_CODE_TMPDIR"], vars["TMPDIR"], vars["TMP"], vars["TEMP"], "/tmp")
	if cwd == "" {
		cwd, _ = os.Getwd()
	}
	return filepath.Join(tmp, fmt.Sprintf("claude-%d", os.Getuid()), ProjectKey(cwd))
}
