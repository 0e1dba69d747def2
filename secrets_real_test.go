package flower

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/claude/claudetest"
	"github.com/flowerrun/flower/workbench"
)

// TestRealAKeyInAToolOutputReachesNoFile: a key a worker prints (from its
// environment, from a file a repository committed, past the CLI's own
// 30,000-character cut, so that it is spilled, and from a command run in
// the background, whose output the CLI keeps in its temporary folder) is in
// none of flower's files (events.jsonl, the store, the manifest, spills,
// the workbench) nor the CLI's under the run's HOME, whose files are 0600,
// nor the CLI's under its CLAUDE_CODE_TMPDIR.
func TestRealAKeyInAToolOutputReachesNoFile(t *testing.T) {
	t.Parallel()
	const key = "sk-ant-api03-committed-by-mistake-0123456789"
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "key.txt"), []byte(key+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	worker := []claudetest.Responder{
		bashReply("printenv ANTHROPIC_API_KEY"),
		bashReply("cat key.txt"),
		bashReply("for i in $(seq 1000); do cat key.txt; done"),
		// A command the CLI runs in the background writes its output to
		// <CLAUDE_CODE_TMPDIR>/claude-<uid>/<project>/<session>/tasks/; so
		// does a foreground command the CLI moves there (a CI run under
		// load left the key in such a file). The sleep lets it finish.
		claudetest.NewReply(claudetest.ToolUse("", "Bash", map[string]any{
			"command": "cat key.txt", "description": "step", "run_in_background": true})),
		bashReply("sleep 1"),
		claudetest.Always(claudetest.Say("read it")),
	}
	srv := claudetest.NewServer(t, claudetest.Script{
		"SCENARIO:key": {
			claudetest.NewReply(claudetest.ToolUse("", "Agent", map[string]any{
				"description": "read", "prompt": "SUBAGENT:key", "subagent_type": "reader", "run_in_background": false})),
			claudetest.Always(claudetest.Say("done")),
		},
		"SUBAGENT:key": worker,
	}.Handler())
	env := claudetest.Env(t, srv)
	env["ANTHROPIC_API_KEY"] = key
	runDir := t.TempDir()
	cli := claudetest.CLIPath(t)
	rt, err := New(ws, WithRunDir(runDir), WithEnv(env), WithResilience(fastResilience), WithLanguage(English),
		WithWorkbench(workbench.New(ws)),
		WithSessionOptions(func(o *claude.Options) { o.CLIPath, o.BaseEnv = cli, claudetest.BaseEnv() }))
	if err != nil {
		t.Fatal(err)
	}
	lead := Coordinator("lead", "", map[string]claude.AgentDefinition{
		"reader": Worker("reads files", "You read files.", WithTools("Bash", "Read")),
	}, WithLang(English))
	r, err := rt.Run(runCtx(t), lead, "SCENARIO:key", RunOptions{})
	rt.Close()
	if err != nil || !r.OK {
		t.Fatalf("run: %v %+v", err, r)
	}
	files, spills, tasks := 0, 0, 0
	for _, root := range []string{runDir, ws, env["HOME"], env["CLAUDE_CODE_TMPDIR"]} {
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || p == filepath.Join(ws, "key.txt") {
				return nil
			}
			files++
			if strings.Contains(p, "spill") {
				spills++
			}
			if strings.HasSuffix(p, ".output") {
				tasks++
			}
			if b, _ := os.ReadFile(p); strings.Contains(string(b), key) {
				t.Errorf("%s holds the key", p)
			}
			if strings.Contains(p, string(filepath.Separator)+"projects"+string(filepath.Separator)) {
				if fi, _ := d.Info(); fi.Mode().Perm() != 0o600 {
					t.Errorf("%s: mode %v, want 0600", p, fi.Mode().Perm())
				}
			}
			return nil
		})
	}
	if files < 5 || spills == 0 || tasks == 0 {
		t.Errorf("%d files, %d spills, %d task outputs: the run did not write what the test needs", files, spills, tasks)
	}
}
