package claude_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowerrun/flower/claude/claudetest"
)

// TestRealSessionFilesArePrivate: a tool output carrying a secret leaves
// every file and folder the CLI wrote for the session (its transcript,
// and tool-results/ and subagents/ when it writes them) readable by its
// owner only.
func TestRealSessionFilesArePrivate(t *testing.T) {
	t.Parallel()
	const secret = "sk-ant-private-files-test"
	srv := claudetest.NewServer(t, claudetest.Script{"SCENARIO:secret": {
		bash("for i in $(seq 2000); do echo " + secret + "-$i; done"), echoToolResult}}.Handler())
	opts := realOptions(t, srv)
	if _, err := collect(t, realCtx(t), "SCENARIO:secret", opts); err != nil {
		t.Fatal(err)
	}
	projects := filepath.Join(opts.Env["CLAUDE_CONFIG_DIR"], "projects")
	files, withSecret := 0, 0
	err := filepath.WalkDir(projects, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if p == projects {
			return nil
		}
		want := fs.FileMode(0o600)
		if d.IsDir() {
			want = 0o700
		} else {
			files++
			if b, _ := os.ReadFile(p); strings.Contains(string(b), secret) {
				withSecret++
			}
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", p, fi.Mode().Perm(), want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files == 0 || withSecret == 0 {
		t.Errorf("%d files, %d with the secret: the CLI did not write what the test needs", files, withSecret)
	}
}
