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
// alike, that would write one of paths: a Write, Edit, MultiEdit or
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

// protectedPath returns the protected path name resolves to, or "".
func protectedPath(name string, abs []string) string {
	clean := filepath.Clean(name)
	real, err := filepath.EvalSymlinks(clean)
	for _, p := range abs {
		if clean == p || (err == nil && real == p) {
			return p
		}
		if rp, err2 := filepath.EvalSymlinks(p); err2 == nil && err == nil && real == rp {
			return p
		}
	}
	return ""
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
