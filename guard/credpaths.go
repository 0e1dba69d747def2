package guard

import (
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/flowerrun/flower/ephemeral"
)

// Where no sandbox hides the credential files, a glance is refused when
// any of its words, as bash expands them, could read under a credential
// folder: flower's own config (~/.config/flower), the CLI's (~/.claude*,
// $CLAUDE_CONFIG_DIR) and the wall's Hide list. The words come from
// ephemeral's reading of the line (quotes, backslashes and tildes as bash
// takes them); a word whose value is unknown ($VAR) is refused, a glob is
// matched as a pattern, and a command that descends into folders (grep -r,
// find, du, tar, ls -R, rg…) is refused on any folder that holds a
// credential folder.

// credentialPlaces are the folders and files a glance without a sandbox
// may not read, absolute and clean, symlinks resolved where they exist,
// for this process's HOME and configuration variables plus hide.
func credentialPlaces(hide []string) []string {
	var out []string
	add := func(p string) {
		if p == "" || !filepath.IsAbs(p) {
			return
		}
		p = filepath.Clean(p)
		out = append(out, p)
		if real, err := filepath.EvalSymlinks(p); err == nil && real != p {
			out = append(out, real)
		}
	}
	home, _ := os.UserHomeDir()
	if home != "" {
		add(filepath.Join(home, ".claude"))
		add(filepath.Join(home, ".claude.json"))
		add(filepath.Join(home, ".config", "flower"))
		// ~/.claude* : backups and siblings the CLI writes (.claude.json.backup…).
		if m, err := filepath.Glob(filepath.Join(home, ".claude*")); err == nil {
			for _, p := range m {
				add(p)
			}
		}
	}
	if x := os.Getenv("XDG_CONFIG_HOME"); x != "" {
		add(filepath.Join(x, "flower"))
	}
	add(os.Getenv("CLAUDE_CONFIG_DIR"))
	for _, p := range hide {
		add(p)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// recursiveVerbs descend into the folders they are given (or into . when
// given none) whatever their options; recursiveOptions make the others
// descend.
var (
	recursiveVerbs = map[string]bool{"find": true, "du": true, "tar": true, "rg": true, "ag": true, "ack": true, "tree": true, "zip": true, "rsync": true}
	// Any short option cluster with r or R counts (ls -lrt too), which can
	// only refuse more; git descends with grep, --no-index and -C.
	recursiveOptions = regexp.MustCompile(`^(-[a-zA-Z]*[rR][a-zA-Z]*|--recursive|--dereference-recursive|--directories=recurse|-d|--recurse.*|grep|--no-index|-C)$`)
)

// readsCredentials reports whether a glance may read under one of places
// (see credentialPlaces), read as bash would from cwd. A line outside
// ephemeral's grammar counts as reading them.
func readsCredentials(cmd, cwd string, places []string) bool {
	cmds, ok := ephemeral.Commands(cmd)
	if !ok {
		return true
	}
	home, _ := os.UserHomeDir()
	if cwd == "" {
		cwd, _ = os.Getwd()
	}
	for _, c := range cmds {
		if len(c.Words) == 0 {
			continue
		}
		dir := cwd
		if c.Dir != "" {
			dir = absolute(c.Dir, cwd, home)
			if reaches(dir, places, true) {
				return true
			}
		}
		verb := strings.ToLower(c.Words[0].Text)
		recursive := recursiveVerbs[verb]
		for _, w := range c.Words[1:] {
			if recursiveOptions.MatchString(w.Text) {
				recursive = true
			}
		}
		// A recursive verb given no folder reads its working directory.
		if recursive && readsWorkingDirectory(verb, c.Words[1:]) && reaches(dir, places, true) {
			return true
		}
		for _, w := range c.Words[1:] {
			if w.Expands {
				return true // its value is unknown: it may be any path
			}
			for _, v := range pathsIn(w.Text) {
				if namesCredentialFile(v) {
					return true
				}
				// ~user, ~+ and ~- are another home, the working
				// directory, the last one: places flower does not follow.
				if strings.HasPrefix(v, "~") && v != "~" && !strings.HasPrefix(v, "~/") {
					return true
				}
				p := absolute(v, dir, home)
				if w.Glob {
					if patternReaches(p, places, recursive) {
						return true
					}
					continue
				}
				if reaches(p, places, recursive) {
					return true
				}
				if real, err := filepath.EvalSymlinks(p); err == nil && reaches(real, places, recursive) {
					return true
				}
			}
		}
	}
	return false
}

// readsWorkingDirectory reports whether a recursive verb given args
// descends into its working directory: find with no path before its
// expression, a grep-like with no operand after its pattern, git always,
// any other verb with no operand.
func readsWorkingDirectory(verb string, args []ephemeral.Word) bool {
	operands := 0
	for _, a := range args {
		if !strings.HasPrefix(a.Text, "-") {
			operands++
		}
	}
	switch verb {
	case "find":
		return len(args) == 0 || strings.HasPrefix(args[0].Text, "-") || args[0].Text == "(" || args[0].Text == "!"
	case "grep", "egrep", "fgrep", "zgrep", "rg", "ag", "ack":
		return operands <= 1
	case "git":
		return true
	}
	return operands == 0
}

// pathsIn are the paths a word may hold: itself, an option's value after
// the first = (--file=~/x, x=~/y), and what follows an option's letters
// (-f/root/x, -f~/x).
func pathsIn(text string) []string {
	out := []string{text}
	if _, v, ok := strings.Cut(text, "="); ok && v != "" {
		out = append(out, v)
	}
	if strings.HasPrefix(text, "-") {
		if i := strings.IndexAny(text, "/~."); i > 0 {
			out = append(out, text[i:])
		}
	}
	return out
}

// absolute is p as bash and the program take it from dir: a leading ~ is
// home (a quoted one is taken the same way, which can only refuse more).
func absolute(p, dir, home string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		p = home + p[1:]
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	return filepath.Clean(p)
}

// reaches reports whether p is one of places or under one, or, for a
// command that descends, holds one.
func reaches(p string, places []string, recursive bool) bool {
	for _, c := range places {
		if within(p, c) || (recursive && within(c, p)) {
			return true
		}
	}
	return false
}

// patternReaches is reaches for a glob: whether any path pattern may
// match is one of places or under one, or (recursive) holds one. Braces
// are read as *, which can only match more.
func patternReaches(pattern string, places []string, recursive bool) bool {
	pattern = braces.ReplaceAllString(pattern, "*")
	pat := strings.Split(strings.TrimPrefix(pattern, "/"), "/")
	for _, c := range places {
		parts := strings.Split(strings.TrimPrefix(c, "/"), "/")
		n := min(len(pat), len(parts))
		matched := true
		for i := range n {
			if ok, err := path.Match(pat[i], parts[i]); err != nil || !ok {
				matched = err != nil // a malformed pattern is read as matching
				if !matched {
					break
				}
			}
		}
		if matched && (len(pat) >= len(parts) || recursive) {
			return true
		}
	}
	return false
}

var braces = regexp.MustCompile(`\{[^{}]*\}`)
