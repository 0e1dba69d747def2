package flower

// Every option shown working: each option and getter of the Runtime, on a
// real run (the pinned CLI against the fake API), changes what reaches the
// API or the disk as it says.

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/claude/claudetest"
	"github.com/flowerrun/flower/store"
	"github.com/flowerrun/flower/workbench"
)

// firstWith is the first request that contains text, nil if none.
func firstWith(srv *claudetest.Server, text string) *claudetest.Request {
	for _, r := range srv.Requests() {
		if r.HasText(text) {
			return r
		}
	}
	return nil
}

// toolResultsOf joins the tool results of a request.
func toolResultsOf(r *claudetest.Request) string {
	var b strings.Builder
	for _, tr := range r.ToolResults() {
		b.WriteString(tr.Content + "\n")
	}
	return b.String()
}

// bashThenSay runs cmds one per turn, then says done; "SCENARIO:resume"
// is answered at once.
func bashThenSay(cmds ...string) claudetest.Handler {
	return func(ctx context.Context, r *claudetest.Request) claudetest.Reply {
		if r.HasText("SCENARIO:resume") {
			return claudetest.Say("resumed")
		}
		if n := len(r.ToolResults()); n < len(cmds) {
			return bashReply(cmds[n])
		}
		return claudetest.Say("done")
	}
}

// resumed runs "SCENARIO:first" on a Runtime over ws and runDir, then
// resumes its session from the run directory's store on a second Runtime
// (a fresh HOME, as another process would be) built with opts, and returns
// the resumed turn's request.
func resumed(t *testing.T, srv *claudetest.Server, firstOpts, opts []Option) *claudetest.Request {
	t.Helper()
	ws, runDir := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(ws, "marker.txt"), []byte("m"), 0o600)
	first := newTestRuntimeIn(t, ws, srv, append([]Option{WithRunDir(runDir)}, firstOpts...)...)
	res, err := first.Run(runCtx(t), testSpec(), "SCENARIO:first", RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	first.Close()
	later := newTestRuntimeIn(t, ws, srv, append([]Option{WithRunDir(runDir)}, opts...)...)
	if _, err := later.Run(runCtx(t), testSpec(), "SCENARIO:resume", RunOptions{Resume: res.SessionID}); err != nil {
		t.Fatal(err)
	}
	r := firstWith(srv, "SCENARIO:resume")
	if r == nil {
		t.Fatal("the resumed turn reached no request")
	}
	return r
}

func TestOptionLanguageAndDefaultWorkbench(t *testing.T) {
	t.Parallel()
	srv := claudetest.NewServer(t, bashThenSay())
	ws := t.TempDir()
	rt := newTestRuntimeIn(t, ws, srv, WithLanguage(English), WithDefaultWorkbench())
	if rt.Workbench() == nil || rt.Workbench().Root() != workbench.Location(ws, false) {
		t.Fatalf("default workbench = %+v, want it at %s", rt.Workbench(), workbench.Location(ws, false))
	}
	if _, err := rt.Run(runCtx(t), testSpec(), "SCENARIO:wb", RunOptions{}); err != nil {
		t.Fatal(err)
	}
	if !srv.Requests()[0].HasText(workbench.EnglishTexts.PromptRules) || srv.Requests()[0].HasText(workbench.ChineseTexts.PromptRules) {
		t.Error("the first message should carry the English workbench block")
	}
	index, err := os.ReadFile(filepath.Join(ws, ".flower", "INDEX.md"))
	if err != nil || !strings.HasPrefix(string(index), workbench.EnglishTexts.IndexTitle) {
		t.Errorf("INDEX.md: %v\n%s", err, index)
	}
}

func TestOptionSpillThreshold(t *testing.T) {
	t.Parallel()
	const big = "head -c 5000 /dev/zero | tr '\\0' y"
	const mid = "head -c 500 /dev/zero | tr '\\0' y"
	for _, c := range []struct {
		name    string
		opts    []Option
		cmd     string
		spilled bool
	}{
		{"default 4000", nil, big, true},
		{"0 is off", []Option{WithSpillThreshold(0)}, big, false},
		{"negative is off", []Option{WithSpillThreshold(-1)}, big, false},
		{"100", []Option{WithSpillThreshold(100)}, mid, true},
		{"100, short", []Option{WithSpillThreshold(1000)}, mid, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv := claudetest.NewServer(t, bashThenSay(c.cmd))
			wb := workbench.New(t.TempDir())
			rt := newTestRuntime(t, srv, append([]Option{WithWorkbench(wb)}, c.opts...)...)
			if _, err := rt.Run(runCtx(t), testSpec(), "SCENARIO:spill", RunOptions{}); err != nil {
				t.Fatal(err)
			}
			last := srv.Requests()[srv.Count()-1]
			results := toolResultsOf(last)
			spills, _ := filepath.Glob(filepath.Join(wb.SpillDir(), "*.txt"))
			got := strings.Contains(results, "已落盘到") && len(spills) == 1 && !strings.Contains(results, strings.Repeat("y", 450))
			if got != c.spilled {
				t.Errorf("spilled = %v (spill files %v), want %v; the model saw:\n%.300s", got, spills, c.spilled, results)
			}
		})
	}
}

func TestOptionTrim(t *testing.T) {
	t.Parallel()
	const cmd = "head -c 3000 /dev/zero | tr '\\0' y"
	whole := strings.Repeat("y", 3000)
	t.Run("off by default", func(t *testing.T) {
		t.Parallel()
		r := resumed(t, claudetest.NewServer(t, bashThenSay(cmd)), nil, nil)
		if !strings.Contains(toolResultsOf(r), whole) {
			t.Error("without WithTrim the resumed history should hold the result whole")
		}
	})
	t.Run("on", func(t *testing.T) {
		t.Parallel()
		r := resumed(t, claudetest.NewServer(t, bashThenSay(cmd)), nil,
			[]Option{WithTrim(store.TrimPolicy{KeepRecent: -1, MinChars: 1000})})
		got := toolResultsOf(r)
		if strings.Contains(got, whole) || !strings.Contains(got, "工具结果已归档") {
			t.Errorf("the trimmed result should be a pointer:\n%.300s", got)
		}
	})
}

func TestOptionEphemeral(t *testing.T) {
	t.Parallel()
	expired := func(r *claudetest.Request) bool { return strings.Contains(toolResultsOf(r), "的结果已过期") }
	t.Run("expires", func(t *testing.T) {
		t.Parallel()
		r := resumed(t, claudetest.NewServer(t, bashThenSay("ls", "echo after")), nil,
			[]Option{WithEphemeral(store.EphemeralPolicy{KeepRecent: -1})})
		if !expired(r) || strings.Contains(toolResultsOf(r), "marker.txt") {
			t.Errorf("the ls output should have expired:\n%s", toolResultsOf(r))
		}
	})
	t.Run("disabled", func(t *testing.T) {
		t.Parallel()
		r := resumed(t, claudetest.NewServer(t, bashThenSay("ls", "echo after")), nil,
			[]Option{WithEphemeral(store.EphemeralPolicy{Disabled: true, KeepRecent: -1})})
		if expired(r) || !strings.Contains(toolResultsOf(r), "marker.txt") {
			t.Errorf("Disabled should keep the ls output:\n%s", toolResultsOf(r))
		}
	})
}

func TestOptionKeepDenials(t *testing.T) {
	t.Parallel()
	// rm is refused by a permission rule, which the transcript marks as a
	// denial (toolDenialKind permission-rule).
	denyRM := WithSessionOptions(func(o *claude.Options) { o.Settings = `{"permissions":{"deny":["Bash(rm:*)"]}}` })
	denials := func(r *claudetest.Request) int {
		n := 0
		for _, m := range r.Messages {
			for _, b := range m.Content {
				if b.Type == "tool_use" && strings.Contains(string(b.Input), "rm -f") {
					n++
				}
			}
		}
		return n
	}
	for _, c := range []struct {
		name string
		opts []Option
		want int
	}{
		{"default keeps 1", nil, 1},
		{"0 keeps none", []Option{WithKeepDenials(0)}, 0},
		{"5 keeps both", []Option{WithKeepDenials(5)}, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv := claudetest.NewServer(t, bashThenSay("rm -f a", "rm -f b"))
			first := []Option{withCLI(t), denyRM}
			r := resumed(t, srv, first, append([]Option{withCLI(t), denyRM}, c.opts...))
			if got := denials(r); got != c.want {
				t.Errorf("denials in the resumed history = %d, want %d", got, c.want)
			}
		})
	}
}

// withCLI points a test runtime's sessions at the real CLI under test.
func withCLI(t *testing.T) Option {
	cli := claudetest.CLIPath(t)
	return WithSessionOptions(func(o *claude.Options) { o.CLIPath, o.BaseEnv = cli, claudetest.BaseEnv() })
}

func TestOptionNotPortable(t *testing.T) {
	t.Parallel()
	for _, portable := range []bool{true, false} {
		srv := claudetest.NewServer(t, bashThenSay())
		ws := t.TempDir()
		if err := os.WriteFile(filepath.Join(ws, "CLAUDE.md"), []byte("PROJECT-MEMORY-MARK: always answer in haiku.\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		var opts []Option
		if !portable {
			opts = append(opts, NotPortable())
		}
		rt := newTestRuntimeIn(t, ws, srv, opts...)
		if _, err := rt.Run(runCtx(t), testSpec(), "SCENARIO:portable", RunOptions{}); err != nil {
			t.Fatal(err)
		}
		if got := firstWith(srv, "PROJECT-MEMORY-MARK") != nil; got == portable {
			t.Errorf("portable %v: the project's CLAUDE.md reached the API: %v", portable, got)
		}
	}
}

func TestOptionPluginDirs(t *testing.T) {
	t.Parallel()
	plugin := t.TempDir()
	files := map[string]string{
		".claude-plugin/plugin.json": `{"name":"markplug","version":"0.0.1","description":"a test plugin"}`,
		"skills/markskill/SKILL.md":  "---\nname: markskill\ndescription: PLUGIN-SKILL-MARK tells the weather\n---\nSay sunny.\n",
		"commands/markcommand.md":    "---\ndescription: PLUGIN-COMMAND-MARK\n---\nHello\n",
	}
	for name, body := range files {
		p := filepath.Join(plugin, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, with := range []bool{false, true} {
		srv := claudetest.NewServer(t, bashThenSay())
		var opts []Option
		if with {
			opts = append(opts, WithPluginDirs(plugin, filepath.Join(t.TempDir(), "absent")))
		}
		rt := newTestRuntime(t, srv, opts...)
		if _, err := rt.Run(runCtx(t), testSpec(), "SCENARIO:plugin", RunOptions{}); err != nil {
			t.Fatal(err)
		}
		if got := firstWith(srv, "PLUGIN-SKILL-MARK") != nil; got != with {
			t.Errorf("WithPluginDirs %v: the plugin's skill reached the API: %v", with, got)
		}
	}
}

func TestOptionStore(t *testing.T) {
	t.Parallel()
	srv := claudetest.NewServer(t, bashThenSay("echo stored"))
	mem := claudetest.NewMemoryStore()
	runDir := t.TempDir()
	rt := newTestRuntime(t, srv, WithRunDir(runDir), WithStore(mem))
	if rt.Store() != claude.SessionStore(mem) {
		t.Fatal("Store() is not the store given")
	}
	res, err := rt.Run(runCtx(t), testSpec(), "SCENARIO:store", RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	entries, err := mem.Load(runCtx(t), claude.SessionKey{ProjectKey: rt.ProjectKey(), SessionID: res.SessionID})
	if err != nil || len(entries) == 0 {
		t.Errorf("the given store holds %d entries (%v)", len(entries), err)
	}
	if _, err := os.Stat(filepath.Join(runDir, "sessions.db")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("sessions.db was created beside the given store: %v", err)
	}
	if _, err := rt.ContextOf(runCtx(t), res.SessionID); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("ContextOf on a store without LastContext = %v, want ErrUnsupported", err)
	}
}

func TestGettersContextOfResultsWorkspace(t *testing.T) {
	t.Parallel()
	srv := claudetest.NewServer(t, func(ctx context.Context, r *claudetest.Request) claudetest.Reply {
		if len(r.ToolResults()) == 0 {
			return bashReply("pwd")
		}
		rep := claudetest.Say("here")
		rep.Usage = claudetest.Usage{InputTokens: 1234, CacheReadInputTokens: 100, OutputTokens: 5}
		return rep
	})
	tmp := t.TempDir()
	rt := newTestRuntimeIn(t, filepath.Join(tmp, "x", "..", "ws"), srv)
	ws := filepath.Join(tmp, "ws")
	if rt.Workspace() != ws {
		t.Errorf("Workspace() = %s, want %s", rt.Workspace(), ws)
	}
	one, err := rt.Run(runCtx(t), testSpec(), "SCENARIO:one", RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := toolResultsOf(srv.Requests()[1]); !strings.Contains(got, ws) {
		t.Errorf("the CLI ran in %q, not the Workspace", got)
	}
	if c, err := rt.ContextOf(runCtx(t), one.SessionID); err != nil || c != 1334 || one.Context != 1334 {
		t.Errorf("ContextOf = %d, %v; Context = %d; want 1334 (input + cache read)", c, err, one.Context)
	}
	two, err := rt.Run(runCtx(t), testSpec(), "SCENARIO:two", RunOptions{StepName: "second"})
	if err != nil {
		t.Fatal(err)
	}
	got := rt.Results()
	if len(got) != 2 || got[0].SessionID != one.SessionID || got[1].Step != "second" || got[1].SessionID != two.SessionID {
		t.Fatalf("Results() = %+v", got)
	}
	got[0].Step = "changed"
	if rt.Results()[0].Step != "work" {
		t.Error("Results() must return a copy")
	}
}

func TestWithSessionOptionsGivenTwiceAppliesBoth(t *testing.T) {
	rt, err := New(t.TempDir(), WithRunDir(t.TempDir()), WithEnv(map[string]string{"ANTHROPIC_API_KEY": "sk-fake"}),
		WithSessionOptions(func(o *claude.Options) { o.CLIPath = "/first/claude" }),
		WithSessionOptions(nil),
		WithSessionOptions(func(o *claude.Options) { o.Settings = `{"second":true}` }))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	opts, err := (&stepRun{rt: rt}).options(testSpec(), "", false, "")
	if err != nil {
		t.Fatal(err)
	}
	if opts.CLIPath != "/first/claude" || opts.Settings != `{"second":true}` {
		t.Errorf("CLIPath %q Settings %q: each WithSessionOptions must apply, in order", opts.CLIPath, opts.Settings)
	}
}
