package flower

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

// credentialKeys are the keys flower cares about, and the only ones it
// borrows from ~/.claude/settings.json. Other .env keys load too.
var credentialKeys = []string{
	"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL",
	"ANTHROPIC_MODEL", "ANTHROPIC_DEFAULT_OPUS_MODEL",
	"ANTHROPIC_DEFAULT_SONNET_MODEL", "ANTHROPIC_DEFAULT_HAIKU_MODEL",
	"CLAUDE_CODE_SUBAGENT_MODEL", "CLAUDE_CODE_EFFORT_LEVEL",
}

// CredentialKeys returns the nine credential and endpoint keys, in order.
func CredentialKeys() []string { return append([]string(nil), credentialKeys...) }

// Environment is where LoadDotenv looks and what it fills. Each zero field
// means the process's own: os.LookupEnv, os.Setenv, the user's home
// directory, the working directory, the running executable. Tests fill
// them to stay off the real environment.
type Environment struct {
	LookupEnv func(key string) (string, bool)
	Setenv    func(key, value string) error
	// Home is the home directory (for ~/.config and ~/.claude).
	Home string
	// Cwd is the directory whose .env is read.
	Cwd string
	// Executable is the flower binary's path; the .env beside it (after
	// symlinks) is the installation's.
	Executable string
	// Lang is the language of the messages (CheckCredentials' error,
	// DescribeCredentials); "" means English.
	Lang Lang
}

func (e Environment) lookup(k string) (string, bool) {
	if e.LookupEnv != nil {
		return e.LookupEnv(k)
	}
	return os.LookupEnv(k)
}

func (e Environment) getenv(k string) string {
	v, _ := e.lookup(k)
	return v
}

func (e Environment) setenv(k, v string) error {
	if e.Setenv != nil {
		return e.Setenv(k, v)
	}
	return os.Setenv(k, v)
}

func (e Environment) home() string {
	if e.Home != "" {
		return e.Home
	}
	h, _ := os.UserHomeDir()
	return h
}

// UserEnvPath is the per-user credentials file that `flower setup` writes:
// ${XDG_CONFIG_HOME:-~/.config}/flower/.env.
func UserEnvPath() string { return Environment{}.UserEnvPath() }

// UserEnvPath is the per-user credentials file in this environment. A
// relative XDG_CONFIG_HOME is ignored, as the XDG spec says; with no home
// directory either, the path is shown as ~/.config/flower/.env.
func (e Environment) UserEnvPath() string {
	base := e.getenv("XDG_CONFIG_HOME")
	if !filepath.IsAbs(base) {
		home := e.home()
		if home == "" {
			home = "~"
		}
		base = filepath.Join(home, ".config")
	}
	return filepath.Join(base, "flower", ".env")
}

// DotenvPaths are the .env files of the standard chain, in precedence
// order (they need not exist): $FLOWER_ENV, ./.env, the per-user file, and
// the installation's .env beside the executable.
func DotenvPaths() []string { return Environment{}.DotenvPaths() }

// DotenvPaths are the .env files of the standard chain in this environment.
func (e Environment) DotenvPaths() []string {
	var paths []string
	if p := e.getenv("FLOWER_ENV"); p != "" {
		paths = append(paths, p)
	}
	cwd := e.Cwd
	if cwd == "" {
		cwd, _ = os.Getwd()
	}
	if cwd != "" {
		paths = append(paths, filepath.Join(cwd, ".env"))
	}
	if p := e.UserEnvPath(); filepath.IsAbs(p) {
		paths = append(paths, p)
	}
	exe := e.Executable
	if exe == "" {
		exe, _ = os.Executable()
	}
	if exe != "" {
		if real, err := filepath.EvalSymlinks(exe); err == nil {
			exe = real
		}
		paths = append(paths, filepath.Join(filepath.Dir(exe), ".env"))
	}
	// One file reached two ways is read once.
	seen := map[string]bool{}
	out := paths[:0]
	for _, p := range paths {
		abs, err := filepath.Abs(p)
		if err != nil {
			abs = p
		}
		if !seen[abs] {
			seen[abs] = true
			out = append(out, p)
		}
	}
	return out
}

// WorkspaceEnvKeys are the only keys a workspace .env (the one in the
// directory flower starts in) may set: a key or token and the models. A
// folder flower did not get from the user (a cloned repository) must not
// decide where requests go (ANTHROPIC_BASE_URL), which program runs
// (FLOWER_CLAUDE, PATH, NODE_OPTIONS…) or what command runs
// (FLOWER_NOTIFY): the user's key would follow the repository's URL, and
// the repository's program would run with it. So the base URL and every
// other variable come only from the user: the environment, $FLOWER_ENV,
// the per-user file, the installation's .env, ~/.claude/settings.json.
// Nothing the user set is ever sent to an address the workspace chose.
var WorkspaceEnvKeys = []string{
	"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN",
	"ANTHROPIC_MODEL", "ANTHROPIC_DEFAULT_OPUS_MODEL",
	"ANTHROPIC_DEFAULT_SONNET_MODEL", "ANTHROPIC_DEFAULT_HAIKU_MODEL",
	"CLAUDE_CODE_SUBAGENT_MODEL", "CLAUDE_CODE_EFFORT_LEVEL",
}

// DotenvReport says what LoadDotenv did.
type DotenvReport struct {
	// Loaded maps each key this call set to the file it came from.
	Loaded map[string]string
	// Files are the files read, in order.
	Files []string
	// Warnings are lines and files that were skipped, as "file:line: why".
	// They never stop the load.
	Warnings []string
	// Workspace is the workspace .env when one was read, "" otherwise.
	Workspace string
	// WorkspaceUsed are the keys the workspace .env set, in file order.
	WorkspaceUsed []string
	// WorkspaceIgnored are the keys the workspace .env holds that it may
	// not set (see WorkspaceEnvKeys), in file order.
	WorkspaceIgnored []string
}

// workspaceEnv is the workspace .env's absolute path, or "" when it is
// one of the user's own files too ($FLOWER_ENV, the per-user file).
func (e Environment) workspaceEnv() string {
	cwd := e.Cwd
	if cwd == "" {
		cwd, _ = os.Getwd()
	}
	if cwd == "" {
		return ""
	}
	ws := absPath(filepath.Join(cwd, ".env"))
	for _, p := range []string{e.getenv("FLOWER_ENV"), e.UserEnvPath()} {
		if p != "" && sameFile(ws, absPath(p)) {
			return ""
		}
	}
	return ws
}

func absPath(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}

// sameFile reports whether a and b name one file: the same path, or, both
// existing, the same inode.
func sameFile(a, b string) bool {
	if a == b {
		return true
	}
	fa, errA := os.Stat(a)
	fb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(fa, fb)
}

// LoadDotenv fills the process environment from .env files; see
// Environment.LoadDotenv.
func LoadDotenv(paths ...string) (DotenvReport, error) { return Environment{}.LoadDotenv(paths...) }

// LoadDotenv fills the environment from .env files. Per key the first value
// wins and a value already in the environment is never overwritten, so the
// order is the precedence: the process environment, then with no paths the
// standard chain (DotenvPaths: $FLOWER_ENV, ./.env, the per-user file, the
// installation's), then, as the last fallback, the env blocks of
// ~/.claude/settings.json and settings.local.json, for the nine
// CredentialKeys only. Given paths, it reads only those files.
//
// The workspace .env (./.env, unless it is the user's own $FLOWER_ENV or
// per-user file) sets only WorkspaceEnvKeys; its other keys are skipped
// and listed in the report's WorkspaceIgnored.
//
// An empty value claims its key (later files cannot fill it) yet counts as
// missing for CheckCredentials. Malformed lines and unreadable files are
// skipped with a warning; the error reports only values that could not be
// set.
func (e Environment) LoadDotenv(paths ...string) (DotenvReport, error) {
	rep := DotenvReport{Loaded: map[string]string{}}
	var errs []error
	take := func(k, v, from string) {
		if _, set := e.lookup(k); set {
			return
		}
		if err := e.setenv(k, v); err != nil {
			errs = append(errs, fmt.Errorf("flower: set %s from %s: %w", k, from, err))
			return
		}
		rep.Loaded[k] = from
	}
	explicit := len(paths) > 0
	workspace := ""
	if !explicit {
		paths = e.DotenvPaths()
		workspace = e.workspaceEnv()
	}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			if explicit || !errors.Is(err, fs.ErrNotExist) {
				rep.Warnings = append(rep.Warnings, fmt.Sprintf("%s: not read: %v", p, unwrapPath(err)))
			}
			continue
		}
		rep.Files = append(rep.Files, p)
		entries, warns := ParseDotenv(p, data)
		rep.Warnings = append(rep.Warnings, warns...)
		fromWorkspace := workspace != "" && sameFile(absPath(p), workspace)
		if fromWorkspace {
			rep.Workspace = p
		}
		for _, en := range entries {
			if fromWorkspace && !slices.Contains(WorkspaceEnvKeys, en.Key) {
				if !slices.Contains(rep.WorkspaceIgnored, en.Key) {
					rep.WorkspaceIgnored = append(rep.WorkspaceIgnored, en.Key)
				}
				continue
			}
			take(en.Key, en.Value, p)
			if fromWorkspace && rep.Loaded[en.Key] == p && !slices.Contains(rep.WorkspaceUsed, en.Key) {
				rep.WorkspaceUsed = append(rep.WorkspaceUsed, en.Key)
			}
		}
	}
	if home := e.home(); !explicit && home != "" {
		for _, name := range []string{"settings.json", "settings.local.json"} {
			p := filepath.Join(home, ".claude", name)
			env, warn := claudeSettingsEnv(p)
			if warn != "" {
				rep.Warnings = append(rep.Warnings, warn)
			}
			if env != nil {
				rep.Files = append(rep.Files, p)
			}
			for _, k := range credentialKeys {
				if v := env[k]; v != "" {
					take(k, v, p)
				}
			}
		}
	}
	return rep, errors.Join(errs...)
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// claudeSettingsEnv reads the env block of a Claude Code settings file:
// nil when the file is missing, with a warning when it cannot be read.
func claudeSettingsEnv(path string) (map[string]string, string) {
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, ""
		}
		return nil, fmt.Sprintf("%s: not read: %v", path, unwrapPath(err))
	}
	var doc struct {
		Env map[string]any `json:"env"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Sprintf("%s: not JSON, skipped: %v", path, err)
	}
	env := map[string]string{}
	for k, v := range doc.Env {
		switch v := v.(type) {
		case string:
			env[k] = v
		case nil:
		default:
			b, _ := json.Marshal(v)
			env[k] = string(b)
		}
	}
	return env, ""
}

// DotenvEntry is one KEY=value of a .env file.
type DotenvEntry struct {
	Key, Value string
	// Line is the 1-based line number.
	Line int
}

var dotenvKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// ParseDotenv reads a .env file's content; name labels the warnings
// ("name:line: why"). Each line is trimmed; blank lines and lines starting
// with # are skipped; a leading "export " is dropped; the line splits at
// its first "="; key and value are trimmed. A quoted value ends at its
// closing quote (anything after it but a comment is dropped); an unquoted
// value ends before " #". No escapes, no $VAR expansion, no multi-line
// values. A line without "=", with an invalid key, or with an unterminated
// quote gives a warning (an unterminated quote keeps the value with the
// quote stripped).
func ParseDotenv(name string, data []byte) ([]DotenvEntry, []string) {
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	var out []DotenvEntry
	var warns []string
	warn := func(n int, format string, a ...any) {
		warns = append(warns, fmt.Sprintf("%s:%d: %s", name, n, fmt.Sprintf(format, a...)))
	}
	for i, line := range strings.Split(string(data), "\n") {
		n := i + 1
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if !utf8.ValidString(line) {
			warn(n, "not UTF-8, ignored")
			continue
		}
		if rest, ok := strings.CutPrefix(line, "export"); ok && rest != "" && (rest[0] == ' ' || rest[0] == '\t') {
			line = strings.TrimSpace(rest)
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			warn(n, `no "=" in %q, ignored`, clip(line, 40))
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !dotenvKey.MatchString(k) {
			warn(n, "%q is not a variable name (letters, digits and _), ignored", clip(k, 40))
			continue
		}
		val, problem := dotenvValue(v)
		if problem != "" {
			warn(n, "%s: %s", k, problem)
		}
		if val == "" && isCredentialKey(k) {
			warn(n, "%s is empty here: it hides the later files' %s and counts as unset", k, k)
		}
		out = append(out, DotenvEntry{Key: k, Value: val, Line: n})
	}
	return out, warns
}

// dotenvValue reads a trimmed value: quoted up to the closing quote, else
// up to a " #" comment.
func dotenvValue(v string) (string, string) {
	if v == "" {
		return "", ""
	}
	if q := v[0]; q == '"' || q == '\'' {
		end := strings.IndexByte(v[1:], q)
		if end < 0 {
			return strings.Trim(v, `"'`), "unterminated quote (value kept without it)"
		}
		val, after := v[1:1+end], strings.TrimSpace(v[2+end:])
		if after != "" && !strings.HasPrefix(after, "#") {
			return val, fmt.Sprintf("text after the closing quote ignored: %q", clip(after, 40))
		}
		return val, ""
	}
	if i := strings.Index(v, " #"); i >= 0 {
		v = v[:i]
	}
	if i := strings.Index(v, "\t#"); i >= 0 {
		v = v[:i]
	}
	v = strings.TrimSpace(v)
	if t := strings.Trim(v, `"'`); t != v {
		return t, "stray quote stripped"
	}
	return v, ""
}

func isCredentialKey(k string) bool {
	for _, c := range credentialKeys {
		if c == k {
			return true
		}
	}
	return false
}

func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return truncateRunes(s, n) + "…"
}

func truncateRunes(s string, n int) string {
	i := 0
	for j := range s {
		if i == n {
			return s[:j]
		}
		i++
	}
	return s
}

// MissingCredentialsError says neither ANTHROPIC_API_KEY nor
// ANTHROPIC_AUTH_TOKEN is set (to a non-empty value) after the whole chain.
type MissingCredentialsError struct {
	// UserEnv is the per-user file `flower setup` writes.
	UserEnv string
	// Lang is the language of Error; "" means English.
	Lang Lang
}

// Error is the message in e.Lang: in Chinese the original's four lines
// (the last one corrected: the ~/.claude/settings.json fallback was tried).
func (e *MissingCredentialsError) Error() string { return e.Text(e.Lang) }

// Text is the message in lang.
func (e *MissingCredentialsError) Text(lang Lang) string {
	if lang.IsEnglish() {
		return "Missing credentials: set ANTHROPIC_API_KEY or ANTHROPIC_AUTH_TOKEN.\n" +
			"Easiest: run `flower setup` once; it saves the token to " + e.UserEnv + " (set once, works everywhere).\n" +
			"Or: create a `.env` in this directory, or export it into the environment.\n" +
			"(Borrowing Claude Code's token from the env block of ~/.claude/settings.json was tried too; it had none.)"
	}
	return "缺少凭证:需要 ANTHROPIC_API_KEY 或 ANTHROPIC_AUTH_TOKEN。\n" +
		"最省事:跑一次 `flower setup`,把 token 存到 " + e.UserEnv + "(装一次,处处生效)。\n" +
		"或者:在当前目录建 `.env`,或 export 进进程环境。\n" +
		"(已试过借本机 Claude Code 的 token —— 读 ~/.claude/settings.json 的 env 块 —— 也没找到可用的。)"
}

// CheckCredentials reports a *MissingCredentialsError unless
// ANTHROPIC_API_KEY or ANTHROPIC_AUTH_TOKEN is set and non-empty. It only
// looks; LoadDotenv first.
func CheckCredentials() error { return Environment{}.CheckCredentials() }

// CheckCredentials checks this environment.
func (e Environment) CheckCredentials() error {
	if e.getenv("ANTHROPIC_API_KEY") != "" || e.getenv("ANTHROPIC_AUTH_TOKEN") != "" {
		return nil
	}
	return &MissingCredentialsError{UserEnv: e.UserEnvPath(), Lang: e.Lang}
}

// DescribeCredentials lists the effective settings, one "KEY = value" line
// per set credential key, secrets masked as "<first 4>***(共 N 位)", and the
// default base URL when none is set: for a -v line that shows which
// endpoint and which key a run uses.
func DescribeCredentials() []string { return Environment{}.DescribeCredentials() }

// DescribeCredentials describes this environment.
func (e Environment) DescribeCredentials() []string {
	var out []string
	for _, k := range credentialKeys {
		v := e.getenv(k)
		switch {
		case v == "" && k == "ANTHROPIC_BASE_URL":
			v = "https://api.anthropic.com " + credentialTexts(e.Lang).byDefault
		case v == "":
			continue
		case strings.Contains(k, "TOKEN") || strings.Contains(k, "KEY"):
			v = MaskSecret(e.Lang, v)
		}
		out = append(out, k+" = "+v)
	}
	return out
}

// MaskSecret shows a secret's first four characters and its length:
// "sk-a***(40 characters)", in lang. Four are enough to tell two keys
// apart and too few to leak a short gateway token in a screenshot.
func MaskSecret(lang Lang, v string) string {
	return fmt.Sprintf(credentialTexts(lang).masked, truncateRunes(v, 4), utf8.RuneCountInString(v))
}

// credentialTexts are DescribeCredentials' words in one language.
type credTexts struct {
	byDefault string
	masked    string // first four characters, length
}

func credentialTexts(lang Lang) credTexts {
	if lang.IsEnglish() {
		return credTexts{byDefault: "(default)", masked: "%s***(%d characters)"}
	}
	return credTexts{byDefault: "(默认)", masked: "%s***(共 %d 位)"}
}
