package guard

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/ephemeral"
)

// Protect refuses every tool call, on the main thread and in subagents
// alike, that would write one of paths (or, for a folder, anything under
// it): a Write, Edit, MultiEdit or
// NotebookEdit whose file names one of them (a relative name taken from the
// hook's cwd), and a Bash command that names one of them (by its path, or
// by its base name beside its folder's name) and is not a glance
// (ephemeral.Is). refusal is the text the model reads, with one %s for the
// path. It is the first wall only: Bash can write a file without naming it,
// so the caller also checks the files' contents between rounds.
func Protect(paths []string, refusal string) claude.HookMatcher {
	var abs []string
	for _, p := range paths {
		if p == "" {
			continue
		}
		if a, err := filepath.Abs(p); err == nil {
			abs = append(abs, filepath.Clean(a))
		}
	}
	hook := func(_ context.Context, in *claude.HookInput) (*claude.HookOutput, error) {
		if in == nil || len(abs) == 0 {
			return nil, nil
		}
		input, err := in.ToolInputMap()
		if err != nil {
			return nil, nil
		}
		if in.ToolName == "Bash" {
			cmd, _ := input["command"].(string)
			if p := namedIn(cmd, abs); p != "" && !ephemeral.Is(cmd) {
				return claude.Deny(fmt.Sprintf(refusal, p)), nil
			}
			return nil, nil
		}
		for _, key := range []string{"file_path", "notebook_path", "path"} {
			name, _ := input[key].(string)
			if name == "" {
				continue
			}
			if !filepath.IsAbs(name) && in.Cwd != "" {
				name = filepath.Join(in.Cwd, name)
			}
			if p := protectedPath(name, abs); p != "" && writes(in.ToolName) {
				return claude.Deny(fmt.Sprintf(refusal, p)), nil
			}
		}
		return nil, nil
	}
	return claude.HookMatcher{Matcher: "", Hooks: []claude.HookFunc{hook}}
}

// writes reports whether a tool that names a file writes it: every tool
// but the ones that only read.
func writes(tool string) bool {
	switch tool {
	case "Read", "Glob", "Grep", "NotebookRead", "LS":
		return false
	}
	return true
}

// protectedPath returns the protected path name resolves to (or lies
// under), or "".
func protectedPath(name string, abs []string) string {
	clean := filepath.Clean(name)
	real, err := filepath.EvalSymlinks(clean)
	if err != nil {
		// A file about to be created: its folder may be a link.
		if dir, derr := filepath.EvalSymlinks(filepath.Dir(clean)); derr == nil {
			real, err = filepath.Join(dir, filepath.Base(clean)), nil
		}
	}
	for _, p := range abs {
		if within(clean, p) || (err == nil && within(real, p)) {
			return p
		}
		if rp, err2 := filepath.EvalSymlinks(p); err2 == nil && err == nil && within(real, rp) {
			return p
		}
	}
	return ""
}

// within reports whether name is p or lies under it.
func within(name, p string) bool {
	rel, err := filepath.Rel(p, name)
	return err == nil && (rel == "." || (rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))))
}

// namedIn returns the protected path a shell command names, or "".
func namedIn(cmd string, abs []string) string {
	for _, p := range abs {
		base, dir := filepath.Base(p), filepath.Base(filepath.Dir(p))
		if strings.Contains(cmd, p) || (strings.Contains(cmd, base) && strings.Contains(cmd, dir)) {
			return p
		}
	}
	return ""
}
