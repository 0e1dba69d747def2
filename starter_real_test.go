package flower

// The starter flow on the pinned Claude Code CLI against claudetest's fake
// Messages API, played by internal/demo's scripted model (which the flower
// demo command plays too). Tool search stays at the CLI's default.

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowerrun/flower/claude/claudetest"
	"github.com/flowerrun/flower/doc"
	"github.com/flowerrun/flower/human"
	"github.com/flowerrun/flower/internal/demo"
	"github.com/flowerrun/flower/judge"
)

// realStarter runs a starter flow on a fresh Runtime (one "process").
func realStarter(t *testing.T, srv *claudetest.Server, ask string, o StarterOptions, answers []string, onEvent func(*human.Channel, Event)) (*Workflow, *Runtime, *Ctx) {
	t.Helper()
	wf, err := StarterFlow(ask, o)
	if err != nil {
		t.Fatal(err)
	}
	ch := wf.Channel.(*human.Channel)
	answerer(t, ch, answers...)
	rt := newTestRuntimeIn(t, o.Workspace, srv, WithRunDir(o.RunDir), WithWorkbench(wf.Workbench))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute) // a hang guard: two suites side by side took over 4 min
	defer cancel()
	var sink func(Event)
	if onEvent != nil {
		sink = func(e Event) { onEvent(ch, e) }
	}
	c, err := wf.Run(ctx, rt, sink, nil)
	if err != nil {
		t.Fatal(err)
	}
	return wf, rt, c
}

// requestsWith are the main-thread requests whose last prompt holds s.
func requestsWith(srv *claudetest.Server, s string) []*claudetest.Request {
	var out []*claudetest.Request
	for _, r := range srv.Requests() {
		if !r.Subagent && strings.Contains(r.LastUserText(), s) {
			out = append(out, r)
		}
	}
	return out
}

func TestRealStarterFlowWakeAndNew(t *testing.T) {
	t.Parallel()
	ws, runDir := t.TempDir(), t.TempDir()
	texts := demo.TextsFor("zh")
	srv := claudetest.NewServer(t, demo.Script("zh", ws).Handler())
	o := StarterOptions{Lang: Chinese, Workspace: ws, RunDir: runDir}
	const mail = "记得给 hello.txt 加换行"
	wf, rt, c := realStarter(t, srv, texts.Ask, o, []string{texts.Answer}, func(ch *human.Channel, e Event) {
		if e.Kind == "step" && e.Text == "干活" {
			ch.Send(mail) // mid-run: the coordinator's next inbox check
		}
	})
	if at, failed := c.FailedAt(); failed {
		r, _ := c.Result(at)
		t.Fatalf("failed at %s: %+v", at, r)
	}
	// Clarify: one question on its first turn, answered through the channel.
	first := requestsWith(srv, texts.Ask)
	if len(first) == 0 || !slices.Contains(first[0].Tools, AskTool) {
		t.Fatalf("the clarifier's first request must offer %s", AskTool)
	}
	asks := wf.Channel.(*human.Channel).Asks()
	if len(asks) != 1 || asks[0].Question != texts.Question || asks[0].State != human.Answered || asks[0].Answer != texts.Answer {
		t.Fatalf("asks = %+v", asks)
	}
	notes := wf.Workbench.Notes()
	brief, err := doc.LoadBrief(filepath.Join(notes, "需求.md"))
	if err != nil || !brief.Complete() || !strings.Contains(brief.Goal, texts.Answer) {
		t.Fatalf("brief: %+v, %v", brief, err)
	}
	if g, err := doc.LoadGoal(filepath.Join(notes, "目标.md")); err != nil || len(g.Checks) != 2 {
		t.Fatalf("goal: %+v, %v", g, err)
	}
	if b, err := os.ReadFile(filepath.Join(ws, texts.File)); err != nil || string(b) != texts.Answer+"\n" {
		t.Errorf("the coder's file: %q, %v", b, err)
	}
	want := []string{"确认需求", "设定目标", "干活", "干活·判定#1", "干活#round2", "干活·判定#2", "干活·交代"}
	rows, err := ReadManifest(rt.ManifestPath())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rows {
		got = append(got, r.Step)
		if r.CostUSD <= 0 {
			t.Errorf("manifest row %s has no cost: %+v", r.Step, r)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("manifest = %v, want %v", got, want)
	}
	// Round 2 continued the same session with the judge's reason.
	r2 := requestsWith(srv, "没有达成目标")
	if len(r2) == 0 || !r2[0].HasText(texts.Reason) || !r2[0].HasText("照这份需求做") {
		t.Errorf("round 2 must continue the work session with the judge's reason")
	}
	// The mail reached the coordinator's inbox check and the brief.
	var inboxed bool
	for _, r := range srv.Requests() {
		for _, b := range r.ToolResults() {
			inboxed = inboxed || strings.Contains(b.Content, mail)
		}
	}
	if !inboxed {
		t.Error("the coordinator's inbox check did not return the mail")
	}
	if b := readText(t, filepath.Join(notes, "需求.md")); !strings.Contains(b, "## 运行中补充") || !strings.Contains(b, mail) {
		t.Errorf("the brief lacks the mail:\n%s", b)
	}
	for _, name := range BequestFiles {
		if got := readText(t, filepath.Join(ws, name)); got != BequestBegin+"\n"+texts.Bequest+"\n"+BequestEnd+"\n" {
			t.Errorf("%s = %q", name, got)
		}
	}

	// Wake with new words: brief amended once, goal derived again, the
	// coordinator's session continued and given the words.
	const words = "hello.txt 末尾再加一行 bye"
	srv.Reset()
	_, rt2, c2 := realStarter(t, srv, words, o, nil, nil)
	if at, failed := c2.FailedAt(); failed {
		t.Fatalf("wake failed at %s", at)
	}
	rows, _ = ReadManifest(rt2.ManifestPath())
	got = nil
	for _, r := range rows[len(want):] {
		got = append(got, r.Step)
	}
	if want := []string{"设定目标", "干活", "干活·判定#1", "干活·交代"}; !slices.Equal(got, want) {
		t.Errorf("wake manifest = %v, want %v", got, want)
	}
	b := readText(t, filepath.Join(notes, "需求.md"))
	if strings.Count(b, words) != 1 || !strings.Contains(b, "## 唤醒时追加") {
		t.Errorf("the brief must carry the words once under the wake label:\n%s", b)
	}
	if sets := requestsWith(srv, "变成一个可判定的目标"); len(sets) == 0 || !sets[0].HasText(words) {
		t.Error("the goal was not derived again from the amended brief")
	}
	woke := requestsWith(srv, "判定标准已经按这句话重新推导过")
	if len(woke) == 0 || !woke[0].HasText(words) || !woke[0].HasText("照这份需求做") || !woke[0].HasText(texts.Round2) {
		t.Error("the coordinator's own session must be continued with the words")
	}

	// New: archived, and an empty ask is refused.
	if _, err := StarterFlow("", StarterOptions{Lang: Chinese, Workspace: ws, RunDir: runDir, New: true}); err == nil {
		t.Error("new with no ask must be refused")
	}
	if _, err := os.Stat(filepath.Join(notes, "需求.md")); err == nil {
		t.Error("new left the brief in place")
	}
	if w, _ := WakeState(o); w.Waking || len(w.Steps) != 0 {
		t.Errorf("after new: %+v", w)
	}
}

func TestRealStarterUnreachableAnswers(t *testing.T) {
	t.Parallel()
	texts := demo.TextsFor("zh")
	for _, tc := range []struct {
		name    string
		answers []string
		rounds  int // work rounds run
		failed  bool
	}{
		{"accept", []string{texts.Answer, "接受这个结果,就这样往下走"}, 1, false},
		{"amend", []string{texts.Answer, "修改目标", "在 Linux 上验就行"}, 2, false},
		{"wrong", []string{texts.Answer, "这里能验"}, 2, false},
		{"no answer", []string{texts.Answer, ""}, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ws, runDir := t.TempDir(), t.TempDir()
			script := demo.Script("zh", ws)
			script["判定这一轮"] = []claudetest.Responder{claudetest.Func(func(req *claudetest.Request) claudetest.Reply {
				if req.HasText(texts.Round2) {
					return claudetest.StructuredOutput(map[string]any{"items": []map[string]string{
						{"id": "c1", "status": "passed", "evidence": "cat hello.txt", "reason": "ok"},
						{"id": "c2", "status": "passed", "evidence": "ls: hello.txt", "reason": "ok"}},
						"conclusion": "achieved", "reason": texts.Passed})
				}
				return claudetest.StructuredOutput(map[string]any{"items": []map[string]string{
					{"id": "c1", "status": "passed", "evidence": "cat hello.txt", "reason": "ok"},
					{"id": "c2", "status": "not_run", "evidence": "uname -a: Linux", "reason": "要在 macOS 上运行"}},
					"conclusion": "unreachable", "reason": "这里没有 macOS", "missing": "一台 macOS", "why_no_work": "干活变不出另一个平台"})
			})}
			srv := claudetest.NewServer(t, script.Handler())
			_, rt, c := realStarter(t, srv, texts.Ask, StarterOptions{Lang: Chinese, Workspace: ws, RunDir: runDir}, tc.answers, nil)
			rows, _ := ReadManifest(rt.ManifestPath())
			rounds := 0
			for _, r := range rows {
				if r.Step == "干活" || strings.HasPrefix(r.Step, "干活#round") {
					rounds++
				}
			}
			_, failed := c.FailedAt()
			if rounds != tc.rounds || failed != tc.failed {
				t.Errorf("rounds %d failed %v; want %d %v", rounds, failed, tc.rounds, tc.failed)
			}
			if tc.failed {
				if reason, _ := c.Aborted(); !strings.Contains(reason, "无人应答") {
					t.Errorf("aborted = %q", reason)
				}
			}
			if tc.name == "amend" && !strings.Contains(readText(t, filepath.Join(ws, ".flower", "notes", "目标.md")), "(已修改)在 Linux 上验就行") {
				t.Error("the amended goal is not on disk")
			}
			if tc.name == "wrong" && len(requestsWith(srv, "人认为这个目标是能达成的")) == 0 {
				t.Error("round 2 lacks the human's word")
			}
		})
	}
}

func TestRealStarterIsolateOutsideGitMakesNoRequest(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	srv := claudetest.NewServer(t, demo.Script("zh", ws).Handler())
	_, err := StarterFlow(demo.TextsFor("zh").Ask, StarterOptions{Lang: Chinese, Workspace: ws, Isolate: true})
	if err == nil || !strings.HasPrefix(err.Error(), "--isolate 要求 ") {
		t.Fatalf("err = %v", err)
	}
	if n := srv.Count(); n != 0 {
		t.Errorf("%d API requests", n)
	}
}

// TestRealStarterAKilledProcessResumesTheWorkSession: the process is killed
// while the coordinator's turn runs; the next run wakes (the brief and the
// goal are on disk), skips clarify and goal, and resumes the killed
// session from the lineage with the carry-on prompt.
func TestRealStarterAKilledProcessResumesTheWorkSession(t *testing.T) {
	t.Parallel()
	ws, runDir := t.TempDir(), t.TempDir()
	texts := demo.TextsFor("zh")
	script := demo.Script("zh", ws).Handler()
	release := make(chan struct{})
	var once sync.Once
	var hung atomic.Bool
	srv := claudetest.NewServer(t, func(ctx context.Context, r *claudetest.Request) claudetest.Reply {
		if r.Subagent || !strings.Contains(r.LastUserText(), "照这份需求做") {
			return script(ctx, r)
		}
		if len(r.ToolResults()) == 0 {
			return bashReply("ls")
		}
		hung.Store(true) // the killed turn
		select {
		case <-release:
		case <-ctx.Done():
		}
		return claudetest.Say("too late")
	})
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	cfg, err := json.Marshal(workflowHelperConfig{WS: ws, RunDir: runDir, CLI: claudetest.CLIPath(t), Env: claudetest.Env(t, srv), Starter: texts.Ask})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "FLOWER_TEST_WORKFLOW_HELPER="+string(cfg))
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var sid string
	for deadline := time.Now().Add(5 * time.Minute); sid == "" || !hung.Load() || !storeHas(t, runDir, ws, sid); {
		select {
		case err := <-exited:
			t.Fatalf("the helper ended before it was killed: %v\n%s", err, out.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			<-exited
			t.Fatalf("no work session to kill (%q)\n%s", sid, out.String())
		}
		sid, _ = OpenLineage(runDir, ws).Session("干活")
	}
	_ = cmd.Process.Kill()
	<-exited
	once.Do(func() { close(release) })

	if w, _ := WakeState(StarterOptions{Lang: Chinese, Workspace: ws, RunDir: runDir}); !w.Waking || w.Steps["干活"] != sid {
		t.Fatalf("wake state after the kill: %+v", w)
	}
	_, rt, c := realStarter(t, srv, "", StarterOptions{Lang: Chinese, Workspace: ws, RunDir: runDir}, nil, nil)
	if at, failed := c.FailedAt(); failed {
		t.Fatalf("failed at %s", at)
	}
	if got, _ := c.Session("干活"); got != sid {
		t.Errorf("the work step ran in %s, want the killed session %s", got, sid)
	}
	carry := requestsWith(srv, "接着做。上次干到哪")
	if len(carry) == 0 || !carry[0].HasText("照这份需求做") {
		t.Error("the killed session was not resumed with the carry-on prompt")
	}
	rows, _ := ReadManifest(rt.ManifestPath())
	var last []string
	for _, r := range rows {
		last = append(last, r.Step)
	}
	if !slices.Contains(last, "干活·判定#1") || slices.Index(last, "干活·交代") != len(last)-1 {
		t.Errorf("manifest = %v", last)
	}
}

// TestRealStarterFlowInEnglish: the demo script and the flow's names and
// prompts in English, end to end.
func TestRealStarterFlowInEnglish(t *testing.T) {
	t.Parallel()
	ws, runDir := t.TempDir(), t.TempDir()
	texts := demo.TextsFor("en")
	srv := claudetest.NewServer(t, demo.Script("en", ws).Handler())
	o := StarterOptions{Workspace: ws, RunDir: runDir, Lang: English}
	wf, err := StarterFlow(texts.Ask, o)
	if err != nil {
		t.Fatal(err)
	}
	answerer(t, wf.Channel.(*human.Channel), texts.Answer)
	rt := newTestRuntimeIn(t, ws, srv, WithRunDir(runDir), WithWorkbench(wf.Workbench), WithLanguage(English))
	c, err := wf.Run(runCtx(t), rt, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if at, failed := c.FailedAt(); failed {
		t.Fatalf("failed at %s", at)
	}
	want := []string{"clarify", "goal", "work", "work·judge#1", "work#round2", "work·judge#2", "work·bequest"}
	if got := labels(t, rt); !slices.Equal(got, want) {
		t.Errorf("labels = %v, want %v", got, want)
	}
	if b, err := os.ReadFile(filepath.Join(ws, texts.File)); err != nil || string(b) != texts.Answer+"\n" {
		t.Errorf("the coder's file: %q, %v", b, err)
	}
	if got := readText(t, filepath.Join(ws, "AGENTS.md")); !strings.Contains(got, texts.Bequest) {
		t.Errorf("AGENTS.md = %q", got)
	}
	g, err := doc.LoadGoal(filepath.Join(wf.Workbench.Notes(), "goal.md"))
	if err != nil {
		t.Fatal(err)
	}
	// The goal came back in structure through the real CLI: its items keep
	// their ids and commands in the goal file.
	if items := judge.Items(g); len(items) != 2 || items[0].ID != "c1" || items[0].Command != "cat "+texts.File {
		t.Errorf("the goal's items: %+v", items)
	}
	// Each judge was asked for structure, and its request carries flower's
	// own runs of the goal's commands, measured before the judge read
	// anything.
	judges := requestsWith(srv, "Judge this round")
	if len(judges) == 0 {
		t.Fatal("no judge request")
	}
	for _, r := range judges {
		if !r.WantsStructured() || !r.HasText("## Measured by flower") || !r.HasText("cat "+texts.File) || !r.HasText("Exit status: 0") {
			t.Errorf("a judge request without structure or flower's measurement:\n%s", r.LastUserText())
		}
	}
	// The real CLI's structured_output was read: the last round's verdict
	// document, rendered from it, says achieved.
	if v, err := doc.LoadVerdict(filepath.Join(runDir, VerdictName)); err != nil || v.State != doc.Achieved {
		t.Errorf("the verdict document: %+v, %v", v, err)
	}
}
