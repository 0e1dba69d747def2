package store

import (
	"crypto/sha1"
	"crypto/sha256"
	"fmt"
	"slices"
	"strings"

	"github.com/flowerrun/flower/claude"
)

// Pruning is a Trimming that, on Load, also removes what is an error rather
// than history: synthetic API-error entries, the error flag of interrupted
// tool results, tool_use blocks left without a result (healed with an
// inserted result), and permission denials older than the newest few. The
// order is: rows → expire → trim → prune. Every other method is Trimming's;
// LastReport and TrimReport include the prune counts.
//
// Red lines: a tool_result block is only ever removed together with its
// denied tool_use; the content of isCompactSummary and isMeta entries is
// never touched (their parentUuid is re-pointed only when their parent was
// dropped, since a dangling parent would cut the history above it off); a
// dropped entry's children are re-attached to its nearest surviving
// ancestor.
//
// The embedded Trimming is the same store, not a trim-only view: loading
// through it prunes too.
type Pruning struct {
	*Trimming
}

// NewPruning wraps base with the three load-time layers. The argument order
// follows the original (path, workspace, policy, prune, ephemeral).
// Zero-valued policies are the defaults; errors are NewTrimming's.
func NewPruning(base claude.SessionStore, workspace string, trim TrimPolicy, prune PrunePolicy, eph EphemeralPolicy) (*Pruning, error) {
	t, err := newTrimming(base, workspace, trim, eph, &prune)
	if err != nil {
		return nil, err
	}
	return &Pruning{Trimming: t}, nil
}

// PrunePolicy returns the prune policy in force, defaults filled in.
func (p *Pruning) PrunePolicy() PrunePolicy { return *p.prune }

// pruneTranscript applies the enabled prune parts in order, then re-links
// the parentUuid chain over the complete list (dropped entries included, so
// that a drop in the middle of a chain finds the ancestor above it).
func pruneTranscript(es []*transcriptEntry, p PrunePolicy, rep *Report) []*transcriptEntry {
	if !p.KeepAPIErrors {
		dropAPIErrors(es, rep)
	}
	if !p.KeepInterrupts {
		neutralizeInterrupts(es, p.InterruptText, rep)
	}
	if !p.KeepAllDenials {
		dropDenials(es, atLeastZero(p.KeepDenials), rep)
	}
	if !p.KeepOrphans {
		es = healOrphans(es, p.OrphanText, rep)
	}
	relink(es)
	return es
}

// prunable reports whether prune may rewrite or drop e.
func (e *transcriptEntry) prunable() bool {
	return e.obj != nil && !e.dropped && !e.protected()
}

// dropAPIErrors drops synthetic API-error entries. One that holds a tool_use
// or tool_result block (never seen in practice) stays: dropping it would
// break a pair.
func dropAPIErrors(es []*transcriptEntry, rep *Report) {
	for _, e := range es {
		if !e.prunable() {
			continue
		}
		if !e.apiError {
			continue
		}
		if e.hasBlock("tool_use") || e.hasBlock("tool_result") {
			continue
		}
		e.dropped = true
		rep.APIErrorsDropped++
	}
}

// neutralizeInterrupts gives interrupted results the neutral text and
// is_error false; the block stays. A result is interrupted when it is an
// error carrying "[Request interrupted" (older CLIs), or an error whose entry
// is followed by the CLI's "[Request interrupted …]" user entry (2.1.3xx,
// which words the result itself as a refusal telling the model to stop and
// wait for the user: wrong advice for a run that resumes on its own).
func neutralizeInterrupts(es []*transcriptEntry, text string, rep *Report) {
	cut := interruptedEntries(es)
	for i, e := range es {
		if !e.prunable() {
			continue
		}
		e.eachBlock("tool_result", func(b contentBlock) {
			if !isInterrupted(b.m) && !(cut[i] && isErrorResult(b.m)) {
				return
			}
			b.m["content"] = text
			b.m["is_error"] = false
			e.changed = true
			rep.InterruptsNeutralized++
		})
	}
}

// dropDenials removes permission denials older than the newest keep. A
// denial is a user entry with toolDenialKind "permission-rule" (structure,
// not wording). Each of its tool_result blocks goes together with the
// matching tool_use block of an earlier assistant entry; a result whose
// tool_use cannot be found stays. Other blocks stay; an entry left empty is
// dropped; the denial's toolUseResult goes with its result.
func dropDenials(es []*transcriptEntry, keep int, rep *Report) {
	var denials []int
	for i, e := range es {
		if e.prunable() && e.typ == "user" && e.str("toolDenialKind") == "permission-rule" && e.hasBlock("tool_result") {
			denials = append(denials, i)
		}
	}
	if len(denials) <= keep {
		return
	}
	for _, d := range denials[:len(denials)-keep] {
		e := es[d]
		gone := map[string]bool{}
		e.eachBlock("tool_result", func(b contentBlock) {
			id := b.id
			if id == "" {
				return
			}
			a := assistantWithToolUse(es, d, id)
			if a == nil {
				return
			}
			a.setBlocks(withoutBlocks(a.blocks(), "tool_use", "id", id))
			if len(a.blocks()) == 0 {
				a.dropped = true
			}
			gone[id] = true
		})
		if len(gone) == 0 {
			continue
		}
		l := e.blocks()
		for id := range gone {
			l = withoutBlocks(l, "tool_result", "tool_use_id", id)
		}
		e.setBlocks(l)
		delete(e.obj, "toolUseResult")
		if len(l) == 0 {
			e.dropped = true
		}
		rep.DenialsDropped++
	}
}

// assistantWithToolUse finds the nearest assistant entry before index
// `before` that holds a tool_use with id and may be rewritten.
func assistantWithToolUse(es []*transcriptEntry, before int, id string) *transcriptEntry {
	for j := before - 1; j >= 0; j-- {
		a := es[j]
		if !a.prunable() || a.typ != "assistant" {
			continue
		}
		for _, b := range a.content {
			if b.typ == "tool_use" && b.id == id {
				return a
			}
		}
	}
	return nil
}

// withoutBlocks returns a new list without the blocks of type typ whose
// field equals value.
func withoutBlocks(l []any, typ, field, value string) []any {
	out := make([]any, 0, len(l))
	for _, x := range l {
		if b, ok := x.(map[string]any); ok && b["type"] == typ && b[field] == value {
			continue
		}
		out = append(out, x)
	}
	return out
}

// healOrphans inserts, right after each assistant entry with a tool_use that
// has no tool_result in any later entry, a user entry holding the missing
// results (OrphanText, is_error false: like a neutralized interrupt, the
// step was cut off, the tool did not fail). The assistant's children are
// re-pointed to the inserted entry. It returns the complete list, dropped
// entries included.
func healOrphans(es []*transcriptEntry, text string, rep *Report) []*transcriptEntry {
	lastResult := map[string]int{}
	for i, e := range es {
		if e.obj == nil || e.dropped {
			continue
		}
		e.eachBlock("tool_result", func(b contentBlock) {
			if b.id != "" {
				lastResult[b.id] = i
			}
		})
	}
	out := make([]*transcriptEntry, 0, len(es))
	for i, a := range es {
		out = append(out, a)
		if a.obj == nil || a.dropped || a.typ != "assistant" {
			continue
		}
		var orphans []string
		a.eachBlock("tool_use", func(b contentBlock) {
			if last, ok := lastResult[b.id]; b.id != "" && (!ok || last <= i) {
				orphans = append(orphans, b.id)
			}
		})
		if len(orphans) == 0 {
			continue
		}
		h := healEntry(a, orphans, text)
		if parent := a.uuid(); parent != "" {
			for _, c := range es {
				if c != a && c.obj != nil && c.obj["parentUuid"] == parent {
					c.obj["parentUuid"] = h.uuid()
					c.changed = true
				}
			}
		}
		out = append(out, h)
		rep.OrphansHealed += len(orphans)
	}
	return out
}

// healCopiedFields are the envelope fields an inserted entry takes from its
// assistant entry, so it sits in the same session, branch and thread.
var healCopiedFields = []string{
	"isSidechain", "userType", "cwd", "sessionId", "version", "gitBranch",
	"agentId", "teamName", "slug", "entrypoint", "timestamp",
}

// healEntry builds the user entry that answers orphan tool_use ids of a.
// Its uuid is derived from a and the ids (a name-based UUID), so every Load
// inserts the same entry: entries the CLI appends after a resume point to
// it, and it must still exist, under the same uuid, at the next Load.
func healEntry(a *transcriptEntry, ids []string, text string) *transcriptEntry {
	blocks := make([]any, len(ids))
	for i, id := range ids {
		blocks[i] = map[string]any{"type": "tool_result", "tool_use_id": id, "content": text, "is_error": false}
	}
	obj := map[string]any{
		"type":          "user",
		"parentUuid":    nil,
		"message":       map[string]any{"role": "user", "content": blocks},
		"toolUseResult": text,
	}
	for _, k := range healCopiedFields {
		if v, ok := a.obj[k]; ok {
			obj[k] = v
		}
	}
	anchor := a.uuid()
	if anchor != "" {
		obj["parentUuid"] = anchor
		obj["sourceToolAssistantUUID"] = anchor
	} else {
		sum := sha256.Sum256(a.raw)
		anchor = fmt.Sprintf("%x", sum)
	}
	obj["uuid"] = nameUUID("flower:store:heal:" + anchor + ":" + strings.Join(ids, ","))
	h := &transcriptEntry{obj: obj, changed: true}
	h.index()
	return h
}

// nameUUID is the RFC 9562 version 5 UUID of name in the URL namespace.
func nameUUID(name string) string {
	ns := [16]byte{0x6b, 0xa7, 0xb8, 0x11, 0x9d, 0xad, 0x11, 0xd1, 0x80, 0xb4, 0x00, 0xc0, 0x4f, 0xd4, 0x30, 0xc8}
	h := sha1.New()
	h.Write(ns[:])
	h.Write([]byte(name))
	s := h.Sum(nil)
	s[6] = s[6]&0x0f | 0x50
	s[8] = s[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", s[0:4], s[4:6], s[6:8], s[8:10], s[10:16])
}

// relink re-attaches every surviving entry whose parentUuid (or
// logicalParentUuid) names a dropped entry to the nearest surviving
// ancestor on that entry's parentUuid chain, or to null when none survives.
// es must be the complete list, dropped entries included. A pointer to a
// uuid that is not in the list is left alone.
func relink(es []*transcriptEntry) {
	// Only a dropped entry leaves pointers to re-attach; without one, the
	// uuid map below would be built for nothing.
	if !slices.ContainsFunc(es, func(e *transcriptEntry) bool { return e.dropped }) {
		return
	}
	byUUID := map[string]*transcriptEntry{}
	for _, e := range es {
		u := e.uuid()
		if u == "" {
			continue
		}
		if prev, ok := byUUID[u]; !ok || (prev.dropped && !e.dropped) {
			byUUID[u] = e
		}
	}
	for _, e := range es {
		if e.obj == nil || e.dropped {
			continue
		}
		for _, field := range []string{"parentUuid", "logicalParentUuid"} {
			p, ok := e.obj[field].(string)
			if !ok {
				continue
			}
			if np, moved := survivingAncestor(byUUID, p); moved {
				e.obj[field] = np
				e.changed = true
			}
		}
	}
}

// survivingAncestor walks up from uuid p past dropped entries. It returns
// the first surviving (or unknown) uuid, or nil at the root, and whether
// that differs from p.
func survivingAncestor(byUUID map[string]*transcriptEntry, p string) (any, bool) {
	cur := p
	seen := map[string]bool{}
	for {
		a, ok := byUUID[cur]
		if !ok || !a.dropped {
			return cur, cur != p
		}
		if seen[cur] {
			return nil, true // a cycle of dropped entries: no surviving ancestor
		}
		seen[cur] = true
		next, ok := a.obj["parentUuid"].(string)
		if !ok || next == "" {
			return nil, true
		}
		cur = next
	}
}

// interruptedEntries marks the entries an interrupt cut short: walking up
// the parentUuid chain from each user entry whose text starts with
// "[Request interrupted" (past attachments and the like), the first entry
// holding a tool_result. The walk stops at an assistant entry.
func interruptedEntries(es []*transcriptEntry) map[int]bool {
	var byUUID map[string]int // built at the first marker: most sessions have none
	cut := map[int]bool{}
	for _, e := range es {
		if e.obj == nil || e.typ != "user" || !e.startsWithInterruptMarker() {
			continue
		}
		if byUUID == nil {
			byUUID = map[string]int{}
			for i, x := range es {
				if x.entryUUID != "" {
					byUUID[x.entryUUID] = i
				}
			}
		}
		at := e
		for steps := 0; steps < 8; steps++ {
			p, ok := byUUID[at.str("parentUuid")]
			if !ok {
				break
			}
			at = es[p]
			if at.typ == "assistant" {
				break
			}
			if at.typ == "user" && at.hasBlock("tool_result") {
				cut[p] = true
				break
			}
		}
	}
	return cut
}

func (e *transcriptEntry) startsWithInterruptMarker() bool {
	if c, ok := e.message()["content"].(string); ok {
		return strings.HasPrefix(c, "[Request interrupted")
	}
	for _, b := range e.content {
		if t, _ := b.m["text"].(string); b.typ == "text" && strings.HasPrefix(t, "[Request interrupted") {
			return true
		}
	}
	return false
}

func isErrorResult(b map[string]any) bool {
	isErr, _ := b["is_error"].(bool)
	_, opaque := resultText(b)
	return isErr && !opaque
}
