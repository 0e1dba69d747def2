package store

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/flowerrun/flower/claude"
)

// OneProject is a SessionStore that files every key under one project key
// of its own, whatever project the CLI names: a run that moves between
// machines has its workspace at another absolute path on each, so the
// CLI's project key (made from that path) changes while the run does not.
// Calls that name a project read and write Project instead. Every optional
// capability of the base is forwarded; one the base lacks behaves as it
// does on Trimming.
type OneProject struct {
	Base    claude.SessionStore
	Project string
	// Guard, when set, is asked before every Append and Delete: its error
	// refuses the write (a process that no longer holds its run).
	Guard func() error
}

func (o OneProject) key(k claude.SessionKey) claude.SessionKey {
	k.ProjectKey = o.Project
	return k
}

func (o OneProject) Append(ctx context.Context, key claude.SessionKey, entries []json.RawMessage) error {
	if o.Guard != nil {
		if err := o.Guard(); err != nil {
			return err
		}
	}
	return o.Base.Append(ctx, o.key(key), entries)
}

func (o OneProject) Load(ctx context.Context, key claude.SessionKey) ([]json.RawMessage, error) {
	return o.Base.Load(ctx, o.key(key))
}

// IdempotentAppend is the base's.
func (o OneProject) IdempotentAppend() bool {
	i, ok := o.Base.(claude.IdempotentStore)
	return ok && i.IdempotentAppend()
}

func (o OneProject) ListSessions(ctx context.Context, _ string) ([]claude.SessionInfo, error) {
	l, ok := o.Base.(claude.SessionLister)
	if !ok {
		return nil, o.unsupported("ListSessions")
	}
	return l.ListSessions(ctx, o.Project)
}

func (o OneProject) ListSessionSummaries(ctx context.Context, _ string) ([]claude.SessionSummary, error) {
	l, ok := o.Base.(claude.SessionSummaryLister)
	if !ok {
		return nil, nil
	}
	return l.ListSessionSummaries(ctx, o.Project)
}

func (o OneProject) Delete(ctx context.Context, key claude.SessionKey) error {
	d, ok := o.Base.(claude.SessionDeleter)
	if !ok {
		return nil
	}
	if o.Guard != nil {
		if err := o.Guard(); err != nil {
			return err
		}
	}
	return d.Delete(ctx, o.key(key))
}

func (o OneProject) ListSubkeys(ctx context.Context, _, sessionID string) ([]string, error) {
	l, ok := o.Base.(claude.SubkeyLister)
	if !ok {
		return nil, nil
	}
	return l.ListSubkeys(ctx, o.Project, sessionID)
}

// Projects is the one project.
func (o OneProject) Projects(ctx context.Context) ([]string, error) {
	return []string{o.Project}, nil
}

func (o OneProject) HasSession(ctx context.Context, _, sessionID string) (bool, error) {
	if c, ok := o.Base.(SessionChecker); ok {
		return c.HasSession(ctx, o.Project, sessionID)
	}
	rows, err := o.Base.Load(ctx, claude.SessionKey{ProjectKey: o.Project, SessionID: sessionID})
	return len(rows) > 0, err
}

func (o OneProject) LastContext(ctx context.Context, _, sessionID string) (int, error) {
	r, ok := o.Base.(LastContextReader)
	if !ok {
		return 0, o.unsupported("LastContext")
	}
	return r.LastContext(ctx, o.Project, sessionID)
}

func (o OneProject) unsupported(method string) error {
	return (&Trimming{base: o.Base}).unsupported(method)
}

var (
	_ claude.SessionLister        = OneProject{}
	_ claude.SessionSummaryLister = OneProject{}
	_ claude.SessionDeleter       = OneProject{}
	_ claude.SubkeyLister         = OneProject{}
	_ claude.IdempotentStore      = OneProject{}
	_ SessionChecker              = OneProject{}
	_ LastContextReader           = OneProject{}
	_ ProjectLister               = OneProject{}
)

// String names the project, for logs.
func (o OneProject) String() string { return fmt.Sprintf("project %s of %T", o.Project, o.Base) }
