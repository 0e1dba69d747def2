package ephemeral

import "strings"

// gitSubcommands are the queries git may run, each with the rule for its
// arguments. Subcommands are matched exactly as spelled: git runs an
// alias of a repository's config for any spelling that is not exactly a
// builtin's ("git Status" runs alias.Status), and a cloned repository can
// bring its config (a folder laid out as a bare repository survives a
// clone). So no alias is reachable: -c is refused, and a builtin's exact
// name always wins over an alias of that name.
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
	"ls-tree":      allows(gitLsTreeOptions),
	"rev-list":     gitRevListIsQuery,
	"merge-base":   allows(gitMergeBaseOptions),
	"grep":         gitGrepIsQuery,
	"tag":          gitTagIsListing,
	"show-ref":     allows(gitShowRefOptions),
	"version":      allows(gitVersionOptions),
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
	if len(args) == 1 && args[0].text == "--version" {
		return true
	}
	args, ok := skipGitGlobals(args)
	if !ok || len(args) == 0 {
		return false
	}
	sub := args[0].text
	rule, ok := gitSubcommands[sub]
	if !ok || args[0].uncertain() {
		return false
	}
	for _, a := range args[1:] {
		if gitOptionRefused(a.text) {
			return false
		}
	}
	if !gitKeepsTheIndex(sub, args[1:]) {
		return false
	}
	return rule(args[1:])
}

// gitKeepsTheIndex refuses the queries that write even with
// GIT_OPTIONAL_LOCKS=0 (seen with git 2.39): git describe --dirty and
// --broken refresh .git/index; git log, show and whatchanged
// --show-signature run gpg, which creates ~/.gnupg. git diff against the
// working tree refreshes the index too, but stays a glance (the seed's own
// compound is git status && git diff --stat): see RefreshesIndex.
func gitKeepsTheIndex(sub string, args []word) bool {
	for _, a := range args {
		name, _, _ := strings.Cut(a.text, "=")
		switch sub {
		case "describe":
			if name == "--dirty" || name == "--broken" {
				return false
			}
		case "log", "show", "whatchanged":
			if len(name) > 4 && strings.HasPrefix("--show-signature", name) {
				return false
			}
		}
	}
	return true
}

// RefreshesIndex reports whether cmd runs a git diff that compares with
// the working tree (no --cached or --staged, fewer than two revisions),
// which rewrites .git/index's stat cache even with GIT_OPTIONAL_LOCKS=0.
// Is accepts it: in the glance sandbox the write fails unseen and the
// output is the same; where no sandbox runs, the wall refuses it. A
// command that cannot be read counts as refreshing.
func RefreshesIndex(cmd string) bool {
	segments, ok := split(strings.Trim(cmd, " \t\n"))
	if !ok {
		return true
	}
	for _, s := range segments {
		if len(s.words) == 0 {
			continue
		}
		if name, _ := asciiLower(s.words[0].text); name != "git" {
			continue
		}
		args, ok := skipGitGlobals(s.words[1:])
		if !ok || len(args) == 0 || args[0].text != "diff" {
			continue
		}
		if !gitDiffLeavesTheIndex(args[1:]) {
			return true
		}
	}
	return false
}

// gitDiffLeavesTheIndex: --cached/--staged, or two revisions (A B, A..B,
// A...B), compare no working tree.
func gitDiffLeavesTheIndex(args []word) bool {
	revs := 0
	for _, a := range args {
		switch {
		case a.text == "--":
			return revs >= 2
		case a.text == "--cached" || a.text == "--staged":
			return true
		case strings.HasPrefix(a.text, "-"):
		case strings.Contains(a.text, ".."):
			revs += 2
		default:
			revs++
		}
	}
	return revs >= 2
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

// gitReflogIsQuery allows git reflog [show|list|exists] and, as show, a
// first argument that is an option. A first word git might take for
// another subcommand is refused (expire and delete write, a later git may
// add more), and so are expire, delete and drop anywhere, and words the
// shell expands: e"$X"pire or ex*e may become expire.
func gitReflogIsQuery(args []word) bool {
	for _, a := range args {
		if a.uncertain() {
			return false
		}
		switch sub, _ := asciiLower(a.text); sub {
		case "expire", "delete", "drop":
			return false
		}
	}
	if len(args) == 0 || strings.HasPrefix(args[0].text, "-") {
		return gitDiffIsQuery(args)
	}
	switch args[0].text {
	case "show", "list", "exists":
		return gitDiffIsQuery(args[1:])
	}
	return false
}

var gitSymbolicRefQuery = options("q", "quiet short recurse no-recurse")

// gitSymbolicRefIsQuery allows reading one ref: a second operand sets it,
// -d deletes it.
func gitSymbolicRefIsQuery(args []word) bool {
	p, ok := gitSymbolicRefQuery.parse(args)
	return ok && len(p.operands) == 1 && !p.operands[0].uncertain()
}

// gitConfigLegacy are the options of git config before git 2.46's
// subcommands, without the writing actions. git reads them only up to
// the first operand (git config NAME VALUE --get sets NAME).
var gitConfigLegacy = options("lz f:t:",
	"get get-all get-regexp get-urlmatch get-color get-colorbool list "+
		"global system local worktree file= blob= show-origin show-scope name-only null "+
		"includes no-includes type= bool int bool-or-int bool-or-str path expiry-date default= fixed-value").stopAtOperand()

// gitConfigActions are the read actions and the most operands each takes.
var gitConfigActions = map[string]int{
	"--get": 2, "--get-all": 2, "--get-regexp": 2, "--get-urlmatch": 2,
	"--get-color": 2, "--get-colorbool": 2, "--list": 0, "-l": 0,
}

// gitConfigRead are the options of git config get and git config list
// (git 2.46 and later).
var gitConfigRead = options("z f:t:",
	"global system local worktree file= blob= show-origin show-scope name-only null "+
		"includes no-includes type= bool int bool-or-int bool-or-str path expiry-date "+
		"all regexp value= fixed-value url= default=").stopAtOperand()

// gitConfigIsQuery allows git config with exactly one read action before
// any operand and no more operands than it takes, or git config get NAME
// and git config list. Every word must be written plainly: a word that
// matched none of these by its text might still be one when bash expands
// it.
func gitConfigIsQuery(args []word) bool {
	for _, a := range args {
		if a.uncertain() {
			return false
		}
	}
	if len(args) > 0 {
		switch args[0].text {
		case "get", "list":
			p, ok := gitConfigRead.parse(args[1:])
			if args[0].text == "get" {
				return ok && len(p.operands) == 1
			}
			return ok && len(p.operands) == 0
		}
	}
	p, ok := gitConfigLegacy.parse(args)
	if !ok {
		return false
	}
	most, actions := 0, 0
	for _, o := range p.options {
		if n, isAction := gitConfigActions[o.name]; isAction {
			most, actions = n, actions+1
		}
	}
	if actions != 1 || len(p.operands) > most {
		return false
	}
	// git 2.46 looks for a subcommand among the operands even after
	// options: git config --global set k v sets.
	for _, o := range p.operands {
		if gitConfigSubcommands[o.text] {
			return false
		}
	}
	return true
}

// gitConfigSubcommands are git 2.46's config subcommands.
var gitConfigSubcommands = map[string]bool{
	"get": true, "list": true, "set": true, "unset": true, "rename-section": true,
	"remove-section": true, "edit": true,
}

var (
	gitLsTreeOptions = options("drtlz",
		"name-only name-status object-only full-name full-tree long abbrev=? format=")
	gitMergeBaseOptions = options("a", "all octopus independent is-ancestor fork-point")
	gitShowRefOptions   = options("dsq",
		"head heads tags branches dereference hash=? abbrev=? verify quiet exists")
	gitVersionOptions = options("", "build-options")
)

// gitRevListOptions are rev-list's common selection and output options.
var gitRevListOptions = options("n:",
	"all branches=? tags=? remotes=? glob= not count max-count= skip= since= after= until= before= "+
		"author= committer= grep= all-match invert-grep regexp-ignore-case extended-regexp fixed-strings "+
		"merges no-merges min-parents= max-parents= first-parent ancestry-path left-right left-only right-only "+
		"cherry-pick cherry-mark boundary topo-order date-order author-date-order reverse "+
		"objects objects-edge no-walk=? do-walk parents children timestamp quiet "+
		"abbrev-commit abbrev=? oneline format= pretty=? header date= simplify-by-decoration")

// gitRevListIsQuery allows rev-list with the options above and -NUMBER.
func gitRevListIsQuery(args []word) bool {
	_, ok := gitRevListOptions.parse(withoutCounts(args))
	return ok
}

// withoutCounts drops -NUMBER words (git log -5, git grep -3), which
// getopt-style tables cannot express.
func withoutCounts(args []word) []word {
	out := make([]word, 0, len(args))
	for _, a := range args {
		if len(a.text) > 1 && a.text[0] == '-' && isDigits(a.text[1:]) {
			continue
		}
		out = append(out, a)
	}
	return out
}

// gitGrepOptions leave out -O/--open-files-in-pager (runs a pager
// program) and --ext-grep; -f reads patterns from a file, which the
// device rule checks.
var gitGrepOptions = options("nlLchHivwxEFGPoqzIWpa e:f:A:B:C:m:",
	"line-number column files-with-matches name-only files-without-match count no-filename "+
		"ignore-case invert-match word-regexp line-regexp extended-regexp fixed-strings "+
		"basic-regexp perl-regexp only-matching quiet null text function-context show-function "+
		"heading break full-name cached untracked no-index exclude-standard no-exclude-standard "+
		"recurse-submodules all-match and or not color=? no-color max-depth= max-count= threads= "+
		"context= after-context= before-context= textconv no-textconv")

func gitGrepIsQuery(args []word) bool {
	_, ok := gitGrepOptions.parse(withoutCounts(args))
	return ok
}

// gitTagListing are git tag's listing options; -l/--list must be among
// them (or no argument at all), since git tag NAME creates a tag.
var gitTagListing = options("li n::",
	"list ignore-case omit-empty sort= format= contains=? no-contains=? merged=? no-merged=? "+
		"points-at= column=? no-column color=? no-color")

func gitTagIsListing(args []word) bool {
	if len(args) == 0 {
		return true
	}
	p, ok := gitTagListing.parse(args)
	return ok && (hasOption(p, "-l") || hasOption(p, "--list"))
}
