package app

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/flowerrun/flower/event"
	"github.com/flowerrun/flower/human"
)

// NotifyEnv is the configuration key (environment or .env) of --notify.
const NotifyEnv = "FLOWER_NOTIFY"

// NotifyTimeout bounds one run of the notify command.
const NotifyTimeout = 30 * time.Second

// Notifier runs a shell command whenever a question starts waiting, with the
// question in its environment:
//
//	FLOWER_QUESTION      the question
//	FLOWER_QUESTION_ID   its id (q3)
//	FLOWER_CHOICES       the choices, one a line ("" when none)
//	FLOWER_WORKSPACE     the workspace
//	FLOWER_RUN_DIR       the run directory (where `flower reply` finds it)
//
// It never runs for routine events (answers, mail, tools). The command runs
// in the background, at most NotifyTimeout; a failure is reported once, with
// report, and never stops the run.
type Notifier struct {
	cmd, workspace, runDir string
	report                 func(error)

	mu       sync.Mutex
	wg       sync.WaitGroup
	ctx      context.Context
	cancel   context.CancelFunc
	reported bool
	closed   bool
}

// NewNotifier makes a notifier of the shell command cmd; "" makes one that
// does nothing. report receives the first failure.
func NewNotifier(cmd, workspace, runDir string, report func(error)) *Notifier {
	ctx, cancel := context.WithCancel(context.Background())
	return &Notifier{cmd: strings.TrimSpace(cmd), workspace: workspace, runDir: runDir, report: report, ctx: ctx, cancel: cancel}
}

// Event is the human channel's event callback (chain it with a UI's): it
// never blocks.
func (n *Notifier) Event(e event.Event) {
	if n.cmd == "" || e.Kind != event.Ask || e.Str("kind") == "mail" || human.State(e.Str("state")) != human.Asked {
		return
	}
	var choices []string
	switch o := e.Payload["options"].(type) {
	case []string:
		choices = o
	case []any:
		for _, v := range o {
			choices = append(choices, fmt.Sprint(v))
		}
	}
	env := []string{"FLOWER_QUESTION=" + e.Text, "FLOWER_QUESTION_ID=" + e.Str("id"),
		"FLOWER_CHOICES=" + strings.Join(choices, "\n"), "FLOWER_WORKSPACE=" + n.workspace, "FLOWER_RUN_DIR=" + n.runDir}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return
	}
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		n.run(env)
	}()
}

func (n *Notifier) run(env []string) {
	ctx, cancel := context.WithTimeout(n.ctx, NotifyTimeout)
	defer cancel()
	c := exec.CommandContext(ctx, "/bin/sh", "-c", n.cmd)
	c.Env = append(os.Environ(), env...)
	c.WaitDelay = time.Second
	out, err := c.CombinedOutput()
	if err == nil {
		return
	}
	if ctx.Err() == context.DeadlineExceeded {
		err = fmt.Errorf("did not finish in %s", NotifyTimeout)
	}
	n.mu.Lock()
	first := !n.reported
	n.reported = true
	n.mu.Unlock()
	if first && n.report != nil {
		msg := strings.TrimSpace(string(out))
		if len(msg) > 200 {
			msg = msg[:200] + "…"
		}
		n.report(fmt.Errorf("--notify command %q failed: %v %s (the run goes on; later failures are not reported)", n.cmd, err, msg))
	}
}

// Close stops the running commands and waits for them.
func (n *Notifier) Close() {
	n.mu.Lock()
	n.closed = true
	n.mu.Unlock()
	n.cancel()
	n.wg.Wait()
}
