package claude

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestVersionProbeWarnsOutsideTheTestedRange runs the probe against scripts
// that print a version the way `claude -v` does, and checks that exactly the
// versions outside OldestTestedCLIVersion..NewestTestedCLIVersion warn, each
// saying which side it is on.
func TestVersionProbeWarnsOutsideTheTestedRange(t *testing.T) {
	var buf bytes.Buffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	t.Cleanup(func() { slog.SetDefault(old) })
	cases := []struct {
		version, want string // want: the warning's words, "" for none
	}{
		{"2.0.76", "older than the oldest"},
		{"2.1.309", "older than the oldest"},
		{OldestTestedCLIVersion, ""},
		{"2.1.320", ""},
		{NewestTestedCLIVersion, ""},
		{"2.1.333", "newer than the newest"},
		{"3.0.0", "newer than the newest"},
		{"garbage", ""},
	}
	dir := t.TempDir()
	for i, c := range cases {
		cli := filepath.Join(dir, "claude-"+string(rune('a'+i)))
		script := "#!/bin/sh\necho '" + c.version + " (Claude Code)'\n"
		if err := os.WriteFile(cli, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		buf.Reset()
		checkVersion(context.Background(), cli)
		var line string
		for l := range strings.Lines(buf.String()) {
			if strings.Contains(l, "cli="+cli) {
				line = l
			}
		}
		switch {
		case c.want == "" && line != "":
			t.Errorf("version %s: warned %q", c.version, line)
		case c.want != "" && (!strings.Contains(line, c.want) || !strings.Contains(line, "version="+c.version)):
			t.Errorf("version %s: warning %q, want one saying %q and naming the version", c.version, line, c.want)
		}
	}
}

// TestTestedRangeMatchesThePins: the npm pins the test command installs are
// the range the probe names, so the two cannot drift apart.
func TestTestedRangeMatchesThePins(t *testing.T) {
	for dir, want := range map[string]string{
		"claude-cli":                           NewestTestedCLIVersion,
		"claude-cli-" + OldestTestedCLIVersion: OldestTestedCLIVersion,
	} {
		raw, err := os.ReadFile(filepath.Join("..", "tools", dir, "package.json"))
		if err != nil {
			t.Fatalf("the pin of CLI %s: %v", want, err)
		}
		var pkg struct {
			Dependencies map[string]string `json:"dependencies"`
		}
		if err := json.Unmarshal(raw, &pkg); err != nil {
			t.Fatalf("tools/%s/package.json: %v", dir, err)
		}
		if got := pkg.Dependencies["@anthropic-ai/claude-code"]; got != want {
			t.Errorf("tools/%s/package.json pins %q, want %q", dir, got, want)
		}
	}
}
