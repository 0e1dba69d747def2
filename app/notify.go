package app

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/flowerrun/flower/event"
	"github.com/flowerrun/flower/human"
)

// NotifyEnv is the configuration key (environment or .env) of --notify.
const NotifyEnv = "FLOWER_NOTIFY"

// NotifyTimeout bounds one run of the notify command.
const NotifyTimeout = 30 * time.Second

// NotifyValueMax bounds each variable the notify command gets.
const NotifyValueMax = 4096

// Notifier runs a shell command whenever a question starts waiting, with the
// question in its environment:
//
//	FLOWER_QUESTION      the question, made safe for an environment: NUL
//	                     bytes dropped, cut to NotifyValueMax bytes with "…"
//	FLOWER_QUESTION_FILE a file holding the whole question (removed after)
//	FLOWER_QUESTION_ID   its id (q3)
//	FLOWER_CHOICES       the choices, one a line ("" when none), made safe
//	FLOWER_WORKSPACE     the workspace
//	FLOWER_RUN_DIR       the run directory (where `flower reply` finds it)
//
// A question is whatever the model wrote: one with a NUL byte, or longer
// than the kernel takes for one variable (128 KiB), would keep the command
// from starting at all, so the variables are bounded and the file has it
// whole. It never runs for routine events (answers, mail, tools). The
// commands run one after another, in the order the questions came, on a
// goroutine of the Notifier's, each for at most NotifyTimeout; every
// failure is reported with report, and none ever stops the run.
type Notifier struct {
	cmd, workspace, runDir string
	report                 func(error)
	timeout                time.Duration

	mu      sync.Mutex
	queue   []notice
	running bool
	closed  bool
	idle    *sync.Cond
}

// notice is one question to notify of.
type notice struct {
	id, question string
	env          []string
}

// NewNotifier makes a notifier of the shell command cmd; "" makes one that
// does nothing. report receives every failure.
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
	id := e.Str("id")
	env := []string{"FLOWER_QUESTION=" + notifyValue(e.Text), "FLOWER_QUESTION_ID=" + notifyValue(id),
		"FLOWER_CHOICES=" + notifyValue(strings.Join(choices, "\n")), "FLOWER_WORKSPACE=" + n.workspace, "FLOWER_RUN_DIR=" + n.runDir}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return
	}
	n.queue = append(n.queue, notice{id: id, question: e.Text, env: env})
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
		q := n.queue[0]
		n.queue = n.queue[1:]
		n.mu.Unlock()
		err := n.run(q)
		if err != nil && n.report != nil {
			n.report(err)
		}
		n.mu.Lock()
	}
	n.running = false
	n.idle.Broadcast()
}

func (n *Notifier) run(q notice) error {
	ctx, cancel := context.WithTimeout(context.Background(), n.timeout)
	defer cancel()
	env := q.env
	file, ferr := n.questionFile(q)
	if ferr == nil {
		defer os.Remove(file)
		env = append(env, "FLOWER_QUESTION_FILE="+file)
	}
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
	return fmt.Errorf("--notify command %q failed for %s: %v %s (the run goes on)", n.cmd, q.id, err, msg)
}

// questionFile writes the whole question to a file of its own, 0600, in
// the run's human folder (outside the workspace).
func (n *Notifier) questionFile(q notice) (string, error) {
	dir := filepath.Join(ReplyDir(n.runDir), "notify")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	f, err := os.CreateTemp(dir, "question-*.txt")
	if err != nil {
		return "", err
	}
	_, werr := f.WriteString(q.question)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		os.Remove(f.Name())
		return "", werr
	}
	return f.Name(), nil
}

// notifyValue is s made safe for one environment variable: NUL bytes (which
// end a variable) dropped, and cut at a rune boundary to NotifyValueMax
// bytes, "…" marking the cut.
func notifyValue(s string) string {
	s = strings.ReplaceAll(s, "\x00", "")
	if len(s) <= NotifyValueMax {
		return s
	}
	cut := NotifyValueMax - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
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
