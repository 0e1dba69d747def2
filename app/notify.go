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
// It never runs for routine events (answers, mail, tools). The commands run
// one after another, in the order the questions came, on a goroutine of the
// Notifier's, each for at most NotifyTimeout; the first failure is reported
// with report, and none ever stops the run.
type Notifier struct {
	cmd, workspace, runDir string
	report                 func(error)
	timeout                time.Duration

	mu       sync.Mutex
	queue    [][]string
	running  bool
	closed   bool
	reported bool
	idle     *sync.Cond
}

// NewNotifier makes a notifier of the shell command cmd; "" makes one that
// does nothing. report receives the first failure.
func NewNotifier(cmd, workspace, runDir string, report func(error)) *Notifier {
	n := &Notifier{cmd: strings.TrimSpace(cmd), workspace: workspace, runDir: runDir, report: report, timeout: NotifyTimeout}
	n.idle = sync.NewCond(&n.mu)
	return n
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
	n.queue = append(n.queue, env)
	if !n.running {
		n.running = true
		go n.drain()
	}
}

// drain runs the queued commands until the queue is empty.
func (n *Notifier) drain() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for len(n.queue) > 0 {
		env := n.queue[0]
		n.queue = n.queue[1:]
		n.mu.Unlock()
		err := n.run(env)
		n.mu.Lock()
		if err != nil && !n.reported {
			n.reported = true
			if n.report != nil {
				n.report(err)
			}
		}
	}
	n.running = false
	n.idle.Broadcast()
}

func (n *Notifier) run(env []string) error {
	ctx, cancel := context.WithTimeout(context.Background(), n.timeout)
	defer cancel()
	c := exec.CommandContext(ctx, "/bin/sh", "-c", n.cmd)
	c.Env = append(os.Environ(), env...)
	c.WaitDelay = time.Second
	out, err := c.CombinedOutput()
	if err == nil {
		return nil
	}
	if ctx.Err() == context.DeadlineExceeded {
		err = fmt.Errorf("did not finish in %s", n.timeout)
	}
	msg := strings.TrimSpace(string(out))
	if len(msg) > 200 {
		msg = msg[:200] + "…"
	}
	return fmt.Errorf("--notify command %q failed: %v %s (the run goes on; later failures are not reported)", n.cmd, err, msg)
}

// Close stops taking questions and waits for the queued commands, each
// bounded by its timeout.
func (n *Notifier) Close() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.closed = true
	for n.running {
		n.idle.Wait()
	}
}
