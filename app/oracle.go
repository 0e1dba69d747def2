package app

import (
	"context"
	"fmt"
	"github.com/flowerrun/flower/claude"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/flowerrun/flower"
	"github.com/flowerrun/flower/event"
	"github.com/flowerrun/flower/internal/screen"
	"github.com/flowerrun/flower/workbench"
)

// OracleEvents is how many recent events a side question sees.
const OracleEvents = 60

// oracleWait bounds the wait for side questions still running at exit.
const oracleWait = 120 * time.Second

// Aside answers side questions ("? …" lines) while the run goes on: a
// Runtime of its own under <run_dir>/aside (its cost and lineage apart),
// the run's workbench, no retries, the recent events as its context. The
// main session never sees a side question.
type Aside struct {
	ui  *UI
	cfg Config
	wb  *workbench.Workbench

	mu     sync.Mutex
	events []event.Event
	run    sync.Mutex // one question at a time on the aside Runtime
	wg     sync.WaitGroup
	ctx    context.Context
	cancel context.CancelFunc
	n      int
}

// NewAside prepares side questions for a run of cfg sharing wb.
func NewAside(ctx context.Context, ui *UI, cfg Config, wb *workbench.Workbench) *Aside {
	ctx, cancel := context.WithCancel(ctx)
	return &Aside{ui: ui, cfg: cfg, wb: wb, ctx: ctx, cancel: cancel}
}

// Event remembers the run's recent events (thinking and prompts left out).
func (a *Aside) Event(e event.Event) {
	if e.Kind == event.Thinking || e.Kind == event.Prompt {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.events = append(a.events, e)
	if len(a.events) > OracleEvents {
		a.events = a.events[len(a.events)-OracleEvents:]
	}
}

// Ask starts answering q in the background.
func (a *Aside) Ask(q string) {
	a.mu.Lock()
	a.n++
	a.mu.Unlock()
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		defer func() { a.mu.Lock(); a.n--; a.mu.Unlock() }()
		a.answer(q)
	}()
}

// Prompt is the side question with what the run did lately and where its
// workbench is.
func (a *Aside) Prompt(q string) string {
	en := isEn(a.cfg.Lang)
	var b strings.Builder
	b.WriteString(q + "\n\n")
	a.mu.Lock()
	evs := append([]event.Event(nil), a.events...)
	a.mu.Unlock()
	if len(evs) == 0 {
		b.WriteString(map[bool]string{false: "(还没有事件)", true: "(no events yet)"}[en] + "\n")
	}
	for _, e := range evs {
		who := map[bool]string{false: "主线程", true: "main"}[en]
		if e.Subagent() {
			who = "subagent"
		}
		kind := string(e.Kind)
		if e.Tool != "" {
			kind += "/" + e.Tool
		}
		fmt.Fprintf(&b, "[%s·%s] %s\n", kind, who, clipRunes(e.Text, 200))
	}
	b.WriteString("\n")
	switch {
	case a.wb == nil:
		b.WriteString(map[bool]string{false: "(这次运行没开工作台)", true: "(this run has no workbench)"}[en])
	case en:
		b.WriteString(a.wb.Root() + "/ — it holds notes/ (brief, goal, decisions), artifacts/ (reports), scripts/")
	default:
		b.WriteString(a.wb.Root() + "/ —— 里面有 notes/(确认书、目标、决策)、artifacts/(产出报告)、scripts/")
	}
	return b.String()
}

func (a *Aside) answer(q string) {
	a.run.Lock()
	defer a.run.Unlock()
	en := isEn(a.cfg.Lang)
	fail := func(err error) {
		a.ui.Screen.Line(screen.Red, fmt.Sprintf(map[bool]string{false: "# 旁路问答失败:%T: %v", true: "# side question failed: %T: %v"}[en], err, err))
	}
	opts := []flower.Option{flower.WithRunDir(filepath.Join(a.cfg.RunDir, "aside")), flower.WithResilience(flower.Resilience{Disabled: true})}
	opts = append(opts, flower.WithLanguage(a.cfg.Lang))
	if a.cfg.CLIPath != "" {
		opts = append(opts, flower.WithSessionOptions(func(o *claude.Options) { o.CLIPath = a.cfg.CLIPath }))
	}
	if a.wb != nil {
		opts = append(opts, flower.WithWorkbench(a.wb))
	}
	rt, err := flower.New(a.cfg.Workspace, opts...)
	if err != nil {
		fail(err)
		return
	}
	defer rt.Close()
	spec := flower.Oracle("", flower.WithLang(a.cfg.Lang))
	res, err := rt.Run(a.ctx, spec, a.Prompt(q), flower.RunOptions{})
	if err != nil && res.Text == "" {
		fail(err)
		return
	}
	answer := strings.TrimSpace(res.Text)
	if answer == "" {
		answer = map[bool]string{false: "(没有回答)", true: "(no answer)"}[en]
	}
	cost := fmt.Sprintf(map[bool]string{false: "(%s,没有打扰正在跑的运行)", true: "(%s; the run was not disturbed)"}[en], flower.USD(res.CostUSD))
	a.ui.Screen.Block(screen.Cyan, append(append([]string{map[bool]string{false: "# 旁路", true: "# aside"}[en]}, strings.Split(answer, "\n")...), cost)...)
}

// Wait waits for the side questions still running, at most oracleWait;
// then it stops the rest and returns when they stopped.
func (a *Aside) Wait() {
	defer a.wg.Wait()
	defer a.cancel()
	a.mu.Lock()
	n := a.n
	a.mu.Unlock()
	if n > 0 {
		a.ui.Screen.Line(screen.Dim, fmt.Sprintf(map[bool]string{false: "(等 %d 条旁路问答收尾…)", true: "(waiting for %d side questions to finish…)"}[isEn(a.cfg.Lang)], n))
	}
	done := make(chan struct{})
	go func() { a.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(oracleWait):
	}
}
