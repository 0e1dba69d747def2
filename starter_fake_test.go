package flower

// Starter flow tests on the real *Runtime driving the test binary as a
// scripted `claude` (fakeWorkflowCLI with replies.json): every branch of
// clarify, goal, the goal guard, wake and the bequest, cheaply.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowerrun/flower/doc"
	"github.com/flowerrun/flower/event"
	"github.com/flowerrun/flower/human"
)

const (
	fakeBrief = "## 目标\n做一个 hello.txt\n\n## 验收标准\n- hello.txt 里是 hello\n\n## 边界\n不做界面\n\n## 未知与假设\n无"
	// fakeGoal is the goal step's structured answer; fakeGoalDoc is the
	// goal file it becomes (as an older run wrote it, it reads the same).
	fakeGoal    = `{"statement":"hello.txt 存在且内容是 hello","checklist":[{"id":"c1","text":"运行 cat hello.txt,看到 hello"},{"id":"c2","text":"运行 ls,看到 hello.txt"}]}`
	fakeGoalDoc = "## 目标\nhello.txt 存在且内容是 hello\n\n## 判定清单\n- [c1] 运行 cat hello.txt,看到 hello\n- [c2] 运行 ls,看到 hello.txt"
	fakeNotYet  = `{"items":[{"id":"c1","status":"passed","evidence":"cat hello.txt: hello","reason":"ok"},{"id":"c2","status":"failed","evidence":"ls: 没有 hello.txt","reason":"缺一个测试"}],"conclusion":"not_yet","reason":"缺一个测试"}`
	fakeDone    = `{"items":[{"id":"c1","status":"passed","evidence":"cat hello.txt: hello","reason":"ok"},{"id":"c2","status":"passed","evidence":"ls: hello.txt","reason":"ok"}],"conclusion":"achieved","reason":"都过了"}`
	fakeNoWay   = `{"items":[{"id":"c1","status":"passed","evidence":"cat hello.txt: hello","reason":"ok"},{"id":"c2","status":"not_run","evidence":"uname -a: Linux","reason":"要在 macOS 上运行"}],"conclusion":"unreachable","reason":"这里没有 macOS","missing":"一台 macOS","why_no_work":"干活变不出另一个平台"}`
	fakeBequest = "# 交代\n这是 hello.txt 的生成器。看 .flower/INDEX.md。"
)

// starterRules are the replies of a whole starter flow; verdicts are the
// round judges' replies in order.
func starterRules(verdicts ...string) []fakeRule {
	return []fakeRule{
		{Match: "判定这一轮", Replies: verdicts},
		{Match: "给下一个接手这个仓库", Replies: []string{fakeBequest}},
		{Match: "没有达成目标", Replies: []string{"第二轮:补上了"}},
		{Match: "判定标准已经按这句话重新推导过", Replies: []string{"按新的话改好了"}},
		{Match: "接着做。上次干到哪", Replies: []string{"接着做完了"}},
		{Match: "照这份需求做", Replies: []string{"第一轮:写好了"}},
		{Match: "变成一个可判定的目标", Replies: []string{fakeGoal}},
		{Match: "", Replies: []string{fakeBrief}}, // the clarifier gets the ask
	}
}

func (f *fakeFlow) script(rules []fakeRule) {
	f.t.Helper()
	b, err := json.Marshal(rules)
	if err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.calls, "replies.json"), b, 0o600); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fakeFlow) options() StarterOptions {
	return StarterOptions{Lang: Chinese, Workspace: f.ws, RunDir: f.runDir}
}

// runStarter builds the starter flow and runs it on a new Runtime (one
// "process"), returning the flow, the runtime and the ctx.
func (f *fakeFlow) runStarter(ask string, o StarterOptions, onEvent func(Event)) (*Workflow, *Runtime, *Ctx) {
	f.t.Helper()
	wf, err := StarterFlow(ask, o)
	if err != nil {
		f.t.Fatal(err)
	}
	rt := f.runtime(WithWorkbench(wf.Workbench))
	c, err := wf.Run(runCtx(f.t), rt, onEvent, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	return wf, rt, c
}

// callsMatching are the calls whose prompt holds s, in order.
func (f *fakeFlow) callsMatching(s string) []fakeCall {
	var out []fakeCall
	for n := 1; n <= f.count(); n++ {
		if c := f.call(n); strings.Contains(c.Prompt, s) {
			out = append(out, c)
		}
	}
	return out
}

func readText(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestFakeStarterFullFlowTwoRoundsAndTheBequest(t *testing.T) {
	t.Parallel()
	f := newFakeFlow(t)
	f.script(starterRules(fakeNotYet, fakeDone))
	wf, rt, c := f.runStarter("帮我做一个 hello", f.options(), nil)
	if at, failed := c.FailedAt(); failed {
		t.Fatalf("the flow failed at %s (%v)", at, c.Keys())
	}
	want := []string{"确认需求", "设定目标", "干活", "干活·判定#1", "干活#round2", "干活·判定#2", "干活·交代"}
	if got := labels(t, rt); !slices.Equal(got, want) {
		t.Errorf("manifest labels = %v, want %v", got, want)
	}
	notes := wf.Workbench.Notes()
	if b, err := doc.LoadBrief(filepath.Join(notes, "需求.md")); err != nil || !b.Complete() {
		t.Errorf("brief on disk: %+v, %v", b, err)
	}
	if g, err := doc.LoadGoal(filepath.Join(notes, "目标.md")); err != nil || len(g.Checks) != 2 {
		t.Errorf("goal on disk: %+v, %v", g, err)
	}
	work := f.callsMatching("照这份需求做")
	if len(work) != 1 || !strings.Contains(work[0].Prompt, "hello.txt 里是 hello") ||
		!strings.Contains(work[0].Prompt, "做完的判定标准") || !strings.Contains(work[0].Prompt, "运行 ls,看到 hello.txt") {
		t.Fatalf("the work prompt must carry the brief and the checklist: %+v", work)
	}
	workSID, _ := c.Session("干活")
	round2 := f.callsMatching("没有达成目标")
	if len(round2) != 1 || !strings.Contains(round2[0].Prompt, "缺一个测试") {
		t.Fatalf("round 2 did not get the judge's reason: %+v", round2)
	}
	if sid, fork := round2[0].resumed(); sid != workSID || fork {
		t.Errorf("round 2 resumed %q (fork %v), want the work session %s", sid, fork, workSID)
	}
	for _, j := range f.callsMatching("判定这一轮") {
		if sid, _ := j.resumed(); sid != "" {
			t.Errorf("a judge resumed %s; every judge is a fresh session", sid)
		}
	}
	lin := OpenLineage(f.runDir, f.ws).Steps()
	if keys := slices.Sorted(maps.Keys(lin)); !slices.Equal(keys, []string{"干活", "确认需求"}) {
		t.Errorf("lineage steps = %v; judges (the goal step too) and the bequest never enter it", keys)
	}
	beq := f.callsMatching("给下一个接手这个仓库")
	if len(beq) != 1 {
		t.Fatalf("bequest calls: %d", len(beq))
	}
	if sid, fork := beq[0].resumed(); sid != workSID || !fork {
		t.Errorf("the bequest resumed %q fork %v; it must fork the coordinator's last session %s", sid, fork, workSID)
	}
	for _, name := range BequestFiles {
		got := readText(t, filepath.Join(f.ws, name))
		if want := BequestBegin + "\n" + fakeBequest + "\n" + BequestEnd + "\n"; got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	if v, _ := c.Get(RoundKey); v != 2 {
		t.Errorf("rounds = %v", v)
	}
}

func TestFakeStarterWakeWithNewWordsThenNew(t *testing.T) {
	t.Parallel()
	f := newFakeFlow(t)
	f.script(starterRules(fakeDone))
	f.runStarter("帮我做一个 hello", f.options(), nil)
	first := f.count()
	firstWork, _ := OpenLineage(f.runDir, f.ws).Session("干活")

	const words = "再加一个 world.txt"
	// The same words twice: the brief is amended once, so only the first
	// wake derives the goal again.
	wantLabels := [][]string{{"设定目标", "干活", "干活·判定#1", "干活·交代"}, {"干活", "干活·判定#1", "干活·交代"}}
	for wake, want := range wantLabels {
		before := len(labels(t, f.runtime()))
		_, rt, c := f.runStarter(words, f.options(), nil)
		if at, failed := c.FailedAt(); failed {
			t.Fatalf("wake %d failed at %s", wake, at)
		}
		if got := labels(t, rt)[before:]; !slices.Equal(got, want) {
			t.Errorf("wake %d labels = %v, want %v (clarify skipped)", wake, got, want)
		}
	}
	brief := readText(t, filepath.Join(f.ws, ".flower", "notes", "需求.md"))
	if strings.Count(brief, words) != 1 || strings.Count(brief, "## 唤醒时追加") != 1 {
		t.Errorf("the brief must be amended once under the wake label:\n%s", brief)
	}
	calls := f.callsMatching("判定标准已经按这句话重新推导过")
	if len(calls) != 1 || !strings.HasPrefix(calls[0].Prompt, words) || !strings.Contains(calls[0].Prompt, "运行 ls,看到 hello.txt") {
		t.Fatalf("the coordinator must get the words and the new checklist once: %+v", calls)
	}
	if sid, fork := calls[0].resumed(); sid != firstWork || fork {
		t.Errorf("the wake resumed %q; want the coordinator's session %s", sid, firstWork)
	}
	sets := f.callsMatching("变成一个可判定的目标")
	if len(sets) != 2 || !strings.Contains(sets[1].Prompt, words) {
		t.Errorf("the goal must be derived again from the amended brief: %d set-goal calls", len(sets))
	}
	for _, set := range sets {
		if sid, _ := set.resumed(); sid != "" {
			t.Errorf("the goal's judge resumed %s; a judging session is always new", sid)
		}
	}
	if last := f.call(f.count() - 2); last.Prompt != words {
		t.Errorf("the second wake's coordinator prompt = %q, want the words alone (nothing derived again)", last.Prompt)
	}
	if f.count() <= first {
		t.Fatal("no calls on wake")
	}

	// New: moved into notes/archive/<timestamp>/, then a fresh start.
	wf, err := StarterFlow("", StarterOptions{Lang: Chinese, Workspace: f.ws, RunDir: f.runDir, New: true})
	if wf != nil || err == nil || err.Error() != "要给一句诉求,例如 flower '帮我做一个 X'" {
		t.Fatalf("new without an ask: %v, %v", wf, err)
	}
	dirs, _ := filepath.Glob(filepath.Join(f.ws, ".flower", "notes", "archive", "*"))
	if len(dirs) != 1 {
		t.Fatalf("archive folders: %v", dirs)
	}
	for _, name := range []string{LineageName, "需求.md", "目标.md"} {
		if _, err := os.Stat(filepath.Join(dirs[0], name)); err != nil {
			t.Errorf("%s not archived: %v", name, err)
		}
	}
	if _, err := os.Stat(filepath.Join(f.ws, ".flower", "notes", "需求.md")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the brief is still in notes: %v", err)
	}
	if _, err := os.Stat(filepath.Join(f.ws, ".flower", "notes", "问答记录.md")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Error(err)
	}
}

// answerer answers the channel's questions in order with answers ("" =
// decline) until the test ends.
func answerer(t *testing.T, ch *human.Channel, answers ...string) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for _, a := range answers {
			q, err := ch.NextAsk(ctx)
			if err != nil {
				return
			}
			if a == "" {
				ch.Decline(q.ID, "")
			} else {
				ch.Answer(q.ID, a)
			}
		}
	}()
	t.Cleanup(func() { cancel(); wg.Wait() })
}

func TestFakeStarterUnreachableAsksTheHuman(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		answers  []string
		verdicts []string
		labels   []string
		check    func(t *testing.T, f *fakeFlow, c *Ctx)
	}{
		{"accept", []string{"接受这个结果,就这样往下走"}, []string{fakeNoWay},
			[]string{"确认需求", "设定目标", "干活", "干活·判定#1", "干活·交代"},
			func(t *testing.T, f *fakeFlow, c *Ctx) {
				if at, failed := c.FailedAt(); failed {
					t.Errorf("accepted, yet failed at %s", at)
				}
			}},
		{"amend", []string{"修改目标", "也要在 Linux 上跑"}, []string{fakeNoWay, fakeDone},
			[]string{"确认需求", "设定目标", "干活", "干活·判定#1", "干活#round2", "干活·判定#2", "干活·交代"},
			func(t *testing.T, f *fakeFlow, c *Ctx) {
				goal := readText(t, filepath.Join(f.ws, ".flower", "notes", "目标.md"))
				if !strings.Contains(goal, "hello.txt 存在且内容是 hello") || !strings.Contains(goal, "(已修改)也要在 Linux 上跑") {
					t.Errorf("the goal must be appended to, never overwritten:\n%s", goal)
				}
				r2 := f.callsMatching("没有达成目标")
				if len(r2) != 1 || !strings.Contains(r2[0].Prompt, "目标已被人修改。新目标:") {
					t.Errorf("round 2 = %+v", r2)
				}
				if j := f.callsMatching("判定这一轮"); len(j) != 2 || !strings.Contains(j[1].Prompt, "也要在 Linux 上跑") {
					t.Errorf("the second judge must judge the amended goal")
				}
			}},
		{"your verdict is wrong", []string{"在 Linux 上也能验"}, []string{fakeNoWay, fakeDone},
			[]string{"确认需求", "设定目标", "干活", "干活·判定#1", "干活#round2", "干活·判定#2", "干活·交代"},
			func(t *testing.T, f *fakeFlow, c *Ctx) {
				r2 := f.callsMatching("没有达成目标")
				if len(r2) != 1 || !strings.Contains(r2[0].Prompt, "人认为这个目标是能达成的,判定者判断有误。人的说法:在 Linux 上也能验") {
					t.Errorf("round 2 = %+v", r2)
				}
			}},
		{"no answer", []string{""}, []string{fakeNoWay, fakeDone},
			[]string{"确认需求", "设定目标", "干活", "干活·判定#1", "干活·交代"},
			func(t *testing.T, f *fakeFlow, c *Ctx) {
				at, failed := c.FailedAt()
				reason, aborted := c.Aborted()
				if !failed || at != "干活" || !aborted || !strings.HasPrefix(reason, "目标被判为无法达成,而且无人应答 —— 已停下。理由:这里没有 macOS") {
					t.Errorf("FailedAt %q %v, Aborted %q", at, failed, reason)
				}
				if len(f.callsMatching("没有达成目标")) != 0 {
					t.Error("a StepAbort must use no more rounds")
				}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeFlow(t)
			f.script(starterRules(tc.verdicts...))
			wf, err := StarterFlow("帮我做一个 hello", f.options())
			if err != nil {
				t.Fatal(err)
			}
			ch := wf.Channel.(*human.Channel)
			answerer(t, ch, tc.answers...)
			rt := f.runtime(WithWorkbench(wf.Workbench))
			c, err := wf.Run(runCtx(f.t), rt, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := labels(t, rt); !slices.Equal(got, tc.labels) {
				t.Errorf("labels = %v, want %v", got, tc.labels)
			}
			asks := ch.Asks()
			if len(asks) == 0 || !strings.HasPrefix(asks[0].Question, "目标被判为**无法达成**:这里没有 macOS\n\n缺少:一台 macOS\n为什么干活补不上:干活变不出另一个平台\n怎么办?") ||
				!slices.Equal(asks[0].Options, []string{"接受这个结果,就这样往下走", "修改目标", "你判断错了,继续做"}) {
				t.Fatalf("asks = %+v", asks)
			}
			tc.check(t, f, c)
		})
	}
}

func TestFakeGoalGuardRoundsAreTotalRoundsAndTheStepIsCopied(t *testing.T) {
	t.Parallel()
	f := newFakeFlow(t)
	f.script(starterRules(fakeNotYet))
	step := Step{Name: "干活", Spec: wfSpec(), Prompt: Text("照这份需求做 x"), ResumePrompt: Text("resume")}
	guarded := WithGoal(step, nil, GoalGuardOptions{GoalPath: filepath.Join(f.ws, "goal.md"), Rounds: 2, Lang: Chinese})
	if guarded.Retries != 1 || guarded.ResumePrompt == nil || step.Gate != nil || step.Retries != 0 {
		t.Fatalf("WithGoal: retries %d, resume prompt kept %v, original changed %v", guarded.Retries, guarded.ResumePrompt != nil, step.Gate != nil)
	}
	rt := f.runtime()
	c, err := (&Workflow{NoContinuity: true, Steps: []Step{guarded}}).Run(runCtx(t), rt, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := labels(t, rt); !slices.Equal(got, []string{"干活", "干活·判定#1", "干活#round2", "干活·判定#2"}) {
		t.Errorf("labels = %v; Rounds 2 means two rounds in all", got)
	}
	if at, _ := c.FailedAt(); at != "干活" {
		t.Errorf("FailedAt = %q", at)
	}
	if j := f.callsMatching("判定这一轮"); len(j) != 2 || !strings.Contains(j[0].Prompt, "(没有目标)") {
		t.Errorf("without a goal the judge is told so: %+v", j)
	}
}

func TestGoalGuardWithoutARuntimeAborts(t *testing.T) {
	guarded := WithGoal(Step{Name: "w", Spec: wfSpec(), Prompt: Text("x")}, nil, GoalGuardOptions{Lang: Chinese})
	ok, err := guarded.Gate(context.Background(), StepResult{OK: true}, NewCtx())
	var abort *StepAbort
	if ok || !errors.As(err, &abort) || abort.Reason != "拿不到 Runtime,无法判定目标(ctx['_runtime'] 缺失)" {
		t.Fatalf("gate = %v, %v", ok, err)
	}
}

func TestFakeStarterWordsTypedWhileAJudgeRunsAreNeverLost(t *testing.T) {
	t.Parallel()
	f := newFakeFlow(t)
	f.script(starterRules(fakeNotYet, fakeDone))
	if err := os.WriteFile(filepath.Join(f.calls, "hold"), []byte("判定这一轮"), 0o600); err != nil {
		t.Fatal(err)
	}
	wf, err := StarterFlow("帮我做一个 hello", f.options())
	if err != nil {
		t.Fatal(err)
	}
	rt := f.runtime(WithWorkbench(wf.Workbench))
	took := make(chan bool, 2)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // while each judge runs: words, then let it finish
		defer wg.Done()
		for k, words := range []string{"先别删旧文件", "顺便写个 README"} {
			held := filepath.Join(f.calls, fmt.Sprintf("held-%d", k+1))
			for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				if _, err := os.Stat(held); err == nil {
					break
				}
			}
			took <- rt.Interrupt(words)
			os.WriteFile(filepath.Join(f.calls, fmt.Sprintf("release-%d", k+1)), nil, 0o600)
		}
	}()
	c, err := wf.Run(runCtx(f.t), rt, nil, nil)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if a, b := <-took, <-took; a || b {
		t.Errorf("Interrupt reported a judge took the words (%v, %v)", a, b)
	}
	if got := labels(t, rt); !slices.Equal(got, []string{"确认需求", "设定目标", "干活", "干活·判定#1", "干活#round2", "干活·判定#2", "干活·交代"}) {
		t.Errorf("labels = %v (a judge must not be interrupted)", got)
	}
	for n := 1; n <= f.count(); n++ {
		call := f.call(n)
		if strings.Contains(call.Prompt, "判定这一轮") || strings.Contains(call.Prompt, "给下一个接手") {
			if strings.Contains(call.Prompt, "先别删旧文件") || strings.Contains(call.Prompt, "顺便写个 README") {
				t.Errorf("an aside run got the human's words: %.200q", call.Prompt)
			}
		}
	}
	if r2 := f.callsMatching("没有达成目标"); len(r2) != 1 || !strings.Contains(r2[0].Prompt, "先别删旧文件") {
		t.Errorf("words typed during judge 1 must reach round 2: %+v", r2)
	}
	// After the last judge there is no next step: the inbox and the brief.
	mail := wf.Channel.(*human.Channel).Mail()
	if len(mail) != 1 || mail[0].Text != "顺便写个 README" {
		t.Errorf("mail = %+v", mail)
	}
	if brief := readText(t, filepath.Join(wf.Workbench.Notes(), "需求.md")); !strings.Contains(brief, "顺便写个 README") {
		t.Errorf("the brief lacks the words:\n%s", brief)
	}
	_ = c
}

func TestFakeStarterInboxMessageReachesTheBrief(t *testing.T) {
	t.Parallel()
	f := newFakeFlow(t)
	f.script(starterRules(fakeDone))
	wf, err := StarterFlow("帮我做一个 hello", f.options())
	if err != nil {
		t.Fatal(err)
	}
	ch := wf.Channel.(*human.Channel)
	rt := f.runtime(WithWorkbench(wf.Workbench))
	onEvent := func(e Event) {
		if e.Kind == "step" && e.Text == "干活" {
			ch.Send("记得写测试")
		}
	}
	if _, err := wf.Run(runCtx(f.t), rt, onEvent, nil); err != nil {
		t.Fatal(err)
	}
	brief := readText(t, filepath.Join(wf.Workbench.Notes(), "需求.md"))
	if !strings.Contains(brief, "## 运行中补充") || !strings.Contains(brief, "记得写测试") {
		t.Errorf("the brief lacks the mail:\n%s", brief)
	}
	if got := ch.TakeInbox(); !strings.Contains(got, "记得写测试") {
		t.Errorf("the inbox lost the mail: %q", got)
	}
}

func TestStarterFlowRefusals(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	_, err := StarterFlow("x", StarterOptions{Lang: Chinese, Workspace: ws, Isolate: true})
	want := "--isolate 要求 " + ws + " 是 git 仓库(每个 subagent 要分一份 worktree)。先 git init,或者去掉 --isolate。"
	if err == nil || err.Error() != want {
		t.Errorf("isolate outside git: %v", err)
	}
	entries, _ := os.ReadDir(ws)
	if sibling, _ := filepath.Glob(filepath.Join(filepath.Dir(ws), ".flower-"+filepath.Base(ws))); len(entries) != 0 || len(sibling) != 0 {
		t.Errorf("isolate outside git wrote %v %v", entries, sibling)
	}
	if _, err := StarterFlow("  ", StarterOptions{Lang: Chinese, Workspace: t.TempDir()}); err == nil || err.Error() != "要给一句诉求,例如 flower '帮我做一个 X'" {
		t.Errorf("empty ask: %v", err)
	}
	if _, err := StarterFlow("x", StarterOptions{Lang: Chinese, Workspace: t.TempDir(), Rounds: -1}); err == nil {
		t.Error("negative rounds accepted")
	}
	if _, err := StarterFlow("", StarterOptions{Workspace: t.TempDir(), Lang: English}); err == nil || err.Error() != "give a one-line request, e.g. flower 'build me an X'" {
		t.Errorf("empty ask in English: %v", err)
	}
}

func TestStarterFlowIsolateInGitUsesTheWorkbenchBesideIt(t *testing.T) {
	t.Parallel()
	ws := filepath.Join(t.TempDir(), "proj")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("git", "init", "-q", ws).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	wf, err := StarterFlow("x", StarterOptions{Lang: Chinese, Workspace: ws, Isolate: true})
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(filepath.Dir(ws), ".flower-proj")
	if wf.Workbench.Root() != want {
		t.Errorf("workbench %s, want %s", wf.Workbench.Root(), want)
	}
	if w, _ := WakeState(StarterOptions{Lang: Chinese, Workspace: ws, Isolate: true}); w.Workbench != want || w.Brief != filepath.Join(want, "notes", "需求.md") {
		t.Errorf("WakeState disagrees: %+v", w)
	}
	coder := wf.Steps[len(wf.Steps)-1].Spec.Agents["coder"]
	if coder.Isolation != "worktree" {
		t.Error("the coder is not isolated")
	}
}

// fileTree lists every path under dirs with its size and modification time.
func fileTree(t *testing.T, dirs ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, d := range dirs {
		filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err == nil {
				fi, _ := e.Info()
				out[p] = fmt.Sprint(fi.Size(), fi.ModTime().UnixNano())
			}
			return nil
		})
	}
	return out
}

func TestFakeWakeStateWritesNothingAndTellsTheWake(t *testing.T) {
	t.Parallel()
	f := newFakeFlow(t)
	before := fileTree(t, f.ws, f.runDir)
	w, err := WakeState(f.options())
	if err != nil || w.Waking || w.Checks != 0 || w.Woke != 0 || len(w.Steps) != 0 {
		t.Fatalf("fresh: %+v, %v", w, err)
	}
	if after := fileTree(t, f.ws, f.runDir); !maps.Equal(before, after) {
		t.Fatalf("WakeState wrote: %v → %v", before, after)
	}
	f.script(starterRules(fakeDone))
	f.runStarter("帮我做一个 hello", f.options(), nil)
	before = fileTree(t, f.ws, f.runDir)
	w, err = WakeState(f.options())
	if err != nil {
		t.Fatal(err)
	}
	if !w.Waking || w.Checks != 2 || w.Woke != 1 || len(w.Steps) != 2 || w.Lang != Chinese ||
		w.Brief != filepath.Join(f.ws, ".flower", "notes", "需求.md") || w.Goal != filepath.Join(f.ws, ".flower", "notes", "目标.md") {
		t.Errorf("after a run: %+v", w)
	}
	if after := fileTree(t, f.ws, f.runDir); !maps.Equal(before, after) {
		t.Errorf("WakeState wrote")
	}
}

func TestDocumentsThatCannotBeLoadedCountAsAbsent(t *testing.T) {
	dir := t.TempDir()
	unreadable := filepath.Join(dir, "brief-dir")
	if err := os.Mkdir(unreadable, 0o755); err != nil {
		t.Fatal(err)
	}
	incomplete := filepath.Join(dir, "edited.md")
	os.WriteFile(incomplete, []byte("## 目标\n只剩目标了\n"), 0o644)
	for _, tc := range []struct {
		name string
		step Step
		said bool
	}{
		{"brief: unreadable", ClarifyStep(nil, unreadable, Text("x"), ClarifyOptions{Lang: Chinese}), true},
		{"brief: missing", ClarifyStep(nil, filepath.Join(dir, "none.md"), Text("x"), ClarifyOptions{Lang: Chinese}), false},
		{"brief: edited into an incomplete one", ClarifyStep(nil, incomplete, Text("x"), ClarifyOptions{Lang: Chinese}), false},
		{"goal: unreadable", GoalStep(nil, unreadable, GoalOptions{Lang: Chinese}), true},
		{"goal: incomplete", GoalStep(nil, incomplete, GoalOptions{Lang: Chinese}), false},
	} {
		c := NewCtx()
		var events []Event
		c.Set(KeyOnEvent, func(e Event) { events = append(events, e) })
		run, err := tc.step.When(context.Background(), c)
		if err != nil || !run {
			t.Errorf("%s: When = %v, %v; the step must run", tc.name, run, err)
		}
		if said := len(events) == 1 && strings.Contains(events[0].Text, "读不了"); said != tc.said {
			t.Errorf("%s: events %+v", tc.name, events)
		}
		if _, ok := c.Get(BriefKey); ok {
			t.Errorf("%s: a brief was loaded", tc.name)
		}
	}
}

func TestStarterNamesPerLanguageAndTheRunDirsLanguageWins(t *testing.T) {
	ws := t.TempDir()
	wf, err := StarterFlow("build x", StarterOptions{Workspace: ws, Lang: English})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range wf.Steps {
		names = append(names, s.Name)
	}
	if !slices.Equal(names, []string{"clarify", "goal", "work"}) || wf.Steps[2].Spec.Name != "coordinator" ||
		wf.Steps[2].Spec.Agents["coder"].Description == "" {
		t.Errorf("English names: %v, %s", names, wf.Steps[2].Spec.Name)
	}
	if ch := wf.Channel.(*human.Channel); ch.AmendPath() != filepath.Join(ws, ".flower", "notes", "brief.md") ||
		ch.LogPath() != filepath.Join(ws, ".flower", "notes", "qa-log.md") {
		t.Errorf("English files: %s %s", ch.AmendPath(), ch.LogPath())
	}
	os.MkdirAll(filepath.Join(ws, "runs"), 0o700)
	if _, err := recordLanguage(filepath.Join(ws, "runs"), Chinese); err != nil {
		t.Fatal(err)
	}
	wf, err = StarterFlow("build x", StarterOptions{Workspace: ws, Lang: English})
	if err != nil {
		t.Fatal(err)
	}
	if wf.Steps[0].Name != "确认需求" || wf.Steps[2].Name != "干活" {
		t.Errorf("a Chinese run directory must keep its names: %s, %s", wf.Steps[0].Name, wf.Steps[2].Name)
	}
	if w, _ := WakeState(StarterOptions{Workspace: ws, Lang: English}); w.Lang != Chinese || filepath.Base(w.Brief) != "需求.md" {
		t.Errorf("WakeState: %+v", w)
	}
}

func TestFakeGoalStepAnnouncesUnverifiableChecksAndJudgeCanRunReachesBothJudges(t *testing.T) {
	t.Parallel()
	f := newFakeFlow(t)
	rules := starterRules(fakeDone)
	rules[6].Replies = []string{strings.Replace(fakeGoal, `]}`, `,{"id":"c3","text":"在 macOS 上运行","unverifiable":"没有 macOS"}]}`, 1)}
	f.script(rules)
	o := f.options()
	o.JudgeCanRun = true
	var tasks []Event
	wf, _, _ := f.runStarter("帮我做一个 hello", o, func(e Event) {
		if e.Kind == "task" && e.Payload["unverifiable"] != nil {
			tasks = append(tasks, e)
		}
	})
	goalPath := filepath.Join(wf.Workbench.Notes(), "目标.md")
	if len(tasks) != 1 || !strings.HasPrefix(tasks[0].Text, "目标里有 1/3 条在这个环境里验不了 —— 它们永远不会通过:其余各条都通过时,运行以\"已达成,除了\"它们结束。现在改 "+goalPath+" 还来得及:\n  · [c3] 在 macOS 上运行") ||
		tasks[0].Payload["unverifiable"] != 1 || tasks[0].Payload["total"] != 3 || tasks[0].Payload["path"] != goalPath {
		t.Fatalf("task events = %+v", tasks)
	}
	if !slices.Contains(wf.Steps[1].Spec.AllowedTools, "Bash") {
		t.Error("JudgeCanRun must reach the goal-setting judge")
	}
	for _, j := range f.callsMatching("判定这一轮") {
		i := slices.Index(j.Args, "--allowedTools")
		if i < 0 || !slices.Contains(strings.Split(j.Args[i+1], ","), "Bash") {
			t.Errorf("the round judge has no Bash: %v", j.Args)
		}
	}
}

func TestFakeWorkflowFinallyRunsHoweverTheStepsEnd(t *testing.T) {
	t.Parallel()
	f := newFakeFlow(t)
	rt := f.runtime()
	var finals []string
	wf := &Workflow{NoContinuity: true, Steps: []Step{{Name: "a", Spec: wfSpec(), Prompt: Text("FAIL a")}},
		Finally: func(_ context.Context, got *Runtime, c *Ctx) {
			at, _ := c.FailedAt()
			finals = append(finals, at)
			if got != rt {
				t.Error("Finally got another Runtime")
			}
		}}
	if _, err := wf.Run(runCtx(f.t), rt, nil, nil); err != nil {
		t.Fatal(err)
	}
	bad := &Workflow{Steps: []Step{{Name: "_x", Spec: wfSpec(), Prompt: Text("x")}}, Finally: wf.Finally}
	if _, err := bad.Run(runCtx(t), rt, nil, nil); err == nil {
		t.Fatal("invalid steps ran")
	}
	if !slices.Equal(finals, []string{"a"}) {
		t.Errorf("Finally ran %v; once after the failed step, never for invalid steps", finals)
	}
}

func TestFakeGoalGuardEmitsEachVerdictWithItsRound(t *testing.T) {
	t.Parallel()
	f := newFakeFlow(t)
	f.script(starterRules(fakeNotYet))
	step := Step{Name: "干活", Spec: wfSpec(), Prompt: Text("照这份需求做 x")}
	guarded := WithGoal(step, nil, GoalGuardOptions{GoalPath: filepath.Join(f.ws, "goal.md"), Rounds: 2})
	var mu sync.Mutex
	var verdicts, steps []Event
	rt := f.runtime()
	_, err := (&Workflow{NoContinuity: true, Steps: []Step{guarded}}).Run(runCtx(t), rt, func(e Event) {
		mu.Lock()
		defer mu.Unlock()
		switch e.Kind {
		case event.Verdict:
			verdicts = append(verdicts, e)
		case event.Step:
			steps = append(steps, e)
		}
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(steps) != 1 || steps[0].Int("rounds") != 2 {
		t.Errorf("step events %+v: want one, with rounds 2", steps)
	}
	if len(verdicts) != 2 {
		t.Fatalf("verdict events %+v: want one per round", verdicts)
	}
	for i, v := range verdicts {
		if v.Int("round") != i+1 || v.Int("rounds") != 2 || v.Str("state") != "not_yet" || v.Str("step") != "干活" || v.Text == "" {
			t.Errorf("verdict %d: %+v", i+1, v)
		}
	}
	// The run's log has each verdict with its round, as the sink got it:
	// a team's worker follows events.jsonl and pushes the work after
	// each judged round.
	data, err := os.ReadFile(filepath.Join(rt.RunDir(), "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var logged []int
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var e Event
		if json.Unmarshal([]byte(line), &e) == nil && e.Kind == event.Verdict {
			logged = append(logged, e.Int("round"))
		}
	}
	if !slices.Equal(logged, []int{1, 2}) {
		t.Errorf("the verdicts' rounds in events.jsonl: %v, want [1 2]", logged)
	}
}
