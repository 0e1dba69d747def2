// Package gitwork is the git layer of a team's queue: a worker machine
// checks a run's branch out (Prepare), commits the workspace (Commit) and
// pushes it only where the branch still is where the run left it (Push),
// so a run moves between machines through its branch and never overwrites
// anyone's commit. It runs the git binary; the repository is a stranger's,
// so no hook of it runs, git never waits for a password, and no argument a
// person gave can be read by git as an option.
package gitwork

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// The sentinels a caller branches on. Each error wraps one of them with
// git's own message cut to one line, so errors.Is decides and the error
// text is what the person reads.
var (
	// ErrUnreachable: clone, fetch or ls-remote failed; the run cannot
	// start on this machine (retrying elsewhere may help).
	ErrUnreachable = errors.New("gitwork: the repository cannot be reached")
	// ErrForeignBranch: the branch holds commits this run did not push, or
	// the run's branch is gone; working on it would lose someone's work.
	ErrForeignBranch = errors.New("gitwork: the branch exists and is not this run's")
	// ErrRejected: someone else moved the branch since the run's last push.
	ErrRejected = errors.New("gitwork: the push was rejected")
	// ErrNoBase: the branch to start a new run's branch from is absent.
	ErrNoBase = errors.New("gitwork: the base branch does not exist")
	// ErrBadBranch: a branch name git would refuse or read as an option;
	// callers check names at submit time with CheckBranch.
	ErrBadBranch = errors.New("gitwork: not a valid branch name")
	// ErrSecret: a commit about to be pushed holds a secret; nothing was
	// pushed (see SecretError).
	ErrSecret = errors.New("gitwork: a commit holds a secret")
	// ErrOwnFolder: a repository's address leads into a folder the caller
	// keeps for itself (see CheckOutside).
	ErrOwnFolder = errors.New("gitwork: the repository is inside the worker's own folder")
)

// waitDelay bounds the wait for git's children (ssh, upload-pack) still
// holding its pipes after the context killed git itself.
const waitDelay = 5 * time.Second

// safety is passed before every git subcommand: no hook of the repository
// (or of a template) ever runs, and local paths work as remotes, submodule
// or not. Config given with -c reaches the git processes git starts.
var safety = []string{
	"-c", "core.hooksPath=/dev/null",
	"-c", "protocol.file.allow=always",
	// A root worker hands each checkout to the user its run runs as; the
	// checkout is still this process's own (its .git is read-only to the
	// run), so git's ownership check has nothing to protect here.
	"-c", "safe.directory=*",
}

// locatingEnv are variables that would point git at another repository
// than the one in dir (set when flower itself runs inside a git hook).
var locatingEnv = []string{
	"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
	"GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_COMMON_DIR", "GIT_NAMESPACE", "GIT_PREFIX",
}

// gitEnv is the environment of every git call: the process's own minus
// locatingEnv, with every way of asking for a password turned into a
// failure (a worker has nobody at its terminal).
func gitEnv() []string {
	var env []string
	hasSSH := false
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if containsString(locatingEnv, name) {
			continue
		}
		hasSSH = hasSSH || name == "GIT_SSH_COMMAND" || name == "GIT_SSH"
		env = append(env, kv)
	}
	env = append(env, "GIT_TERMINAL_PROMPT=0", "GIT_ASKPASS=/bin/false", "SSH_ASKPASS=/bin/false")
	if !hasSSH {
		env = append(env, "GIT_SSH_COMMAND=ssh -o BatchMode=yes")
	}
	return env
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// gitError is a failed git call: its subcommand and git's stderr (the
// paths and names are in the caller's message already).
type gitError struct {
	subcommand string
	stderr     string
	err        error
}

func (e *gitError) Error() string {
	if e.stderr == "" {
		return fmt.Sprintf("git %s: %v", e.subcommand, e.err)
	}
	return fmt.Sprintf("git %s: %s", e.subcommand, e.stderr)
}

// subcommand is the first argument that is neither -c nor its value.
func subcommand(args []string) string {
	for i := 0; i < len(args); i++ {
		if args[i] == "-c" {
			i++
			continue
		}
		return args[i]
	}
	return ""
}

func (e *gitError) Unwrap() error { return e.err }

// git runs git in dir and returns its stdout without the trailing newline.
// A context that ended is the error then, whatever git said.
func git(ctx context.Context, dir string, args ...string) (string, error) {
	return gitWith(ctx, dir, nil, args...)
}

// gitWith is git with extra variables in its environment (GIT_INDEX_FILE
// for a checkpoint's own index).
func gitWith(ctx context.Context, dir string, extra []string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", append(append([]string{}, safety...), args...)...)
	cmd.Dir = dir
	cmd.Env = append(gitEnv(), extra...)
	cmd.WaitDelay = waitDelay
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		return "", fmt.Errorf("gitwork: git %s: %w", subcommand(args), ctx.Err())
	}
	if err != nil {
		return "", &gitError{subcommand: subcommand(args), stderr: oneLine(stderr.String()), err: err}
	}
	return strings.TrimRight(stdout.String(), "\n"), nil
}

// oneLine keeps what git said that matters (hints dropped) on one line of
// at most 300 bytes, so the error fits a status line.
func oneLine(stderr string) string {
	var kept []string
	for _, line := range strings.Split(stderr, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "hint:") {
			continue
		}
		kept = append(kept, line)
	}
	s := strings.Join(kept, "; ")
	if len(s) > 300 {
		s = s[:297] + "..."
	}
	return s
}

// CheckBranch refuses a branch name git would refuse, or one starting with
// '-' that a git command could read as an option.
func CheckBranch(ctx context.Context, name string) error {
	if name == "" || strings.HasPrefix(name, "-") {
		return fmt.Errorf("%w: %q (a branch name is not empty and does not start with '-'; choose another)", ErrBadBranch, name)
	}
	// check-ref-format prints the name it accepted; "@{-1}" and the like
	// would come back as another branch, so the name must return as given.
	out, err := git(ctx, os.TempDir(), "check-ref-format", "--branch", name)
	if ctx.Err() != nil {
		return err
	}
	if err != nil || out != name {
		return fmt.Errorf("%w: %q (git refuses it: no spaces, '..', '~', '^', ':', '?', '*', '[' or '@{'; choose another)", ErrBadBranch, name)
	}
	return nil
}

var commitPattern = regexp.MustCompile(`^[0-9a-f]{40}([0-9a-f]{24})?$`)

// Prepare makes dir a checkout of repo (any git URL or local path) on
// branch, ready for a run, and returns its head commit:
//   - it clones repo into dir when dir has no .git (parent dirs created),
//     else fetches origin with prune, origin set to repo;
//   - when the remote has branch, its head must be pushed (the last commit
//     this run pushed), else ErrForeignBranch naming the branch, its head
//     and what the run last pushed; the branch is checked out at that
//     commit, or at the checkout's own commits on top of it that were never
//     pushed, local changes discarded (reset --hard, clean -fd without -x,
//     so ignored files such as the run's state stay);
//   - when it has not, pushed != "" is ErrForeignBranch too (the run's
//     branch was deleted); else branch is created from origin/<base> (base
//     "" is the remote's default branch); a base that is absent: ErrNoBase;
//   - exclude patterns (flower's own files, "/runs/") are written to
//     .git/info/exclude first, so clean keeps them and Commit never adds them.
func Prepare(ctx context.Context, repo, dir, branch, base, pushed string, exclude []string) (head string, err error) {
	if err := CheckBranch(ctx, branch); err != nil {
		return "", err
	}
	if base != "" {
		if err := CheckBranch(ctx, base); err != nil {
			return "", fmt.Errorf("the base branch: %w", err)
		}
	}
	if pushed != "" && !commitPattern.MatchString(pushed) {
		return "", fmt.Errorf("gitwork: the run's last pushed commit %q is not a full commit id; the run's record is damaged", pushed)
	}
	if repo == "" {
		return "", fmt.Errorf("%w: no repository given; give its URL or path", ErrUnreachable)
	}
	// A relative local path means the caller's directory; origin keeps it
	// absolute, as git runs in dir.
	if _, err := os.Stat(repo); err == nil && !filepath.IsAbs(repo) {
		if repo, err = filepath.Abs(repo); err != nil {
			return "", fmt.Errorf("gitwork: %w", err)
		}
	}
	if err := fetchOrClone(ctx, repo, dir); err != nil {
		return "", err
	}
	if err := writeExclude(ctx, dir, exclude); err != nil {
		return "", err
	}

	remoteHead, err := trackingHead(ctx, dir, branch)
	if err != nil {
		return "", err
	}
	shown := Redact(repo)
	start := remoteHead
	switch {
	case remoteHead != "" && pushed == "":
		return "", fmt.Errorf("%w: %s is at %s on %s and this run never pushed; give the run another branch or delete that one",
			ErrForeignBranch, branch, short(remoteHead), shown)
	case remoteHead != "" && remoteHead != pushed:
		return "", fmt.Errorf("%w: %s is at %s on %s, but this run last pushed %s; someone else pushed to it: look at that commit, then move it aside or give the run another branch",
			ErrForeignBranch, branch, short(remoteHead), shown, short(pushed))
	case remoteHead == "" && pushed != "":
		return "", fmt.Errorf("%w: %s is gone from %s, and this run last pushed %s there; restore the branch at that commit to continue the run",
			ErrForeignBranch, branch, shown, short(pushed))
	case remoteHead == "":
		if start, err = baseHead(ctx, dir, base, repo); err != nil {
			return "", err
		}
	}
	// Commits this checkout made on top of it and could not push (the
	// remote refused, the attempt was lost while it tried) are the run's
	// work: kept, to be pushed by the next save.
	if local, err := git(ctx, dir, "rev-parse", "-q", "--verify", "refs/heads/"+branch); err == nil && local != start && start != "" {
		if _, err := git(ctx, dir, "merge-base", "--is-ancestor", start, local); err == nil {
			start = local
		}
	}
	// -f and reset --hard discard changes to tracked files, clean -fd the
	// untracked ones; -x is not given, so excluded files stay.
	if _, err := git(ctx, dir, "checkout", "-q", "-f", "--no-track", "-B", branch, start, "--"); err != nil {
		return "", fmt.Errorf("gitwork: checking out %s in %s: %w", branch, dir, err)
	}
	if _, err := git(ctx, dir, "reset", "-q", "--hard", start, "--"); err != nil {
		return "", fmt.Errorf("gitwork: resetting %s: %w", dir, err)
	}
	if _, err := git(ctx, dir, "clean", "-q", "-f", "-d"); err != nil {
		return "", fmt.Errorf("gitwork: cleaning %s: %w", dir, err)
	}
	return start, nil
}

// Holds says whether the checkout in dir has commit among the history of
// head: false as well when the commit is not in dir at all (made in
// another machine's checkout and never pushed).
func Holds(ctx context.Context, dir, head, commit string) bool {
	if !commitPattern.MatchString(commit) {
		return false
	}
	_, err := git(ctx, dir, "merge-base", "--is-ancestor", commit, head)
	return err == nil
}

// fetchOrClone brings dir up to date with repo: a clone when dir is not a
// checkout yet, else a fetch of origin (pointed at repo first).
// An http(s) address's password (a token) is kept out of the checkout,
// whose files the run's processes read: origin holds the address without
// it, and git gets it from a file beside the checkout (see
// credentialsFile).
func fetchOrClone(ctx context.Context, repo, dir string) error {
	origin, err := keepCredentials(repo, dir)
	if err != nil {
		return err
	}
	_, statErr := os.Stat(filepath.Join(dir, ".git"))
	if statErr == nil {
		if _, err := git(ctx, dir, "remote", "set-url", "origin", "--", origin); err != nil {
			return fmt.Errorf("gitwork: %s is a checkout without a usable origin (%w); remove it and try again", dir, err)
		}
		if _, err := git(ctx, dir, append(credentialArgs(dir), "fetch", "-q", "--prune", "origin")...); err != nil {
			return unreachable(ctx, repo, err)
		}
		return nil
	}
	if !errors.Is(statErr, os.ErrNotExist) {
		return fmt.Errorf("gitwork: %w", statErr)
	}
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return fmt.Errorf("gitwork: %s holds files but is not a git checkout; remove it or choose another directory", dir)
	}
	if err := os.MkdirAll(filepath.Dir(filepath.Clean(dir)), 0o755); err != nil {
		return fmt.Errorf("gitwork: %w", err)
	}
	// --no-local: a repository on this disk is read through git's
	// transport, not hard-linked file by file. Linking failed when a push
	// rewrote an object meanwhile ("hardlink different from source"), and
	// a linked file is the origin's own, in a folder the run writes.
	if _, err := git(ctx, "", append(credentialArgs(dir), "clone", "-q", "--no-local", "--no-checkout", "--", origin, dir)...); err != nil {
		return unreachable(ctx, repo, err)
	}
	return nil
}

// credentialsFile is where the password of checkout's origin is kept:
// beside the checkout (CHECKOUT.git-credentials), in git's store format,
// mode 0600, out of the folder a run works in.
func credentialsFile(checkout string) string {
	checkout = filepath.Clean(checkout)
	return filepath.Join(filepath.Dir(checkout), filepath.Base(checkout)+".git-credentials")
}

// keepCredentials writes the password of repo (an http(s) URL's) to
// checkout's credentials file and returns the address origin keeps,
// without it; an address with no such password is origin as it is, and
// an earlier file is removed. (A token given as the user alone,
// https://TOKEN@host/…, stays in the address: git asks for a password
// then, which no helper of the worker's gives.)
func keepCredentials(repo, checkout string) (string, error) {
	file := credentialsFile(checkout)
	u, err := url.Parse(repo)
	password, has := "", false
	if err == nil && u.User != nil && (u.Scheme == "http" || u.Scheme == "https") {
		password, has = u.User.Password()
	}
	if !has || password == "" {
		if err := os.Remove(file); err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("gitwork: %w", err)
		}
		return repo, nil
	}
	line := url.URL{Scheme: u.Scheme, User: url.UserPassword(u.User.Username(), password), Host: u.Host}
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		return "", fmt.Errorf("gitwork: %w", err)
	}
	if err := os.WriteFile(file, []byte(line.String()+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("gitwork: %w", err)
	}
	if err := os.Chmod(file, 0o600); err != nil { // WriteFile keeps an older file's mode
		return "", fmt.Errorf("gitwork: %w", err)
	}
	u.User = url.User(u.User.Username())
	return u.String(), nil
}

// credentialArgs are the config a network call of checkout's origin
// needs: git's store helper reading the credentials file, when there is
// one (no other helper of the machine is asked).
func credentialArgs(checkout string) []string {
	file := credentialsFile(checkout)
	if _, err := os.Stat(file); err != nil {
		return nil
	}
	return []string{"-c", "credential.helper=", "-c", "credential.helper=store --file=" + file}
}

// unreachable wraps a failed network call in ErrUnreachable, unless the
// context ended (then that is the error).
func unreachable(ctx context.Context, repo string, err error) error {
	if ctx.Err() != nil {
		return err
	}
	return fmt.Errorf("%w: %s; check the address and that this machine can read it", ErrUnreachable, Mask(repo, fmt.Sprintf("%s: %v", Redact(repo), err)))
}

// repoMask stands for a repository's secret wherever its address is shown.
const repoMask = "xxxxx"

// unparsedUserinfo is the secret of an address url.Parse refuses, or of
// an scp-like one (user:secret@host:path): what lies between the user's
// ':' and the '@' before the host.
var unparsedUserinfo = regexp.MustCompile(`^((?:[A-Za-z][A-Za-z0-9+.-]*://)?[^:/@]*:)([^/@]*)@`)

// secretOf is the secret written in repo's address: a URL's password, or
// the user of an http(s) URL that has no password (a token is often
// written alone: https://TOKEN@host/…), or what unparsedUserinfo finds.
func secretOf(repo string) string {
	if u, err := url.Parse(repo); err == nil && u.Scheme != "" && u.Host != "" {
		if u.User == nil {
			return ""
		}
		if p, has := u.User.Password(); has {
			return p
		}
		if u.Scheme == "http" || u.Scheme == "https" {
			return u.User.Username()
		}
		return ""
	}
	if m := unparsedUserinfo.FindStringSubmatch(repo); m != nil {
		return m[2]
	}
	return ""
}

// Redact is repo's address with its secret (see secretOf) replaced by
// xxxxx, for every listing, message, event and log line: the token in
// https://user:TOKEN@host/app.git is what the remote would give anyone.
func Redact(repo string) string {
	if secretOf(repo) == "" {
		return repo
	}
	if u, err := url.Parse(repo); err == nil && u.Scheme != "" && u.Host != "" {
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), repoMask)
		} else {
			u.User = url.User(repoMask)
		}
		return u.String()
	}
	return unparsedUserinfo.ReplaceAllString(repo, "${1}"+repoMask+"@")
}

// Mask is text with the secret of repo's address hidden wherever it
// appears (git's own messages may quote the address, escaped or not).
func Mask(repo, text string) string {
	secret := secretOf(repo)
	if secret == "" {
		return text
	}
	text = strings.ReplaceAll(text, secret, repoMask)
	if escaped := url.UserPassword("", secret).String(); escaped != ":"+secret {
		text = strings.ReplaceAll(text, strings.TrimPrefix(escaped, ":"), repoMask)
	}
	return text
}

// CheckOutside refuses (ErrOwnFolder) a repository whose address leads
// into folder or is folder itself: a local path (relative ones from the
// current directory, as Prepare reads them) or a file:// URL, read as the
// kernel reads it (symlinks followed before "..", as git would open it),
// with the names git also tries (REPO.git, REPO/.git) and where a .git
// file points (gitdir:). A remote address (another scheme, scp-like
// host:path) is never inside. A worker calls it before it clones a run's
// repository, folder being its --dir: a run must not take another run's
// checkout, unpushed work and all, for its repository.
func CheckOutside(repo, folder string) error {
	own := resolvePath(folder)
	for _, p := range localPaths(repo) {
		for _, candidate := range []string{p, p + ".git", p + string(filepath.Separator) + ".git", gitdirOf(p)} {
			if candidate == "" {
				continue
			}
			at := resolvePath(candidate)
			if rel, err := filepath.Rel(own, at); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
				return fmt.Errorf("%w: %s leads to %s, inside %s (another run's checkout or the worker's own files); give the repository's shared address",
					ErrOwnFolder, Redact(repo), at, own)
			}
		}
	}
	return nil
}

// localPaths are the folders a local repository address may name: the
// path as given, and for a file:// URL its path both decoded and not.
// A remote address has none.
func localPaths(repo string) []string {
	if scheme, rest, ok := strings.Cut(repo, "://"); ok && !strings.Contains(scheme, "/") {
		if !strings.EqualFold(scheme, "file") {
			return nil
		}
		// file://host/path: git takes the path from the first '/'.
		raw := rest
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			raw = rest[i:]
		}
		paths := []string{raw}
		if decoded, err := url.PathUnescape(raw); err == nil && decoded != raw {
			paths = append(paths, decoded)
		}
		return paths
	}
	// git reads a ':' before any '/' as scp-like host:path.
	if colon := strings.IndexByte(repo, ':'); colon >= 0 && !strings.Contains(repo[:colon], "/") {
		return nil
	}
	if repo == "" {
		return nil
	}
	return []string{repo}
}

// gitdirOf is where a .git file in p points ("" when there is none).
func gitdirOf(p string) string {
	data, err := os.ReadFile(filepath.Join(p, ".git"))
	if err != nil {
		return ""
	}
	dir, ok := strings.CutPrefix(strings.TrimSpace(string(data)), "gitdir:")
	if !ok {
		return ""
	}
	dir = strings.TrimSpace(dir)
	if !filepath.IsAbs(dir) {
		dir = p + string(filepath.Separator) + dir
	}
	return dir
}

// resolvePath is p made absolute and its symlinks followed as the kernel
// follows them (".." after a symlink leaves the link's target): the
// longest part of it that exists resolved, the rest (which holds no
// symlink, being absent) cleaned onto it.
func resolvePath(p string) string {
	if !filepath.IsAbs(p) {
		if wd, err := os.Getwd(); err == nil {
			p = wd + string(filepath.Separator) + p
		}
	}
	var rest []string
	for cur := p; ; {
		if real, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(append([]string{real}, rest...)...)
		}
		i := strings.LastIndexByte(cur, filepath.Separator)
		if i <= 0 {
			return filepath.Clean(p)
		}
		rest = append([]string{cur[i+1:]}, rest...)
		cur = cur[:i]
	}
}

// writeExclude replaces info/exclude with patterns: dir is flower's own
// checkout, so the file holds flower's patterns and nothing else.
func writeExclude(ctx context.Context, dir string, patterns []string) error {
	for _, p := range patterns {
		if strings.ContainsAny(p, "\n\r") {
			return fmt.Errorf("gitwork: exclude pattern %q spans lines; give one pattern per entry", p)
		}
	}
	path, err := git(ctx, dir, "rev-parse", "--git-path", "info/exclude")
	if err != nil {
		return fmt.Errorf("gitwork: finding info/exclude in %s: %w", dir, err)
	}
	if !filepath.IsAbs(path) {
		path = filepath.Join(dir, path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("gitwork: %w", err)
	}
	text := "# Written by flower: its own files, never committed.\n" + strings.Join(patterns, "\n") + "\n"
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		return fmt.Errorf("gitwork: %w", err)
	}
	return nil
}

// trackingHead is origin's branch as the last fetch saw it ("" if absent).
func trackingHead(ctx context.Context, dir, branch string) (string, error) {
	out, err := git(ctx, dir, "rev-parse", "-q", "--verify", "refs/remotes/origin/"+branch+"^{commit}")
	if exitCode(err) == 1 { // --verify -q: the ref does not exist
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("gitwork: reading origin/%s in %s: %w", branch, dir, err)
	}
	return out, nil
}

// exitCode is git's exit status in err, or -1 when git did not exit.
func exitCode(err error) int {
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		return exitErr.ExitCode()
	}
	return -1
}

// baseHead is the commit a new branch starts from: origin's base, or
// origin's default branch when base is "".
func baseHead(ctx context.Context, dir, base, repo string) (string, error) {
	if base == "" {
		var err error
		if base, err = defaultBranch(ctx, dir, repo); err != nil {
			return "", err
		}
	}
	head, err := trackingHead(ctx, dir, base)
	if err != nil {
		return "", err
	}
	if head == "" {
		return "", fmt.Errorf("%w: %s has no branch %s; give an existing branch to start from", ErrNoBase, Redact(repo), base)
	}
	return head, nil
}

// defaultBranch is the branch origin's HEAD names: from origin/HEAD, which
// a clone sets, else asked of the remote (a fetch does not set it).
func defaultBranch(ctx context.Context, dir, repo string) (string, error) {
	if ref, err := git(ctx, dir, "symbolic-ref", "-q", "refs/remotes/origin/HEAD"); err == nil && ref != "" {
		return strings.TrimPrefix(ref, "refs/remotes/origin/"), nil
	}
	out, err := git(ctx, dir, append(credentialArgs(dir), "ls-remote", "--symref", "origin", "HEAD")...)
	if err != nil {
		return "", unreachable(ctx, repo, err)
	}
	for _, line := range strings.Split(out, "\n") {
		target, ok := strings.CutPrefix(line, "ref: refs/heads/")
		if name, isHead := strings.CutSuffix(target, "\tHEAD"); ok && isHead {
			return name, nil
		}
	}
	return "", fmt.Errorf("%w: %s has no default branch (an empty repository?); push a first commit or give the branch to start from", ErrNoBase, Redact(repo))
}

// Commit commits everything in dir's work tree that changed (git add -A,
// so excluded files stay out) with message, as "flower"
// <flower@HOSTNAME> given with -c, so the machine needs no git identity.
// Nothing changed: changed is false, head the current commit, and no
// empty commit is made.
func Commit(ctx context.Context, dir, message string) (head string, changed bool, err error) {
	if strings.TrimSpace(message) == "" {
		return "", false, errors.New("gitwork: a commit needs a message; give one")
	}
	if _, err := git(ctx, dir, "add", "-A"); err != nil {
		return "", false, fmt.Errorf("gitwork: adding the changes in %s: %w", dir, err)
	}
	_, err = git(ctx, dir, "diff", "--cached", "--quiet")
	switch {
	case err == nil:
		head, err = git(ctx, dir, "rev-parse", "HEAD")
		if err != nil {
			return "", false, fmt.Errorf("gitwork: reading the head of %s: %w", dir, err)
		}
		return head, false, nil
	case exitCode(err) != 1: // 1: the index differs from HEAD
		return "", false, fmt.Errorf("gitwork: comparing %s with its head: %w", dir, err)
	}
	host, herr := os.Hostname()
	if herr != nil || host == "" {
		host = "localhost"
	}
	if _, err := git(ctx, dir,
		"-c", "user.name=flower", "-c", "user.email=flower@"+host, "-c", "commit.gpgsign=false",
		"commit", "-q", "--no-verify", "-m", message); err != nil {
		return "", false, fmt.Errorf("gitwork: committing in %s: %w", dir, err)
	}
	head, err = git(ctx, dir, "rev-parse", "HEAD")
	if err != nil {
		return "", false, fmt.Errorf("gitwork: reading the head of %s: %w", dir, err)
	}
	return head, true, nil
}

// Secret is a value no pushed commit may hold: a key, a password, a token.
type Secret struct {
	// Kind names it in a refusal, the value never: "the model's API key
	// (ANTHROPIC_API_KEY)".
	Kind  string
	Value string
}

// minSecretLen keeps a value too short to be a real secret ("x", "test")
// from refusing every push that happens to contain it.
const minSecretLen = 8

// SecretError is a push refused because a commit holds a secret: which
// kind, in which commit and file (the value is never in it).
type SecretError struct {
	Kind   string
	Commit string
	File   string
}

func (e *SecretError) Error() string {
	return fmt.Sprintf("%v: commit %s adds %s in %s; nothing was pushed", ErrSecret, short(e.Commit), e.Kind, e.File)
}

func (e *SecretError) Unwrap() error { return ErrSecret }

// FindSecret looks through what a push of HEAD would send (the commits no
// ref of origin's holds, as the last fetch or push saw them: a stale ref
// only means more is looked at) for secrets, and returns a *SecretError
// for the first line one is added in (or a file named with one), nil when
// none is. The secret of origin's own address (a token in its URL) is
// always looked for. It reads every commit, not only the last tree: a
// secret added and removed again is still in the history pushed.
func FindSecret(ctx context.Context, dir string, secrets []Secret) error {
	return findSecretIn(ctx, dir, "HEAD", secrets)
}

// findSecretIn is FindSecret of what a push of rev would send.
func findSecretIn(ctx context.Context, dir, rev string, secrets []Secret) error {
	if origin, err := git(ctx, dir, "remote", "get-url", "origin"); err == nil && secretOf(origin) != "" {
		secrets = append(secrets, Secret{Kind: "the repository's token (in origin's address)", Value: secretOf(origin)})
	}
	if kept, err := os.ReadFile(credentialsFile(dir)); err == nil {
		for _, line := range strings.Fields(string(kept)) {
			if secret := secretOf(line); secret != "" {
				secrets = append(secrets, Secret{Kind: "the repository's token", Value: secret})
			}
		}
	}
	var looked []Secret
	for _, s := range secrets {
		if len(s.Value) >= minSecretLen {
			looked = append(looked, s)
		}
	}
	if len(looked) == 0 {
		return nil
	}
	// Every added line of every commit, as text (binary files too), with
	// neither the repository's diff drivers nor its text conversions.
	cmd := exec.CommandContext(ctx, "git", append(append([]string{}, safety...),
		"-c", "core.quotePath=false", "log", "-p", "--no-color", "--no-ext-diff", "--no-textconv", "--text", "--no-renames",
		"--unified=0", "--format=commit %H", rev, "--not", "--remotes=origin", "--")...)
	cmd.Dir, cmd.Env, cmd.WaitDelay = dir, gitEnv(), waitDelay
	out, err := cmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("gitwork: %w", err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("gitwork: %w", err)
	}
	found := scanAdded(bufio.NewReaderSize(out, 64<<10), looked)
	if found != nil {
		_ = cmd.Process.Kill()
	}
	waitErr := cmd.Wait()
	switch {
	case found != nil:
		return found
	case ctx.Err() != nil:
		return fmt.Errorf("gitwork: looking for secrets in %s: %w", dir, ctx.Err())
	case waitErr != nil:
		return fmt.Errorf("gitwork: looking for secrets in %s: %w", dir, &gitError{subcommand: "log", stderr: oneLine(stderr.String()), err: waitErr})
	}
	return nil
}

// scanAdded reads git log -p output and returns where a secret is first
// added. A line of a hunk starts with '+', '-', ' ' or '\', so a line
// starting "commit " or "diff --git " always opens a commit or a file.
func scanAdded(r *bufio.Reader, secrets []Secret) *SecretError {
	var commit, file string
	inHunk := false
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 {
			line = bytes.TrimSuffix(line, []byte("\n"))
			switch {
			case bytes.HasPrefix(line, []byte("commit ")):
				commit, file, inHunk = string(line[len("commit "):]), "", false
			case bytes.HasPrefix(line, []byte("diff --git ")):
				file, inHunk = "", false
			case !inHunk && bytes.HasPrefix(line, []byte("+++ ")):
				file = strings.TrimPrefix(strings.Trim(string(line[len("+++ "):]), `"`), "b/")
				for _, s := range secrets {
					if strings.Contains(file, s.Value) {
						return &SecretError{Kind: s.Kind, Commit: commit, File: "a file's name"}
					}
				}
			case bytes.HasPrefix(line, []byte("@@")):
				inHunk = true
			case inHunk && len(line) > 0 && line[0] == '+':
				for _, s := range secrets {
					if bytes.Contains(line, []byte(s.Value)) {
						return &SecretError{Kind: s.Kind, Commit: commit, File: file}
					}
				}
			}
		}
		if err != nil {
			return nil
		}
	}
}

// Push pushes HEAD to origin's branch only if origin's branch is still at
// expect ("" = it must not exist yet): --force-with-lease with that value,
// so a concurrent push by anyone is never overwritten. Before it, the
// commits to be pushed are searched for secrets (FindSecret): one found is
// a *SecretError (ErrSecret) and nothing is pushed. ErrRejected when the
// branch moved; ErrUnreachable when origin cannot be asked.
func Push(ctx context.Context, dir, branch, expect string, secrets []Secret) error {
	if err := CheckBranch(ctx, branch); err != nil {
		return err
	}
	if expect != "" && !commitPattern.MatchString(expect) {
		return fmt.Errorf("gitwork: the expected head %q is not a full commit id; the run's record is damaged", expect)
	}
	if err := FindSecret(ctx, dir, secrets); err != nil {
		return err
	}
	ref := "refs/heads/" + branch
	_, pushErr := git(ctx, dir, append(credentialArgs(dir), "push", "-q", "--no-verify", "--force-with-lease="+ref+":"+expect, "origin", "HEAD:"+ref)...)
	if pushErr == nil || ctx.Err() != nil {
		return pushErr
	}
	// Decide by what origin holds, not by git's wording.
	remote, err := RemoteHead(ctx, dir, branch)
	if err != nil {
		return err
	}
	if local, err := git(ctx, dir, "rev-parse", "HEAD"); err == nil && remote == local {
		return nil // pushed before, only the answer was lost
	}
	if remote != "" && remote != expect && ownEarlier(ctx, dir, remote) {
		// This checkout's own earlier push, whose record was lost (the
		// push went through, the caller's note of it did not): the work
		// goes on from there.
		_, err := git(ctx, dir, append(credentialArgs(dir), "push", "-q", "--no-verify", "--force-with-lease="+ref+":"+remote, "origin", "HEAD:"+ref)...)
		return err
	}
	if remote != expect {
		was := "absent"
		if expect != "" {
			was = "at " + short(expect)
		}
		now := "deleted"
		if remote != "" {
			now = "at " + short(remote)
		}
		return fmt.Errorf("%w: %s was %s when this run last looked and is now %s; someone else pushed to it, look at their commit before going on",
			ErrRejected, branch, was, now)
	}
	return fmt.Errorf("gitwork: pushing %s: %w; check that this machine may push to origin", branch, pushErr)
}

// ownEarlier says commit is in HEAD's history: pushed from this checkout
// (or one that shares its history), never someone else's work.
func ownEarlier(ctx context.Context, dir, commit string) bool {
	if !commitPattern.MatchString(commit) {
		return false
	}
	_, err := git(ctx, dir, "merge-base", "--is-ancestor", commit, "HEAD")
	return err == nil
}

// RemoteHead is origin's branch head ("" when absent), asked of origin
// with ls-remote: the local tracking ref may be stale.
func RemoteHead(ctx context.Context, dir, branch string) (string, error) {
	if err := CheckBranch(ctx, branch); err != nil {
		return "", err
	}
	return RemoteRef(ctx, dir, "refs/heads/"+branch)
}

// short is a commit id as people read it.
func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
