package app

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/flowerrun/flower"
)

// errQuit is the cause of the run's context when the human pressed Ctrl-C
// to quit: the command exits 130, after the rescue.
var errQuit = errors.New(flower.QuitByHuman)

// hooks are what the running command asks of the signal handler. They are
// set by the subcommand (once registers its Runtime's Rescue) or by a flow
// through its UI.
type hooks struct {
	mu        sync.Mutex
	interrupt func() // the first Ctrl-C, when set; else Ctrl-C quits
	// stop, when set, is what every signal does (the worker drains:
	// it stops taking runs and releases those in flight); a second
	// signal then ends the process as without it.
	stop    func()
	rescue  []func()
	presses int
}

// OnInterrupt makes the first Ctrl-C call fn (interrupt the round, ask
// what to say) instead of quitting; a second Ctrl-C quits with exit 130.
// fn runs on the signal goroutine and must not block. nil restores quitting
// at the first Ctrl-C.
func (ui *UI) OnInterrupt(fn func()) {
	ui.hooks.mu.Lock()
	defer ui.hooks.mu.Unlock()
	ui.hooks.interrupt, ui.hooks.presses = fn, 0
}

// OnRescue registers fn (a Runtime's Rescue) to run before flower exits by
// a signal: the step in flight is written to the manifest as
// killed-by-signal, so the next run continues it.
func (ui *UI) OnRescue(fn func()) {
	ui.hooks.mu.Lock()
	defer ui.hooks.mu.Unlock()
	ui.hooks.rescue = append(ui.hooks.rescue, fn)
}

// rearm makes the next Ctrl-C a first one.
func (h *hooks) rearm() {
	if h == nil {
		return
	}
	h.mu.Lock()
	h.presses = 0
	h.mu.Unlock()
}

func (h *hooks) runRescue() {
	h.mu.Lock()
	fns := append([]func(){}, h.rescue...)
	h.mu.Unlock()
	for _, fn := range fns {
		fn()
	}
}

// childGrace is how long flower, dying by a signal, waits for its CLIs to
// exit after their SIGTERM before it kills them.
const childGrace = 3 * time.Second

// watchSignals is the one signal handler. Ctrl-C: the interrupt hook the
// first time when one is set, else cancel ctx with errQuit (the command
// rescues and exits 130). SIGTERM and SIGHUP: rescue, end the CLIs (endChildren), restore
// the default action and re-raise, so that flower dies by the signal as its
// parent expects. It returns the function that stops it.
func (m *Command) watchSignals(cancel context.CancelCauseFunc) (stop func()) {
	ch := make(chan os.Signal, 4)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			case sig := <-ch:
				m.hooks.mu.Lock()
				stop := m.hooks.stop
				m.hooks.stop = nil
				m.hooks.mu.Unlock()
				if stop != nil {
					stop()
					continue
				}
				if sig == os.Interrupt {
					m.hooks.mu.Lock()
					m.hooks.presses++
					fn, first := m.hooks.interrupt, m.hooks.presses == 1
					m.hooks.mu.Unlock()
					if fn != nil && first {
						fn()
						continue
					}
					cancel(errQuit)
					continue
				}
				m.hooks.runRescue()
				endChildren(childGrace)
				signal.Reset(sig)
				_ = syscall.Kill(os.Getpid(), sig.(syscall.Signal))
			}
		}
	}()
	return func() {
		signal.Stop(ch)
		close(done)
		wg.Wait()
	}
}
