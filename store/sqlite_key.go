package store

import (
	"errors"
	"fmt"
	"strings"

	"github.com/flowerrun/flower/claude"
)

// ErrInvalidKey is wrapped by every error about a session key the store
// refuses: an empty project key or session id, one holding '/' or NUL, or a
// subpath that could leave its session (absolute, with "..", "." or empty
// segments, a backslash or NUL).
var ErrInvalidKey = errors.New("invalid session key")

// storeKey validates key and returns its row key:
// "project_key/session_id[/subpath]".
func storeKey(key claude.SessionKey) (string, error) {
	if err := checkSegment("project key", key.ProjectKey); err != nil {
		return "", err
	}
	if err := checkSegment("session id", key.SessionID); err != nil {
		return "", err
	}
	sk := key.ProjectKey + "/" + key.SessionID
	if key.Subpath == "" {
		return sk, nil
	}
	if err := checkSubpath(key.Subpath); err != nil {
		return "", err
	}
	return sk + "/" + key.Subpath, nil
}

// checkSegment validates a project key or session id: one segment of a
// store key.
func checkSegment(what, s string) error {
	switch {
	case s == "":
		return fmt.Errorf("store: %w: the %s is empty", ErrInvalidKey, what)
	case strings.Contains(s, "/"):
		return fmt.Errorf("store: %w: the %s %q holds '/'; project keys are sanitized directory names (every '/' becomes '-') and session ids are UUIDs", ErrInvalidKey, what, s)
	case strings.Contains(s, "\x00"):
		return fmt.Errorf("store: %w: the %s %q holds NUL", ErrInvalidKey, what, s)
	}
	return nil
}

// checkSubpath validates a subagent subpath such as
// "subagents/agent-<id>": relative, '/'-joined, and unable to name anything
// outside its session once laid out as files.
func checkSubpath(p string) error {
	const want = "a subpath is relative and '/'-joined, like subagents/agent-<id>"
	switch {
	case strings.Contains(p, "\x00"):
		return fmt.Errorf("store: %w: subpath %q holds NUL; %s", ErrInvalidKey, p, want)
	case strings.Contains(p, `\`):
		return fmt.Errorf("store: %w: subpath %q holds a backslash; %s", ErrInvalidKey, p, want)
	case strings.HasPrefix(p, "/"):
		return fmt.Errorf("store: %w: subpath %q is absolute; %s", ErrInvalidKey, p, want)
	}
	for _, seg := range strings.Split(p, "/") {
		switch seg {
		case "..":
			return fmt.Errorf("store: %w: subpath %q has a '..' segment; %s", ErrInvalidKey, p, want)
		case "", ".":
			return fmt.Errorf("store: %w: subpath %q has an empty or '.' segment; %s", ErrInvalidKey, p, want)
		}
	}
	return nil
}

// keyRange returns the bounds [lo, hi) holding exactly the store keys that
// start with prefix+"/": '0' is the byte after '/', and SQLite compares TEXT
// bytewise, so the range uses the primary key index with no LIKE escaping.
func keyRange(prefix string) (lo, hi string) {
	return prefix + "/", prefix + "0"
}
