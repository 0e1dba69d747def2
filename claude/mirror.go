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

// IdempotentStore is a SessionStore that declares a retried Append safe
// even after a timeout: an Append that returned an error stored nothing of
// its batch, or every entry of a replayed batch is skipped. The mirror then
// retries timed-out appends too; without it a timed-out batch is never sent
// again (it may have landed, and entries without a uuid would be doubled).
type IdempotentStore interface {
	SessionStore
	IdempotentAppend() bool
}

// mirror appends the CLI's transcript_mirror frames to a SessionStore,
// coalesced per transcript file, from a goroutine of its own: the reader
// only queues frames and asks for barriers, so a slow store never stops
// control routing or reading. Appends are serialized so that order is kept.
//
// A batch the store refuses after three attempts is kept and re-mirrored
// after the turn (at the next barrier and at close); later entries of the
// same transcript wait behind it so the stored order stays the CLI's. What
// is still refused at close is reported as one mirror_error per transcript,
// with the count of entries lost and the local transcript that holds them.
type mirror struct {
	store       SessionStore
	projectsDir string
	eager       bool
	idempotent  bool
	timeout     time.Duration
	report      func(*SystemMessage)
	secrets     *secrets // masked in the lines read from the CLI's files

	mu      sync.Mutex
	order   []string // file paths in first-arrival order
	pending map[string][]json.RawMessage
	count   int
	bytes   int
	waiters []chan struct{} // barriers released after the next write
	closing bool
	catchUp bool // at close: import what the CLI wrote but never mirrored

	// known is every entry mirrored (or laid out for a resume) per
	// transcript, sessions the ids whose transcripts the CLI may have
	// written without a frame: what a catch-up needs (see catchup.go).
	known    map[string]entrySet
	sessions []string

	// lost and round are owned by the worker.
	lost  []*lostBatch
	round int // worker iterations, to tell a batch refused just now

	// failed is set once entries are given up on for good.
	failed atomic.Bool

	kick    chan struct{}
	stopped chan struct{}
}

// lostBatch is entries of one transcript the store refused.
type lostBatch struct {
	path    string
	key     SessionKey
	entries []json.RawMessage
	err     error
	// final: a timeout on a store that is not idempotent; never resent.
	final bool
	round int // the worker iteration that last tried it
}

func newMirror(store SessionStore, projectsDir string, mode FlushMode, timeout time.Duration, report func(*SystemMessage)) *mirror {
	m := &mirror{
		store: store, projectsDir: filepath.Clean(projectsDir), eager: mode == FlushEager,
		timeout: timeout, report: report, pending: map[string][]json.RawMessage{}, known: map[string]entrySet{},
		kick: make(chan struct{}, 1), stopped: make(chan struct{}),
	}
	if is, ok := store.(IdempotentStore); ok {
		m.idempotent = is.IdempotentAppend()
	}
	go m.worker()
	return m
}

func (m *mirror) signal() {
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

func (m *mirror) worker() {
	defer close(m.stopped)
	for range m.kick {
		m.round++
		m.mu.Lock()
		order, pending, waiters, closing, catchUp := m.order, m.pending, m.waiters, m.closing, m.catchUp
		m.order, m.pending, m.count, m.bytes, m.waiters = nil, map[string][]json.RawMessage{}, 0, 0, nil
		m.mu.Unlock()
		m.write(order, pending)
		if closing && catchUp {
			if order, pending := m.unmirrored(); len(order) > 0 {
				n := 0
				for _, p := range order {
					n += len(pending[p])
				}
				slog.Info("claude: the CLI ended without mirroring all it wrote; its local transcripts catch the store up", "entries", n, "transcripts", len(order))
				m.write(order, pending)
			}
		}
		if len(waiters) > 0 || closing {
			// After the turn: the store may take what it refused.
			m.recoverLost(closing)
		}
		for _, w := range waiters {
			close(w)
		}
		if closing {
			m.reportLost()
			return
		}
	}
}

// add queues one frame; in eager mode (or past the limits) the worker
// writes it at once.
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
	path := filepath.Clean(f.FilePath)
	set := m.known[path]
	if set == nil {
		set = entrySet{}
		m.known[path] = set
	}
	for _, e := range f.Entries {
		set.add(e)
	}
	m.count += len(f.Entries)
	m.bytes += len(line)
	due := m.eager || m.count > mirrorMaxEntries || m.bytes > mirrorMaxBytes
	m.mu.Unlock()
	if due {
		m.signal()
	}
}

// barrier returns a channel closed once everything queued so far is stored
// (or given up on). It never blocks.
func (m *mirror) barrier() <-chan struct{} {
	ch := make(chan struct{})
	m.mu.Lock()
	m.waiters = append(m.waiters, ch)
	m.mu.Unlock()
	m.signal()
	return ch
}

// watch names a session whose transcript the CLI writes: after an abnormal
// end it is read even if no frame of it arrived.
func (m *mirror) watch(sessionID string) {
	if sessionID == "" {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range m.sessions {
		if s == sessionID {
			return
		}
	}
	m.sessions = append(m.sessions, sessionID)
}

// seed records entries already in a transcript file and in the store (a
// resumed session's, laid out before the CLI started).
func (m *mirror) seed(laid map[string]entrySet) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for p, set := range laid {
		p = filepath.Clean(p)
		if m.known[p] == nil {
			m.known[p] = entrySet{}
		}
		for h, n := range set {
			m.known[p][h] += n
		}
	}
}

// close writes what is pending, re-mirrors what was refused, reports what
// is still lost, and stops the worker. With catchUp (the CLI did not exit
// cleanly) it first imports from the CLI's local transcripts what no frame
// carried. Call it once, after the last add.
func (m *mirror) close(catchUp bool) {
	m.mu.Lock()
	m.closing = true
	m.catchUp = catchUp
	m.mu.Unlock()
	m.signal()
	<-m.stopped
}

func (m *mirror) write(order []string, pending map[string][]json.RawMessage) {
	for _, path := range order {
		key, ok := m.keyFor(path)
		if !ok {
			slog.Warn("claude: transcript outside the projects directory not mirrored", "path", path, "projects", m.projectsDir)
			continue
		}
		entries := pending[path]
		if b := m.lostFor(path); b != nil {
			// Keep the CLI's order: these wait behind the refused batch.
			b.entries = append(b.entries, entries...)
			continue
		}
		if err, timedOut := m.appendWithRetry(key, entries); err != nil {
			b := &lostBatch{path: path, key: key, entries: entries, err: err, final: timedOut && !m.idempotent, round: m.round}
			if b.final {
				slog.Warn("claude: a session store append timed out; the store is not idempotent, so it is not re-sent", "key", key, "entries", len(entries), "err", err)
			} else {
				slog.Warn("claude: the session store refused transcript entries; they are re-sent after the turn", "key", key, "entries", len(entries), "err", err)
			}
			m.lost = append(m.lost, b)
		}
	}
}

// lostFor is the resendable lost batch of path, if any.
func (m *mirror) lostFor(path string) *lostBatch {
	for _, b := range m.lost {
		if b.path == path && !b.final {
			return b
		}
	}
	return nil
}

// recoverLost re-sends the refused batches. At a barrier each gets one
// attempt (a batch refused in this very round was just tried three times),
// so a store that stays down delays a result by little more than its own
// batch; at close each gets the full three.
func (m *mirror) recoverLost(closing bool) {
	kept := m.lost[:0]
	for _, b := range m.lost {
		if !b.final && (closing || b.round < m.round) {
			send := m.appendOnce
			if closing {
				send = m.appendWithRetry
			}
			b.round = m.round
			err, timedOut := send(b.key, b.entries)
			if err == nil {
				slog.Info("claude: refused transcript entries re-mirrored", "key", b.key, "entries", len(b.entries))
				continue
			}
			b.err, b.final = err, timedOut && !m.idempotent
		}
		kept = append(kept, b)
	}
	m.lost = kept
}

func (m *mirror) reportLost() {
	type loss struct {
		n   int
		err error
	}
	byPath := map[string]*loss{}
	var order []*lostBatch
	for _, b := range m.lost {
		if l, ok := byPath[b.path]; ok {
			l.n += len(b.entries)
			l.err = b.err
			continue
		}
		byPath[b.path] = &loss{n: len(b.entries), err: b.err}
		order = append(order, b)
	}
	for _, b := range order {
		l := byPath[b.path]
		m.failed.Store(true)
		m.report(mirrorErrorMessage(b.key, b.path, l.n, l.err))
	}
	m.lost = nil
}

// appendWithRetry tries three times (0.2 s, then 0.8 s apart). A timeout is
// retried only on an IdempotentStore: elsewhere the append may still land,
// and a second one would duplicate entries without uuids. A panicking store
// counts as a failed append.
func (m *mirror) appendWithRetry(key SessionKey, entries []json.RawMessage) (err error, timedOut bool) {
	delays := []time.Duration{200 * time.Millisecond, 800 * time.Millisecond}
	for attempt := 0; ; attempt++ {
		err, timedOut = m.appendOnce(key, entries)
		if err == nil {
			return nil, false
		}
		if timedOut && !m.idempotent {
			return err, true
		}
		if attempt >= len(delays) {
			return err, timedOut
		}
		time.Sleep(delays[attempt])
	}
}

func (m *mirror) appendOnce(key SessionKey, entries []json.RawMessage) (err error, timedOut bool) {
	defer func() {
		if timedOut {
			err = fmt.Errorf("append timed out after %s: %w", m.timeout, err)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), m.timeout)
	defer cancel()
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("session store panicked: %v", p)
		}
	}()
	err = m.store.Append(ctx, key, entries)
	return err, err != nil && (errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil)
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

func mirrorErrorMessage(key SessionKey, transcript string, lost int, err error) *SystemMessage {
	me := &MirrorError{Error: err.Error(), Key: key, Lost: lost, Transcript: transcript}
	raw, _ := json.Marshal(map[string]any{
		"type": "system", "subtype": "mirror_error", "error": me.Error, "key": key, "session_id": key.SessionID,
		"lost": lost, "transcript": transcript,
	})
	return &SystemMessage{Subtype: "mirror_error", SessionID: key.SessionID, MirrorError: me, Raw: raw}
}
