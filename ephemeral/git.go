package ephemeral

import "strings"

// gitSubcommands are the queries git may run, each with the rule for its
// arguments. Subcommands are matched case-insensitively, like verbs.
var gitSubcommands = map[string]func([]word) bool{
	"status": anyArgs, "rev-parse": anyArgs, "describe": anyArgs, "ls-files": anyArgs,
	"blame": anyArgs, "cherry": anyArgs, "for-each-ref": anyArgs, "count-objects": anyArgs,
	"check-ignore": anyArgs, "var": anyArgs, "cat-file": anyArgs,
	"diff": gitDiffIsQuery, "log": gitDiffIsQuery, "show": gitDiffIsQuery,
	"whatchanged": gitDiffIsQuery, "shortlog": gitDiffIsQuery,
	"branch":       gitBranchIsListing,
	"stash":        gitStashIsQuery,
	"worktree":     gitWorktreeIsList,
	"remote":       gitRemoteIsQuery,
	"reflog":       gitReflogIsQuery,
	"symbolic-ref": gitSymbolicRefIsQuery,
	"hash-object":  refuse("w", "write"), // -w writes the object
	"config":       gitConfigIsQuery,
}

// gitRefused are long options refused for every subcommand, also as
// abbreviations (parse-options takes --out) and extensions
// (--force-with-lease): they write files (--output), run programs
// (--ext-diff, --textconv, --filters, --exec, --upload-pack), force or
// destroy (--force, --hard, --prune), or open an editor (--edit).
var gitRefused = []string{
	"output", "ext-diff", "textconv", "filters", "exec", "upload-pack", "receive-pack",
	"open-files-in-pager", "force", "hard", "prune", "edit",
}

// gitIsQuery accepts git [--no-pager | -P | --no-optional-locks | -C DIR]…
// SUBCOMMAND ARGS for a query SUBCOMMAND. Other global options are refused:
// -c sets config such as core.pager, --exec-path picks the programs,
// --git-dir and --work-tree point elsewhere, -p starts a pager.
func gitIsQuery(args []word) bool {
	args, ok := skipGitGlobals(args)
	if !ok || len(args) == 0 {
		return false
	}
	sub, _ := asciiLower(args[0].text)
	rule, ok := gitSubcommands[sub]
	if !ok {
		return false
	}
	for _, a := range args[1:] {
		if gitOptionRefused(a.text) {
			return false
		}
	}
	return rule(args[1:])
}

func skipGitGlobals(args []word) ([]word, bool) {
	for len(args) > 0 {
		switch args[0].text {
		case "--no-pager", "-P", "--no-optional-locks":
			args = args[1:]
		case "-C":
			if len(args) < 2 || strings.HasPrefix(args[1].text, "-") {
				return nil, false
			}
			args = args[2:]
		default:
			return args, !strings.HasPrefix(args[0].text, "-")
		}
	}
	return args, true
}

func gitOptionRefused(arg string) bool {
	if !strings.HasPrefix(arg, "--") || arg == "--" {
		return false
	}
	name, _, _ := strings.Cut(strings.ToLower(arg[2:]), "=")
	for _, r := range gitRefused {
		if strings.HasPrefix(r, name) || strings.HasPrefix(name, r) {
			return true
		}
	}
	return false
}

// gitDiffIsQuery refuses -o, which (like --output) names a file to write
// on diff, log and show.
func gitDiffIsQuery(args []word) bool {
	for _, a := range args {
		if strings.HasPrefix(a.text, "-o") {
			return false
		}
	}
	return true
}

var gitBranchListing = options("arvilq",
	"all remotes verbose list show-current ignore-case omit-empty no-color no-column no-abbrev "+
		"contains=? no-contains=? merged=? no-merged=? points-at= sort= format= color=? column=? abbrev=")

// gitListForcing are the options that put git branch in list mode, where
// the operands are patterns or commits rather than branches to create.
// -l is not one of them: before git 2.19 it meant --create-reflog.
var gitListForcing = map[string]bool{
	"--list": true, "--contains": true, "--no-contains": true,
	"--merged": true, "--no-merged": true, "--points-at": true,
}

// gitBranchIsListing allows only listing: git branch NAME creates a branch,
// and -d/-D/-m/-M/-c/-C/-u/--edit-description are not in the option list.
func gitBranchIsListing(args []word) bool {
	p, ok := gitBranchListing.parse(args)
	if !ok {
		return false
	}
	if len(p.operands) == 0 {
		return true
	}
	for _, o := range p.options {
		if gitListForcing[o.name] {
			return true
		}
	}
	return false
}

// gitStashIsQuery allows stash list and stash show; bare git stash pushes.
func gitStashIsQuery(args []word) bool {
	if len(args) == 0 {
		return false
	}
	switch sub, _ := asciiLower(args[0].text); sub {
	case "list", "show":
		return gitDiffIsQuery(args[1:])
	}
	return false
}

var gitWorktreeList = options("vz", "porcelain verbose expire=")

func gitWorktreeIsList(args []word) bool {
	if len(args) == 0 {
		return false
	}
	if sub, _ := asciiLower(args[0].text); sub != "list" {
		return false
	}
	p, ok := gitWorktreeList.parse(args[1:])
	return ok && len(p.operands) == 0
}

var (
	gitRemoteShow   = options("n", "")
	gitRemoteGetURL = options("", "push all")
)

// gitRemoteIsQuery allows git remote [-v], and remote show and remote
// get-url of remotes named plainly.
func gitRemoteIsQuery(args []word) bool {
	for len(args) > 0 && (args[0].text == "-v" || args[0].text == "--verbose") {
		args = args[1:]
	}
	if len(args) == 0 {
		return true
	}
	var spec optSpec
	switch sub, _ := asciiLower(args[0].text); sub {
	case "show":
		spec = gitRemoteShow
	case "get-url":
		spec = gitRemoteGetURL
	default:
		return false
	}
	p, ok := spec.parse(args[1:])
	if !ok {
		return false
	}
	for _, o := range p.operands {
		if !isRemoteName(o.text) {
			return false
		}
	}
	return true
}

// isRemoteName accepts a configured remote's name. A URL in its place
// would make git connect to any host the command names.
func isRemoteName(s string) bool {
	if s == "" || s[0] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-_.", c) >= 0) {
			return false
		}
	}
	return true
}

// gitReflogIsQuery refuses reflog expire and delete (and drop, in case a
// later git adds it) anywhere in the arguments.
func gitReflogIsQuery(args []word) bool {
	for _, a := range args {
		switch sub, _ := asciiLower(a.text); sub {
		case "expire", "delete", "drop":
			return false
		}
	}
	return true
}

var gitSymbolicRefQuery = options("q", "quiet short recurse no-recurse")

// gitSymbolicRefIsQuery allows reading one ref: a second operand sets it,
// -d deletes it.
func gitSymbolicRefIsQuery(args []word) bool {
	p, ok := gitSymbolicRefQuery.parse(args)
	return ok && len(p.operands) == 1 && !p.operands[0].uncertain()
}

var gitConfigQuery = options("lz f:",
	"get get-all get-regexp get-urlmatch get-color get-colorbool list "+
		"global system local worktree file= blob= show-origin show-scope name-only null "+
		"includes no-includes type= bool int bool-or-int path expiry-date default=")

// gitConfigActions are the read actions; one of them, or the newer
// spelling git config get|list, must be present, because a bare
// git config NAME VALUE sets.
var gitConfigActions = map[string]bool{
	"--get": true, "--get-all": true, "--get-regexp": true, "--get-urlmatch": true,
	"--get-color": true, "--get-colorbool": true, "--list": true, "-l": true,
}

// gitConfigWriters are git 2.46's writing subcommands. Since it looks for
// a subcommand among the operands even after options, git config --global
// set k v sets; so a first operand naming one is refused even beside --get.
var gitConfigWriters = map[string]bool{
	"set": true, "unset": true, "rename-section": true, "remove-section": true, "edit": true,
}

func gitConfigIsQuery(args []word) bool {
	p, ok := gitConfigQuery.parse(args)
	if !ok {
		return false
	}
	if len(p.operands) > 0 {
		if sub, _ := asciiLower(p.operands[0].text); gitConfigWriters[sub] {
			return false
		}
	}
	for _, o := range p.options {
		if gitConfigActions[o.name] {
			return true
		}
	}
	if len(p.operands) == 0 {
		return false
	}
	sub, _ := asciiLower(p.operands[0].text)
	return sub == "get" || sub == "list"
}
