package app

import (
	"testing"

	"github.com/flowerrun/flower"
)

// Tools are named as a person reads them: flower's own by what they do, in
// the run's language; another MCP server's as "server: tool"; the CLI's as
// they are.
func TestToolNamesAreSaidAsAPersonReadsThem(t *testing.T) {
	for _, c := range []struct{ lang, tool, want string }{
		{"en", "mcp__human__ask", "asking you"},
		{"zh", "mcp__human__ask", "问人"},
		{"en", "mcp__human__inbox", "reading your words"},
		{"zh", "mcp__human__inbox", "看你留的话"},
		{"en", "mcp__github__create_issue", "github: create_issue"},
		{"en", "mcp__broken", "mcp__broken"},
		{"zh", "Bash", "Bash"},
	} {
		if got := toolName(flower.Lang(c.lang), c.tool); got != c.want {
			t.Errorf("%s %s: %q, want %q", c.lang, c.tool, got, c.want)
		}
	}
}
