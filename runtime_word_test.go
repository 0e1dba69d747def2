package flower

// Runtime tests of issue 11 (the Runtime keeps its word) and of issue 9's
// items 11 and 13: the pinned CLI against claudetest's fake Messages API.

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/claude/claudetest"
	"github.com/flowerrun/flower/event"
	"github.com/flowerrun/flower/workbench"
)

func TestRealInterruptAsTheHandoffComesDueReachesTheSuccessor(t *testing.T) {
	t.Parallel()
	handoffPrompt := PromptsFor(Chinese).Handoff[:20]
	var successorGotWords atomic.Bool
	srv := claudetest.NewServer(t, func(ctx context.Context, r *claudetest.Request) claudetest.Reply {
		switch {
		case r.HasText(handoffPrompt):
			return claudetest.Say(handoffDoc)
		case r.HasText("写 main.go"): // the successor's handoff block
			successorGotWords.Store(r.HasText("use the blue one"))
			return claudetest.Say("successor done")
		case len(r.ToolResults()) == 0:
			rep := bashReply("echo working")
			rep.Usage = claudetest.Usage{InputTokens: 60_000, OutputTokens: 5}
			return rep
		default:
			return claudetest.Say("still going")
		}
	})
	rt := newTestRuntime(t, srv, WithHandoff(HandoffPolicy{Window: 100_000}))
	var took atomic.Bool
	var once sync.Once
	res, err := rt.Run(runCtx(t), testSpec(), "SCENARIO:due", RunOptions{OnEvent: func(e Event) {
		if !e.Subagent() && e.Int("context") >= rt.handoff.At() {
			once.Do(func() { took.Store(rt.Interrupt("use the blue one")) })
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if !took.Load() {
		t.Fatal("Interrupt did not take the words while the step ran")
	}
	if !res.OK || len(res.Retired) != 1 || res.Text != "successor done" {
		t.Fatalf("result = %+v", res)
	}
	if !successorGotWords.Load() {
		t.Error("the successor never received the human's words")
	}
}

func TestRealInterruptBetweenStepsReachesTheNextStep(t *testing.T) {
	t.Parallel()
	srv := claudetest.NewServer(t, func(ctx context.Context, r *claudetest.Request) claudetest.Reply {
		if r.HasText("prefer tabs") {
			return claudetest.Say("noted the words")
		}
		return claudetest.Say("no words")
	})
	rt := newTestRuntime(t, srv)
	if rt.Interrupt("prefer tabs") {
		t.Error("Interrupt with no step running reported that a step took it")
	}
	res, err := rt.Run(runCtx(t), testSpec(), "SCENARIO:next", RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "noted the words" {
		t.Errorf("the next step did not get the words kept between steps: %+v", res)
	}
	// Delivered once: the step after gets none.
	res, err = rt.Run(runCtx(t), testSpec(), "SCENARIO:after", RunOptions{})
	if err != nil || res.Text != "no words" {
		t.Errorf("the words were delivered twice: %+v, %v", res, err)
	}
}

func TestRealInvalidSessionOptionsFailAtOnce(t *testing.T) {
	t.Parallel()
	srv := claudetest.NewServer(t, func(ctx context.Context, r *claudetest.Request) claudetest.Reply {
		return claudetest.Say("never")
	})
	notADir := filepath.Join(t.TempDir(), "plugin")
	if err := os.WriteFile(notADir, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	rt := newTestRuntime(t, srv, WithPluginDirs(notADir))
	var log eventLog
	res, err := rt.Run(runCtx(t), testSpec(), "SCENARIO:bad", RunOptions{OnEvent: log.add})
	if err == nil || res.OK {
		t.Fatalf("err = %v, result = %+v", err, res)
	}
	if res.Attempts != 1 || len(log.of(event.Retry, "")) != 0 || srv.Count() != 0 {
		t.Errorf("an invalid spec was retried: attempts %d, retry events %d, requests %d", res.Attempts, len(log.of(event.Retry, "")), srv.Count())
	}
	if !strings.Contains(res.Error, "plugin") {
		t.Errorf("error %q does not say what is wrong", res.Error)
	}
}

func TestRealCancelledNetworkWaitSaysCancelled(t *testing.T) {
	t.Parallel()
	srv := claudetest.NewServer(t, func(ctx context.Context, r *claudetest.Request) claudetest.Reply {
		return claudetest.Reply{Fault: claudetest.ServerError()}
	})
	offline := fastResilience
	offline.Probe = func(context.Context, string, int) bool { return false }
	rt := newTestRuntime(t, srv, WithResilience(offline), WithEnv(map[string]string{"CLAUDE_CODE_MAX_RETRIES": "0"}))
	ctx, cancel := context.WithCancel(runCtx(t))
	defer cancel()
	res, err := rt.Run(ctx, testSpec(), "SCENARIO:offline", RunOptions{OnEvent: func(e Event) {
		if e.Kind == event.Retry && strings.Contains(e.Text, "不可达") {
			cancel()
		}
	}})
	if err == nil || res.OK {
		t.Fatalf("err = %v, result = %+v", err, res)
	}
	if strings.Contains(res.Error, "未恢复") || !strings.Contains(res.Error, "等网络恢复时被取消") {
		t.Errorf("error %q: a cancelled wait must say it was cancelled, not that the network stayed down", res.Error)
	}
}

func TestRealNewLeavesTheGivenWorkbenchAlone(t *testing.T) {
	t.Parallel()
	srv := claudetest.NewServer(t, func(ctx context.Context, r *claudetest.Request) claudetest.Reply {
		return claudetest.Say("ok")
	})
	wb := workbench.New(t.TempDir())
	before := *wb
	rt := newTestRuntime(t, srv, WithWorkbench(wb), WithLanguage(English))
	if _, err := rt.Run(runCtx(t), testSpec(), "SCENARIO:wb", RunOptions{}); err != nil {
		t.Fatal(err)
	}
	if *wb != before {
		t.Errorf("New changed the caller's workbench: %+v, was %+v", *wb, before)
	}
	if !srv.Requests()[0].HasText(workbench.EnglishTexts.PromptRules) {
		t.Error("the runtime's own copy of the workbench should speak the run's language")
	}
}

func TestRealTwoDegradedHandoffsKeepTheLastRealSession(t *testing.T) {
	t.Parallel()
	handoffPrompt := PromptsFor(Chinese).Handoff[:20]
	srv := claudetest.NewServer(t, func(ctx context.Context, r *claudetest.Request) claudetest.Reply {
		if r.HasText(handoffPrompt) {
			return claudetest.Say("sorry, I lost track")
		}
		rep := bashReply("echo heavy")
		rep.Usage = claudetest.Usage{InputTokens: 60_000, OutputTokens: 5}
		return rep
	})
	rt := newTestRuntime(t, srv, WithHandoff(HandoffPolicy{Window: 100_000}))
	var sessions []string
	res, err := rt.Run(runCtx(t), testSpec(), "SCENARIO:lost", RunOptions{OnSession: func(_, sid string) { sessions = append(sessions, sid) }})
	if err == nil || res.OK {
		t.Fatalf("err = %v, result %+v", err, res)
	}
	if len(sessions) == 0 || res.SessionID != sessions[len(sessions)-1] {
		t.Errorf("SessionID = %q, want the last real session of %v", res.SessionID, sessions)
	}
	rows, err := ReadManifest(rt.ManifestPath())
	if err != nil || len(rows) != 1 || rows[0].SessionID != res.SessionID {
		t.Errorf("manifest rows = %+v, %v", rows, err)
	}
}

// TestRealTotalCostAndRescueDuringARun reads the step in flight from other
// goroutines while Run folds messages into it; -race catches a read that is
// not under the lock.
func TestRealTotalCostAndRescueDuringARun(t *testing.T) {
	t.Parallel()
	srv := claudetest.NewServer(t, func(ctx context.Context, r *claudetest.Request) claudetest.Reply {
		if len(r.ToolResults()) < 3 {
			return bashReply("echo turn")
		}
		return claudetest.Say("done")
	})
	rt := newTestRuntime(t, srv)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
				_ = rt.TotalCost()
				runtime.Gosched()
			}
		}
	}()
	var rescued sync.Once
	res, err := rt.Run(runCtx(t), testSpec(), "SCENARIO:race", RunOptions{OnEvent: func(e Event) {
		if e.Kind == event.Result {
			rescued.Do(func() {
				wg.Add(1)
				go func() { defer wg.Done(); rt.Rescue() }()
			})
		}
	}})
	close(stop)
	wg.Wait()
	if err != nil || !res.OK {
		t.Fatalf("the run itself must go on after a Rescue: %+v, %v", res, err)
	}
	// The step ended after all: its real row replaces the rescued one.
	rows, err := ReadManifest(rt.ManifestPath())
	if err != nil || len(rows) != 1 || !rows[0].OK || rows[0].CostUSD != res.CostUSD {
		t.Errorf("rows = %+v, %v: want the finished step's row", rows, err)
	}
	if got := rt.TotalCost(); got <= 0 || len(rt.Results()) != 1 {
		t.Errorf("TotalCost = %v, results %d: the step must count once", got, len(rt.Results()))
	}
}

var _ = errors.New

// TestRealNewKeepsTheDotenvInTheRuntime: not parallel, it owns the
// process environment for its duration.
func TestRealNewKeepsTheDotenvInTheRuntime(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	envFile := filepath.Join(t.TempDir(), "flower.env")
	if err := os.WriteFile(envFile, []byte("ANTHROPIC_API_KEY=sk-from-dotenv\nFLOWER_TEST_DOTENV_MARK=seen\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("FLOWER_ENV", envFile)
	for _, k := range []string{"ANTHROPIC_API_KEY", "FLOWER_TEST_DOTENV_MARK"} {
		t.Setenv(k, "") // restored afterwards
		os.Unsetenv(k)
	}
	srv := claudetest.NewServer(t, func(ctx context.Context, r *claudetest.Request) claudetest.Reply {
		return bashReply("echo mark=$FLOWER_TEST_DOTENV_MARK")
	})
	env := claudetest.Env(t, srv)
	delete(env, "ANTHROPIC_API_KEY") // the .env file must supply it
	cli := claudetest.CLIPath(t)
	rt, err := New(t.TempDir(), WithRunDir(t.TempDir()), WithEnv(env), WithResilience(fastResilience),
		WithSessionOptions(func(o *claude.Options) { o.CLIPath, o.BaseEnv = cli, claudetest.BaseEnv() }))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	for _, k := range []string{"ANTHROPIC_API_KEY", "FLOWER_TEST_DOTENV_MARK"} {
		if v, ok := os.LookupEnv(k); ok {
			t.Errorf("New set %s=%q in the process environment", k, v)
		}
	}
	spec := testSpec()
	spec.MaxTurns = 2
	rt.Run(runCtx(t), spec, "SCENARIO:dotenv", RunOptions{})
	reqs := srv.Requests()
	if len(reqs) == 0 || reqs[0].Header.Get("x-api-key") != "sk-from-dotenv" {
		t.Fatalf("the CLI did not authenticate with the .env key")
	}
	if len(reqs) < 2 || !reqs[1].HasText("mark=seen") {
		t.Error("the CLI's tools did not see the .env variable")
	}
}

func TestNewRefusesALanguageItDoesNotSpeak(t *testing.T) {
	t.Parallel()
	for _, tag := range []Lang{"ko", "english", "fr-FR"} {
		_, err := New(t.TempDir(), WithRunDir(t.TempDir()), WithLanguage(tag), WithEnv(map[string]string{"ANTHROPIC_API_KEY": "sk-fake"}))
		if err == nil || !strings.Contains(err.Error(), `"en"`) || !strings.Contains(err.Error(), `"zh"`) {
			t.Errorf("WithLanguage(%q): %v, want an error listing en and zh", tag, err)
		}
	}
	for _, tag := range []Lang{"", "zh-CN", "en_GB"} {
		rt, err := New(t.TempDir(), WithRunDir(t.TempDir()), WithLanguage(tag), WithEnv(map[string]string{"ANTHROPIC_API_KEY": "sk-fake"}))
		if err != nil {
			t.Errorf("WithLanguage(%q): %v", tag, err)
			continue
		}
		rt.Close()
	}
}

func TestTheRunDirectoryKeepsTheLanguageOfItsFirstRun(t *testing.T) {
	t.Parallel()
	runDir, ws := t.TempDir(), t.TempDir()
	key := WithEnv(map[string]string{"ANTHROPIC_API_KEY": "sk-fake"})
	if _, ok, err := RunDirLanguage(runDir); ok || err != nil {
		t.Fatalf("a new run directory records %v, %v", ok, err)
	}
	first, err := New(ws, WithRunDir(runDir), WithLanguage("en-US"), key)
	if err != nil {
		t.Fatal(err)
	}
	first.Close()
	if l, ok, err := RunDirLanguage(runDir); l != English || !ok || err != nil {
		t.Fatalf("RunDirLanguage = %q, %v, %v", l, ok, err)
	}
	later, err := New(ws, WithRunDir(runDir), WithLanguage(Chinese), key)
	if err != nil {
		t.Fatal(err)
	}
	defer later.Close()
	if later.Language() != English {
		t.Errorf("a continuing run switched to %q", later.Language())
	}
	if err := os.WriteFile(filepath.Join(runDir, RunInfoName), []byte(`{"language":"ko"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := New(ws, WithRunDir(runDir), key); err == nil || !strings.Contains(err.Error(), RunInfoName) {
		t.Errorf("a broken record: %v, want an error naming %s", err, RunInfoName)
	}
}

func TestNewRefusesAWorkbenchItCannotWriteBeforeAnyRequest(t *testing.T) {
	t.Parallel()
	srv := claudetest.NewServer(t, func(ctx context.Context, r *claudetest.Request) claudetest.Reply {
		return claudetest.Say("never")
	})
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	wb := &workbench.Workbench{Workspace: t.TempDir(), Home: filepath.Join(file, "wb")}
	_, err := New(t.TempDir(), WithRunDir(t.TempDir()), WithEnv(claudetest.Env(t, srv)), WithWorkbench(wb))
	if err == nil || !strings.Contains(err.Error(), "workbench") {
		t.Fatalf("err = %v, want the workbench named", err)
	}
	if srv.Count() != 0 {
		t.Errorf("%d requests before the error", srv.Count())
	}
}

func TestMissingCredentialsSpeakTheRunsLanguage(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	t.Setenv("FLOWER_ENV", "")
	t.Setenv("ANTHROPIC_API_KEY", "")
	t.Setenv("ANTHROPIC_AUTH_TOKEN", "")
	_, err := New(t.TempDir(), WithRunDir(t.TempDir()), WithLanguage(English))
	var me *MissingCredentialsError
	if !errors.As(err, &me) || !strings.Contains(err.Error(), "flower setup") || hasHan(err.Error()) {
		t.Fatalf("err = %v, want the English message naming `flower setup`", err)
	}
}
