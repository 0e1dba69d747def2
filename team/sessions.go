package team

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/store"
	"github.com/flowerrun/flower/store/sqlite"
)

// sessionMirror keeps a run's transcripts in the team's database while
// its process writes them to the run directory's own SQLite store: the
// worker, not the run, is the database's client, so the run never holds
// the database's URL (DESIGN.md, "Who may write what"). Both stores only
// ever append, so a transcript is in step when both hold as many entries:
// pull gives the local store the remote's longer tails (a run taken over
// from another machine), push gives the remote the local's.
type sessionMirror struct {
	local   *sqlite.Store
	project string // the CLI's project key of the checkout: what the run's process files under
	remote  store.OneProject
	// sent counts the entries of each transcript (ProjectKey left empty)
	// the remote is known to hold.
	sent map[claude.SessionKey]int
	// spent prices every transcript line known to be in the remote (see
	// spend.go).
	spent *spendLedger
	// usage counts the requests this attempt wrote back in the worker's
	// metrics; nil counts none.
	usage *usageMeter
}

func openSessionMirror(path, checkout string, remote store.OneProject) (*sessionMirror, error) {
	local, err := sqlite.Open(path)
	if err != nil {
		return nil, fmt.Errorf("the run's session store %s: %w", path, err)
	}
	return &sessionMirror{local: local, project: claude.ProjectKey(checkout), remote: remote, sent: map[claude.SessionKey]int{}, spent: newSpendLedger()}, nil
}

func (m *sessionMirror) Close() error { return m.local.Close() }

// keys lists every transcript of s's project: each session and its
// subagents' transcripts.
func keys(ctx context.Context, s interface {
	claude.SessionLister
	ListSubkeys(ctx context.Context, projectKey, sessionID string) ([]string, error)
}, project string) ([]claude.SessionKey, error) {
	sessions, err := s.ListSessions(ctx, project)
	if err != nil {
		return nil, err
	}
	var out []claude.SessionKey
	for _, sess := range sessions {
		subs, err := s.ListSubkeys(ctx, project, sess.SessionID)
		if err != nil {
			return nil, err
		}
		for _, sub := range append([]string{""}, subs...) {
			out = append(out, claude.SessionKey{SessionID: sess.SessionID, Subpath: sub})
		}
	}
	return out, nil
}

// pull appends to the local store what the remote holds beyond it.
func (m *sessionMirror) pull(ctx context.Context) error {
	ks, err := keys(ctx, m.remote, "")
	if err != nil {
		return fmt.Errorf("listing the run's transcripts in the database: %w", err)
	}
	for _, k := range ks {
		remote, err := m.remote.Load(ctx, k)
		if err != nil {
			return err
		}
		lk := k
		lk.ProjectKey = m.project
		local, err := m.local.Load(ctx, lk)
		if err != nil {
			return err
		}
		m.spent.add(remote)
		m.usage.add(remote, false) // earlier attempts': their workers counted them
		if len(remote) > len(local) {
			if err := m.local.Append(ctx, lk, remote[len(local):]); err != nil {
				return err
			}
		}
		m.sent[k] = len(remote)
	}
	return nil
}

// unsent reads what the local store holds beyond what the remote is known
// to hold: each transcript's new entries, for send.
func (m *sessionMirror) unsent(ctx context.Context) ([]tail, error) {
	ks, err := keys(ctx, m.local, m.project)
	if err != nil {
		return nil, fmt.Errorf("listing the run's transcripts: %w", err)
	}
	var tails []tail
	for _, k := range ks {
		lk := k
		lk.ProjectKey = m.project
		local, err := m.local.Load(ctx, lk)
		if err != nil {
			return nil, err
		}
		n, known := m.sent[k]
		if !known {
			remote, err := m.remote.Load(ctx, k)
			if err != nil {
				return nil, err
			}
			n = len(remote)
			m.sent[k] = n
		}
		if len(local) > n {
			tails = append(tails, tail{key: k, from: n, entries: local[n:]})
		}
	}
	return tails, nil
}

// tail is a transcript's entries from position from on.
type tail struct {
	key     claude.SessionKey
	from    int
	entries []json.RawMessage
}

// send appends tails to the remote (what unsent read).
func (m *sessionMirror) send(ctx context.Context, tails []tail) error {
	for _, t := range tails {
		if m.sent[t.key] != t.from {
			continue // sent already
		}
		if err := m.remote.Append(ctx, t.key, t.entries); err != nil {
			return err
		}
		m.spent.add(t.entries)
		m.usage.add(t.entries, true)
		m.sent[t.key] = t.from + len(t.entries)
	}
	return nil
}
