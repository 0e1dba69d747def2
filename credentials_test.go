package flower

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// dotenvFake is an environment LoadDotenv fills instead of the process's.
type dotenvFake map[string]string

func (f dotenvFake) env(home, cwd, exe string) Environment {
	return Environment{
		LookupEnv:  func(k string) (string, bool) { v, ok := f[k]; return v, ok },
		Setenv:     func(k, v string) error { f[k] = v; return nil },
		Home:       home,
		Cwd:        cwd,
		Executable: exe,
	}
}

func dotenvWrite(t *testing.T, path, content string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestParseDotenv(t *testing.T) {
	tests := []struct {
		name  string
		line  string
		want  []DotenvEntry
		warns []string // substrings, one per warning
	}{
		{"a plain pair", "K=v", []DotenvEntry{{"K", "v", 1}}, nil},
		{"spaces around are trimmed", "  K =  v w  ", []DotenvEntry{{"K", "v w", 1}}, nil},
		{"double quotes are stripped", `K="a b"`, []DotenvEntry{{"K", "a b", 1}}, nil},
		{"single quotes are stripped", `K='a#b'`, []DotenvEntry{{"K", "a#b", 1}}, nil},
		{"a quoted value keeps its inner spaces", `K=" x "`, []DotenvEntry{{"K", " x ", 1}}, nil},
		{"export is dropped", "export K=v", []DotenvEntry{{"K", "v", 1}}, nil},
		{"export with a tab is dropped", "export\tK=v", []DotenvEntry{{"K", "v", 1}}, nil},
		{"a key named export stays", "export=1", []DotenvEntry{{"export", "1", 1}}, nil},
		{"a trailing comment is dropped", "K=v # note", []DotenvEntry{{"K", "v", 1}}, nil},
		{"a comment after a quote is dropped", `K="v" # note`, []DotenvEntry{{"K", "v", 1}}, nil},
		{"a hash inside a value stays", "K=a#b", []DotenvEntry{{"K", "a#b", 1}}, nil},
		{"the first = splits", "K=a=b==", []DotenvEntry{{"K", "a=b==", 1}}, nil},
		{"a comment line is skipped", "# K=v", nil, nil},
		{"an indented comment is skipped", "   # K=v", nil, nil},
		{"a blank line is skipped", "   ", nil, nil},
		{"an empty value claims the key", "OTHER=", []DotenvEntry{{"OTHER", "", 1}}, nil},
		{"an empty credential is claimed with a warning", "ANTHROPIC_API_KEY=", []DotenvEntry{{"ANTHROPIC_API_KEY", "", 1}}, []string{"x.env:1: ANTHROPIC_API_KEY is empty here"}},
		{"unicode passes through", "MODEL=克劳德-opus[1m]", []DotenvEntry{{"MODEL", "克劳德-opus[1m]", 1}}, nil},
		{"$VAR is not expanded", "K=$HOME/x", []DotenvEntry{{"K", "$HOME/x", 1}}, nil},
		{"a line without = is reported", "JUSTAWORD", nil, []string{`x.env:1: no "=" in "JUSTAWORD"`}},
		{"a bad key is reported", "MY KEY=1", nil, []string{`x.env:1: "MY KEY" is not a variable name`}},
		{"an empty key is reported", "=v", nil, []string{`x.env:1: "" is not a variable name`}},
		{"an unterminated quote keeps the value and is reported", `K="abc`, []DotenvEntry{{"K", "abc", 1}}, []string{"K: unterminated quote"}},
		{"text after a closing quote is reported", `K="a" b`, []DotenvEntry{{"K", "a", 1}}, []string{"text after the closing quote"}},
		{"a stray closing quote is stripped and reported", `K=abc"`, []DotenvEntry{{"K", "abc", 1}}, []string{"stray quote"}},
		{"windows line ends are trimmed", "K=v\r", []DotenvEntry{{"K", "v", 1}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, warns := ParseDotenv("x.env", []byte(tt.line))
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("entries = %#v, want %#v", got, tt.want)
			}
			if len(warns) != len(tt.warns) {
				t.Fatalf("warnings = %q, want %d", warns, len(tt.warns))
			}
			for i, w := range tt.warns {
				if !strings.Contains(warns[i], w) {
					t.Errorf("warning %q lacks %q", warns[i], w)
				}
			}
		})
	}
}

func TestParseDotenvNumbersLinesAndSkipsABOM(t *testing.T) {
	got, warns := ParseDotenv("a/.env", []byte("\ufeff# header\n\nA=1\nbroken line\nexport B='2'\n"))
	want := []DotenvEntry{{"A", "1", 3}, {"B", "2", 5}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("entries = %v, want %v", got, want)
	}
	if len(warns) != 1 || !strings.HasPrefix(warns[0], "a/.env:4: ") {
		t.Errorf("warnings = %q, want one at a/.env:4", warns)
	}
}

// dotenvChain lays out every file of the standard dotenvChain in temporary directories.
type dotenvChain struct {
	home, cwd, exe, xdg, flowerEnv string
}

func newDotenvChain(t *testing.T) dotenvChain {
	root := t.TempDir()
	c := dotenvChain{
		home: filepath.Join(root, "home"),
		cwd:  filepath.Join(root, "project"),
		exe:  filepath.Join(root, "install", "bin", "flower"),
		xdg:  filepath.Join(root, "xdg"),
	}
	c.flowerEnv = filepath.Join(root, "explicit.env")
	for _, d := range []string{c.home, c.cwd, filepath.Dir(c.exe), c.xdg} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

func TestLoadDotenvPrecedenceIsFirstValueWins(t *testing.T) {
	c := newDotenvChain(t)
	dotenvWrite(t, c.flowerEnv, "A=flower_env\n")
	dotenvWrite(t, filepath.Join(c.xdg, "flower", ".env"), "A=user\nB=user\nC=user\n")
	dotenvWrite(t, filepath.Join(filepath.Dir(c.exe), ".env"), "A=install\nB=install\nC=install\nD=install\n")
	dotenvWrite(t, filepath.Join(c.home, ".claude", "settings.json"), `{"env":{"ANTHROPIC_MODEL":"from-settings","ANTHROPIC_API_KEY":"sk-settings","D":"settings"}}`)

	env := dotenvFake{"FLOWER_ENV": c.flowerEnv, "XDG_CONFIG_HOME": c.xdg, "P": "process", "ANTHROPIC_API_KEY": "sk-process"}
	dotenvWrite(t, filepath.Join(c.cwd, ".env"), "A=cwd\nB=cwd\nP=cwd\nANTHROPIC_API_KEY=sk-cwd\n")
	rep, err := env.env(c.home, c.cwd, c.exe).LoadDotenv()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"A": "flower_env", "B": "user", "C": "user", "D": "install", "P": "process",
		"ANTHROPIC_API_KEY": "sk-process", "ANTHROPIC_MODEL": "from-settings",
		"FLOWER_ENV": c.flowerEnv, "XDG_CONFIG_HOME": c.xdg,
	}
	if !maps.Equal(env, want) {
		t.Errorf("environment = %v\nwant %v", env, want)
	}
	if rep.Loaded["A"] != c.flowerEnv || rep.Loaded["C"] != filepath.Join(c.xdg, "flower", ".env") ||
		rep.Loaded["ANTHROPIC_MODEL"] != filepath.Join(c.home, ".claude", "settings.json") {
		t.Errorf("Loaded = %v", rep.Loaded)
	}
	if _, ok := rep.Loaded["P"]; ok {
		t.Error("a process variable is reported as loaded")
	}
	// The workspace .env may set only a key and the models: A, B and P
	// are not its to set.
	if rep.Workspace != filepath.Join(c.cwd, ".env") || !slices.Equal(rep.WorkspaceIgnored, []string{"A", "B", "P"}) || len(rep.WorkspaceUsed) != 0 {
		t.Errorf("workspace %q, used %v, ignored %v", rep.Workspace, rep.WorkspaceUsed, rep.WorkspaceIgnored)
	}
	if len(rep.Files) != 5 || len(rep.Warnings) != 0 {
		t.Errorf("files %q warnings %q", rep.Files, rep.Warnings)
	}
}

func TestLoadDotenvUsesHomeConfigWithoutXDG(t *testing.T) {
	c := newDotenvChain(t)
	dotenvWrite(t, filepath.Join(c.home, ".config", "flower", ".env"), "ANTHROPIC_AUTH_TOKEN=tok\n")
	env := dotenvFake{}
	e := env.env(c.home, c.cwd, c.exe)
	if _, err := e.LoadDotenv(); err != nil {
		t.Fatal(err)
	}
	if env["ANTHROPIC_AUTH_TOKEN"] != "tok" || e.CheckCredentials() != nil {
		t.Errorf("environment = %v", env)
	}
	if got := e.UserEnvPath(); got != filepath.Join(c.home, ".config", "flower", ".env") {
		t.Errorf("UserEnvPath() = %s", got)
	}
	rel := dotenvFake{"XDG_CONFIG_HOME": "relative/cfg"}.env(c.home, c.cwd, c.exe)
	if got := rel.UserEnvPath(); got != filepath.Join(c.home, ".config", "flower", ".env") {
		t.Errorf("a relative XDG_CONFIG_HOME was used: %s", got)
	}
}

func TestSettingsFallbackTakesOnlyTheNineKeys(t *testing.T) {
	c := newDotenvChain(t)
	dotenvWrite(t, filepath.Join(c.home, ".claude", "settings.json"), `{
		"env": {"ANTHROPIC_AUTH_TOKEN": "from-json", "ANTHROPIC_BASE_URL": "https://gw", "PATH": "/evil",
		        "DISABLE_AUTO_COMPACT": "1", "CLAUDE_CODE_EFFORT_LEVEL": "high", "ANTHROPIC_MODEL": ""},
		"permissions": {"allow": ["Bash"]}}`)
	dotenvWrite(t, filepath.Join(c.home, ".claude", "settings.local.json"), `{"env": {"ANTHROPIC_AUTH_TOKEN": "from-local",
		"ANTHROPIC_MODEL": "local-model", "CLAUDE_CODE_SUBAGENT_MODEL": "sub", "OTHER": "x"}}`)
	env := dotenvFake{}
	if _, err := env.env(c.home, c.cwd, c.exe).LoadDotenv(); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"ANTHROPIC_AUTH_TOKEN": "from-json", "ANTHROPIC_BASE_URL": "https://gw",
		"CLAUDE_CODE_EFFORT_LEVEL": "high", "ANTHROPIC_MODEL": "local-model",
		"CLAUDE_CODE_SUBAGENT_MODEL": "sub",
	}
	if !maps.Equal(env, want) {
		t.Errorf("environment = %v\nwant %v", env, want)
	}
	if len(CredentialKeys()) != 9 {
		t.Errorf("CredentialKeys() = %v", CredentialKeys())
	}
}

func TestAnEmptyValueClaimsTheKeyYetCountsAsMissing(t *testing.T) {
	c := newDotenvChain(t)
	dotenvWrite(t, filepath.Join(c.cwd, ".env"), "ANTHROPIC_API_KEY=\n")
	dotenvWrite(t, filepath.Join(c.home, ".config", "flower", ".env"), "ANTHROPIC_API_KEY=sk-later\n")
	env := dotenvFake{}
	e := env.env(c.home, c.cwd, c.exe)
	rep, err := e.LoadDotenv()
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := env["ANTHROPIC_API_KEY"]; !ok || v != "" {
		t.Errorf("ANTHROPIC_API_KEY = %q, %v; want claimed and empty", v, ok)
	}
	var missing *MissingCredentialsError
	if !errors.As(e.CheckCredentials(), &missing) {
		t.Error("an empty key passed CheckCredentials")
	}
	if len(rep.Warnings) != 1 || !strings.Contains(rep.Warnings[0], "ANTHROPIC_API_KEY is empty here") {
		t.Errorf("warnings = %q", rep.Warnings)
	}
}

func TestExplicitPathsReadOnlyThoseFiles(t *testing.T) {
	c := newDotenvChain(t)
	dotenvWrite(t, filepath.Join(c.cwd, ".env"), "FROM_CWD=1\n")
	dotenvWrite(t, filepath.Join(c.home, ".claude", "settings.json"), `{"env":{"ANTHROPIC_API_KEY":"sk-x"}}`)
	only := dotenvWrite(t, filepath.Join(c.cwd, "only.env"), "ONLY=1\n")
	env := dotenvFake{}
	rep, err := env.env(c.home, c.cwd, c.exe).LoadDotenv(only, filepath.Join(c.cwd, "missing.env"))
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(env, dotenvFake{"ONLY": "1"}) {
		t.Errorf("environment = %v, want only ONLY", env)
	}
	if len(rep.Warnings) != 1 || !strings.Contains(rep.Warnings[0], "missing.env: not read") {
		t.Errorf("a missing explicit file is not reported: %q", rep.Warnings)
	}
}

func TestMalformedFilesAreReportedNotFatal(t *testing.T) {
	c := newDotenvChain(t)
	dotenvWrite(t, filepath.Join(c.cwd, ".env"), "GOOD=1\nthis is not a pair\nexport ANTHROPIC_API_KEY=\"sk-ant-123\" # mine\n")
	dotenvWrite(t, filepath.Join(c.home, ".claude", "settings.json"), `{"env": {`)
	if err := os.Mkdir(filepath.Join(c.xdg, "flower"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(c.xdg, "flower", ".env"), 0o755); err != nil { // a directory, unreadable as a file
		t.Fatal(err)
	}
	env := dotenvFake{"XDG_CONFIG_HOME": c.xdg}
	rep, err := env.env(c.home, c.cwd, c.exe).LoadDotenv()
	if err != nil {
		t.Fatal(err)
	}
	// GOOD is not the workspace .env's to set; the key is.
	if _, set := env["GOOD"]; set || env["ANTHROPIC_API_KEY"] != "sk-ant-123" || !slices.Equal(rep.WorkspaceIgnored, []string{"GOOD"}) {
		t.Errorf("environment = %v, ignored %v", env, rep.WorkspaceIgnored)
	}
	joined := strings.Join(rep.Warnings, "\n")
	for _, want := range []string{
		filepath.Join(c.cwd, ".env") + `:2: no "="`,
		filepath.Join(c.xdg, "flower", ".env") + ": not read",
		filepath.Join(c.home, ".claude", "settings.json") + ": not JSON",
	} {
		if !strings.Contains(joined, want) {
			t.Errorf("warnings lack %q:\n%s", want, joined)
		}
	}
}

func TestDotenvPathsFollowTheChainOnce(t *testing.T) {
	c := newDotenvChain(t)
	env := dotenvFake{"FLOWER_ENV": c.flowerEnv}
	got := env.env(c.home, c.cwd, filepath.Join(c.cwd, "flower")).DotenvPaths()
	want := []string{c.flowerEnv, filepath.Join(c.cwd, ".env"), filepath.Join(c.home, ".config", "flower", ".env")}
	if !slices.Equal(got, want) {
		t.Errorf("DotenvPaths() = %q\nwant %q (the executable's .env is the cwd's, read once)", got, want)
	}
}

func TestTheInstallationDotenvFollowsSymlinks(t *testing.T) {
	c := newDotenvChain(t)
	dotenvWrite(t, c.exe, "binary")
	dotenvWrite(t, filepath.Join(filepath.Dir(c.exe), ".env"), "INSTALLED=1\n")
	link := filepath.Join(c.home, "bin", "flower")
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(c.exe, link); err != nil {
		t.Fatal(err)
	}
	env := dotenvFake{}
	if _, err := env.env(c.home, c.cwd, link).LoadDotenv(); err != nil {
		t.Fatal(err)
	}
	if env["INSTALLED"] != "1" {
		t.Errorf("the installation .env behind a symlink was not read: %v", env)
	}
}

func TestCheckCredentialsNamesWhatToSet(t *testing.T) {
	e := dotenvFake{"XDG_CONFIG_HOME": "/cfg", "ANTHROPIC_AUTH_TOKEN": ""}.env("/home/u", "/p", "/bin/flower")
	err := e.CheckCredentials()
	var missing *MissingCredentialsError
	if !errors.As(err, &missing) {
		t.Fatalf("CheckCredentials() = %v, want *MissingCredentialsError", err)
	}
	want := "缺少凭证:需要 ANTHROPIC_API_KEY 或 ANTHROPIC_AUTH_TOKEN。\n" +
		"最省事:跑一次 `flower setup`,把 token 存到 /cfg/flower/.env(装一次,处处生效)。\n" +
		"或者:在当前目录建 `.env`,或 export 进进程环境。\n" +
		"(已试过借本机 Claude Code 的 token —— 读 ~/.claude/settings.json 的 env 块 —— 也没找到可用的。)"
	if got := missing.Text(Chinese); got != want {
		t.Errorf("message:\n%s\nwant\n%s", got, want)
	}
	if err.Error() != missing.Text(English) {
		t.Errorf("the zero Lang's message is not English:\n%s", err)
	}
	en := missing.Text(English)
	for _, s := range []string{"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "/cfg/flower/.env", "flower setup", "~/.claude/settings.json"} {
		if !strings.Contains(en, s) {
			t.Errorf("English message lacks %q:\n%s", s, en)
		}
	}
	for _, ok := range []dotenvFake{{"ANTHROPIC_API_KEY": "k"}, {"ANTHROPIC_AUTH_TOKEN": "t"}} {
		if err := ok.env("/h", "/p", "/b").CheckCredentials(); err != nil {
			t.Errorf("%v: %v", ok, err)
		}
	}
}

func TestDescribeCredentialsMasksSecrets(t *testing.T) {
	e := dotenvFake{
		"ANTHROPIC_API_KEY": "sk-ant-api03-abcdefghij", "ANTHROPIC_AUTH_TOKEN": "令牌abcdef",
		"ANTHROPIC_MODEL": "claude-opus-5[1m]",
	}.env("/h", "/p", "/b")
	e.Lang = Chinese
	want := []string{
		"ANTHROPIC_API_KEY = sk-a***(共 23 位)",
		"ANTHROPIC_AUTH_TOKEN = 令牌ab***(共 8 位)",
		"ANTHROPIC_BASE_URL = https://api.anthropic.com (默认)",
		"ANTHROPIC_MODEL = claude-opus-5[1m]",
	}
	if got := e.DescribeCredentials(); !slices.Equal(got, want) {
		t.Errorf("DescribeCredentials() =\n%q\nwant\n%q", got, want)
	}
	got := dotenvFake{"ANTHROPIC_BASE_URL": "https://gw"}.env("/h", "/p", "/b").DescribeCredentials()
	if !slices.Equal(got, []string{"ANTHROPIC_BASE_URL = https://gw"}) {
		t.Errorf("with a base URL: %q", got)
	}
}

func TestLoadDotenvFillsTheProcessEnvironment(t *testing.T) {
	dir := t.TempDir()
	p := dotenvWrite(t, filepath.Join(dir, "x.env"), "FLOWER_TEST_DOTENV_A=1\nFLOWER_TEST_DOTENV_B=2\n")
	t.Setenv("FLOWER_TEST_DOTENV_A", "kept")
	t.Setenv("FLOWER_TEST_DOTENV_B", "")
	os.Unsetenv("FLOWER_TEST_DOTENV_B") // t.Setenv restores it afterwards
	rep, err := LoadDotenv(p)
	if err != nil {
		t.Fatal(err)
	}
	if os.Getenv("FLOWER_TEST_DOTENV_A") != "kept" || os.Getenv("FLOWER_TEST_DOTENV_B") != "2" {
		t.Errorf("A=%q B=%q", os.Getenv("FLOWER_TEST_DOTENV_A"), os.Getenv("FLOWER_TEST_DOTENV_B"))
	}
	if !maps.Equal(rep.Loaded, map[string]string{"FLOWER_TEST_DOTENV_B": p}) {
		t.Errorf("Loaded = %v", rep.Loaded)
	}
}

// TestLoadDotenvAWorkspaceNeverChoosesWhereTheKeyGoes: a workspace .env
// (a cloned repository's) that sets the base URL, the CLI and the notify
// command sets none of them, and the user's key goes to the user's URL
// only; its own key and model are still taken, before the user's.
func TestLoadDotenvAWorkspaceNeverChoosesWhereTheKeyGoes(t *testing.T) {
	c := newDotenvChain(t)
	user := filepath.Join(c.xdg, "flower", ".env")
	dotenvWrite(t, user, "ANTHROPIC_API_KEY=sk-user\nANTHROPIC_BASE_URL=https://user.example\n")
	dotenvWrite(t, filepath.Join(c.cwd, ".env"), "ANTHROPIC_BASE_URL=http://repo.example\nFLOWER_CLAUDE=./evil-claude\n"+
		"FLOWER_NOTIFY=curl repo.example\nNODE_OPTIONS=--require ./x.js\nANTHROPIC_MODEL=repo-model\n")
	env := dotenvFake{"XDG_CONFIG_HOME": c.xdg}
	rep, err := env.env(c.home, c.cwd, c.exe).LoadDotenv()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"XDG_CONFIG_HOME": c.xdg, "ANTHROPIC_API_KEY": "sk-user",
		"ANTHROPIC_BASE_URL": "https://user.example", "ANTHROPIC_MODEL": "repo-model"}
	if !maps.Equal(env, want) {
		t.Errorf("environment = %v\nwant %v", env, want)
	}
	if !slices.Equal(rep.WorkspaceIgnored, []string{"ANTHROPIC_BASE_URL", "FLOWER_CLAUDE", "FLOWER_NOTIFY", "NODE_OPTIONS"}) ||
		!slices.Equal(rep.WorkspaceUsed, []string{"ANTHROPIC_MODEL"}) {
		t.Errorf("used %v, ignored %v", rep.WorkspaceUsed, rep.WorkspaceIgnored)
	}

	// With no base URL of the user's, the workspace's is still not taken.
	dotenvWrite(t, user, "ANTHROPIC_API_KEY=sk-user\n")
	env = dotenvFake{"XDG_CONFIG_HOME": c.xdg}
	if _, err := env.env(c.home, c.cwd, c.exe).LoadDotenv(); err != nil {
		t.Fatal(err)
	}
	if _, set := env["ANTHROPIC_BASE_URL"]; set {
		t.Errorf("the workspace chose the base URL: %v", env)
	}

	// The per-user file, when flower starts in its folder, is the user's.
	env = dotenvFake{"XDG_CONFIG_HOME": c.xdg}
	dotenvWrite(t, user, "ANTHROPIC_API_KEY=sk-user\nANTHROPIC_BASE_URL=https://user.example\n")
	rep, err = env.env(c.home, filepath.Dir(user), c.exe).LoadDotenv()
	if err != nil {
		t.Fatal(err)
	}
	if env["ANTHROPIC_BASE_URL"] != "https://user.example" || rep.Workspace != "" {
		t.Errorf("started in the per-user file's folder: %v, workspace %q", env, rep.Workspace)
	}
}
