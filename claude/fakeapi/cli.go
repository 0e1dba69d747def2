package fakeapi

import "path/filepath"

// PinnedCLI is the pinned Claude Code CLI's path relative to flower's
// module root (tools/claude-cli/install.sh puts it there).
const PinnedCLI = "tools/claude-cli/node_modules/@anthropic-ai/claude-code-linux-x64/claude"

// CLIEnv is the environment of a hermetic CLI run against a fake API at
// baseURL (to lay over a minimal base, PATH only): HOME and
// CLAUDE_CODE_TMPDIR are the given folders and CLAUDE_CONFIG_DIR is
// $HOME/.claude; the traffic-disabling variables keep every request on the
// fake; the variables that would change the provider, proxy, credentials,
// model, headers or nesting are blanked (empty).
func CLIEnv(baseURL, home, tmp string) map[string]string {
	env := map[string]string{
		"HOME":               home,
		"CLAUDE_CODE_TMPDIR": tmp,
		// Not blanked: the CLI reads an empty CLAUDE_CONFIG_DIR as the
		// working directory and writes projects/, plugins/… into it.
		"CLAUDE_CONFIG_DIR":  filepath.Join(home, ".claude"),
		"ANTHROPIC_BASE_URL": baseURL,
		"ANTHROPIC_API_KEY":  "sk-fake",
		// Mandatory: without these the CLI resolves and calls external hosts.
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
		"DISABLE_TELEMETRY":                        "1",
		"DISABLE_AUTOUPDATER":                      "1",
		"DISABLE_ERROR_REPORTING":                  "1",
		"TERM":                                     "dumb",
		"LANG":                                     "C.UTF-8",
	}
	for _, k := range blanked {
		env[k] = ""
	}
	return env
}

// blanked are variables that would change where the CLI sends requests,
// how it authenticates, which model it asks for, what it sends, or whether
// it thinks it runs nested. CLI 2.1.332 was checked to read an empty value
// of each as unset (same requests, files and output as without them).
var blanked = []string{
	// Provider and routing.
	"CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX", "CLAUDE_CODE_USE_FOUNDRY",
	"CLAUDE_CODE_USE_GATEWAY", "CLAUDE_CODE_USE_MANTLE", "CLAUDE_CODE_USE_ANTHROPIC_AWS",
	"CLAUDE_CODE_USE_ANTHROPIC_GOOGLE_CLOUD", "ANTHROPIC_UNIX_SOCKET", "ANTHROPIC_PROFILE",
	"ANTHROPIC_CONFIG_DIR",
	"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy",
	// Credentials.
	"ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN_FILE_DESCRIPTOR",
	"CLAUDE_CODE_API_KEY_FILE_DESCRIPTOR", "ANTHROPIC_IDENTITY_TOKEN", "ANTHROPIC_IDENTITY_TOKEN_FILE",
	// Model choice.
	"ANTHROPIC_MODEL", "ANTHROPIC_DEFAULT_MODEL", "ANTHROPIC_DEFAULT_OPUS_MODEL",
	"ANTHROPIC_DEFAULT_SONNET_MODEL", "ANTHROPIC_DEFAULT_HAIKU_MODEL", "ANTHROPIC_DEFAULT_FABLE_MODEL",
	"ANTHROPIC_SMALL_FAST_MODEL", "CLAUDE_CODE_SUBAGENT_MODEL",
	// Request shape and nesting.
	"ANTHROPIC_CUSTOM_HEADERS", "ANTHROPIC_BETAS", "CLAUDECODE", "CLAUDE_CODE_SIMPLE",
}
