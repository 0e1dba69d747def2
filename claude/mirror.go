package claude

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Batch limits of the mirror: past either, pending entries are written in
// the background.
const (
	mirrorMaxEntries = 500
	mirrorMaxBytes   = 1 << 20
)

// mirror appends the CLI's transcript_mirror frames to a SessionStore,
// coalesced per transcript file. Appends are serialized so that order is
// kept; a batch that fails for good becomes a mirror_error message and is
// dropped (the CLI's local transcript keeps it).
type mirror struct {
	store       SessionStore
	projectsDir string
	eager       bool
	timeout     time.Duration
	report      func(*SystemMessage)

	mu      sync.Mutex
	order   []string // file paths in first-arrival order
	pending map[string][]json.RawMessage
	count   int
	bytes   int

	// failed is set once a batch is given up on (a mirror_error).
	failed atomic.Bool

	flushMu sync.Mutex
	kick    chan struct{}
	stop    chan struct{}
	stopped chan struct{}
}

func newMirror(store SessionStore, projectsDir string, mode FlushMode, timeout time.Duration, report func(*SystemMessage)) *mirror {
	m := &mirror{
		store: store, projectsDir: filepath.Clean(projectsDir), eager: mode == FlushEager,
		timeout: timeout, report: report, pending: map[string][]json.RawMessage{},
		kick: make(chan struct{}, 1), stop: make(chan struct{}), stopped: make(chan struct{}),
	}
	go m.worker()
	return m
}

func (m *mirror) worker() {
	defer close(m.stopped)
	for {
		select {
		case <-m.kick:
			m.flush()
		case <-m.stop:
			return
		}
	}
}

// add queues one frame; in eager mode (or past the limits) the background
// worker writes it at once, without holding up the reader.
func (m *mirror) add(line []byte) {
	var f struct {
		FilePath string            `json:"filePath"`
		Entries  []json.RawMessage `json:"entries"`
	}
	if err := json.Unmarshal(line, &f); err != nil || f.FilePath == "" {
		slog.Warn("claude: unreadable transcript_mirror frame dropped", "err", err)
		return
	}
	if len(f.Entries) == 0 {
		return
	}
	m.mu.Lock()
	if _, ok := m.pending[f.FilePath]; !ok {
		m.order = append(m.order, f.FilePath)
	}
	m.pending[f.FilePath] = append(m.pending[f.FilePath], f.Entries...)
	m.count += len(f.Entries)
	m.bytes += len(line)
	due := m.eager || m.count > mirrorMaxEntries || m.bytes > mirrorMaxBytes
	m.mu.Unlock()
	if due {
		select {
		case m.kick <- struct{}{}:
		default:
		}
	}
}

// flush writes everything pending and returns when it is stored (or given
// up on).
func (m *mirror) flush() {
	m.flushMu.Lock()
	defer m.flushMu.Unlock()
	m.mu.Lock()
	order, pending := m.order, m.pending
	m.order, m.pending, m.count, m.bytes = nil, map[string][]json.RawMessage{}, 0, 0
	m.mu.Unlock()
	for _, path := range order {
		key, ok := m.keyFor(path)
		if !ok {
			slog.Warn("claude: transcript outside the projects directory not mirrored", "path", path, "projects", m.projectsDir)
			continue
		}
		if err := m.appendWithRetry(key, pending[path]); err != nil {
			m.failed.Store(true)
			m.report(mirrorErrorMessage(key, err))
		}
	}
}

// close writes what is pending and stops the worker.
func (m *mirror) close() {
	m.flush()
	close(m.stop)
	<-m.stopped
}

// appendWithRetry tries three times (0.2 s, then 0.8 s apart). A timeout is
// not retried: the append may still land, and a second one would duplicate
// entries without uuids.
func (m *mirror) appendWithRetry(key SessionKey, entries []json.RawMessage) error {
	delays := []time.Duration{200 * time.Millisecond, 800 * time.Millisecond}
	var err error
	for attempt := 0; ; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), m.timeout)
		err = m.store.Append(ctx, key, entries)
		timedOut := errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil
		cancel()
		if err == nil {
			return nil
		}
		if timedOut {
			return fmt.Errorf("append timed out after %s: %w", m.timeout, err)
		}
		if attempt >= len(delays) {
			return err
		}
		time.Sleep(delays[attempt])
	}
}

// keyFor maps a transcript path to its store key: <pk>/<sid>.jsonl is a
// main transcript, <pk>/<sid>/subagents/…/agent-X.jsonl a subagent's.
func (m *mirror) keyFor(path string) (SessionKey, bool) {
	rel, err := filepath.Rel(m.projectsDir, filepath.Clean(path))
	if err != nil || rel == "." || strings.HasPrefix(rel, "..") || filepath.IsAbs(rel) {
		return SessionKey{}, false
	}
	parts := strings.Split(filepath.ToSlash(rel), "/")
	if len(parts) < 2 || !strings.HasSuffix(rel, ".jsonl") {
		return SessionKey{}, false
	}
	last := strings.TrimSuffix(parts[len(parts)-1], ".jsonl")
	if len(parts) == 2 {
		return SessionKey{ProjectKey: parts[0], SessionID: last}, true
	}
	sub := append(append([]string{}, parts[2:len(parts)-1]...), last)
	return SessionKey{ProjectKey: parts[0], SessionID: parts[1], Subpath: strings.Join(sub, "/")}, true
}

func mirrorErrorMessage(key SessionKey, err error) *SystemMessage {
	me := &MirrorError{Error: err.Error(), Key: key}
	raw, _ := json.Marshal(map[string]any{
		"type": "system", "subtype": "mirror_error", "error": me.Error, "key": key, "session_id": key.SessionID,
	})
	return &SystemMessage{Subtype: "mirror_error", SessionID: key.SessionID, MirrorError: me, Raw: raw}
}
