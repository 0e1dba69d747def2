// Package readback checks that nothing a session's tools produced was lost
// on the way to the model: every tool result the model was sent either holds
// the output or points to files that do, and Check follows each pointer (the
// spill guard's, the trimmer's, the CLI's <persisted-output>) and compares
// what it finds with the tool's output. Tests, the benchmark and the run
// report use it to state how many bytes stay recoverable.
//
// Outputs are compared modulo one trailing newline: the Claude Code CLI
// strips the trailing newline of a Bash output before any hook or
// transcript sees it, so the command's own output may have one more byte
// than every copy flower or the CLI keeps.
package readback

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/flowerrun/flower/internal/pointer"
)

// Output is a tool's output for one call, as far as it is known.
type Output struct {
	// Text is the output, or its start when Size says it was longer.
	Text string
	// Size is the whole output's size in bytes; 0 means len(Text).
	Size int64
}

func (o Output) size() int64 {
	if o.Size > 0 {
		return o.Size
	}
	return int64(len(trimNL(o.Text)))
}

// whole reports whether Text is all of the output.
func (o Output) whole() bool { return o.size() <= int64(len(trimNL(o.Text))) }

// Status is what became of one output.
type Status string

// The statuses, from best to worst.
const (
	// Inline: the result the model was sent holds the output itself.
	Inline Status = "inline"
	// Recoverable: a file the result names holds the whole output.
	Recoverable Status = "recoverable"
	// Truncated: a file the result names holds only the output's start.
	Truncated Status = "truncated"
	// Missing: no file the result names holds the output, or none exists.
	Missing Status = "missing"
)

// Result is the check of one tool call.
type Result struct {
	ToolUseID string
	Status    Status
	// File is the file that holds the most of the output ("" for Inline or
	// when none holds any of it).
	File string
	// Bytes is the output's size; Recovered how many of its first bytes the
	// model can get back (all of them for Inline and Recoverable).
	Bytes, Recovered int64
	// Why says what is wrong with a Truncated or Missing result.
	Why string
}

// Report sums up a check.
type Report struct {
	Results []Result
	// Bytes is the outputs' total size; Recoverable how many bytes of it
	// can be had back (inline or from files), Truncated how many are lost
	// from files that hold only a start, Missing how many are lost with no
	// file at all. Recoverable+Truncated+Missing == Bytes.
	Bytes, Recoverable, Truncated, Missing int64
}

// Percent is the share of bytes recoverable, 100 for a session without
// output.
func (r Report) Percent() float64 {
	if r.Bytes == 0 {
		return 100
	}
	return 100 * float64(r.Recoverable) / float64(r.Bytes)
}

// String is a one-line summary.
func (r Report) String() string {
	return fmt.Sprintf("%.1f%% recoverable: %d of %d bytes (%d truncated, %d missing) in %d outputs",
		r.Percent(), r.Recoverable, r.Bytes, r.Truncated, r.Missing, len(r.Results))
}

// Check compares, for every tool call in outputs, the result the model was
// sent (sent, by tool_use_id) with the output: inline, or in a file the
// result names, following pointers that lead to further pointers. Relative
// paths are taken from workspace. A call missing from sent is Missing.
func Check(sent map[string]string, outputs map[string]Output, workspace string) Report {
	ids := make([]string, 0, len(outputs))
	for id := range outputs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var rep Report
	for _, id := range ids {
		r := checkOne(id, sent, outputs[id], workspace)
		rep.Results = append(rep.Results, r)
		rep.Bytes += r.Bytes
		rep.Recoverable += r.Recovered
		switch r.Status {
		case Truncated:
			rep.Truncated += r.Bytes - r.Recovered
		case Missing:
			rep.Missing += r.Bytes - r.Recovered
		}
	}
	return rep
}

func checkOne(id string, sent map[string]string, want Output, workspace string) Result {
	r := Result{ToolUseID: id, Bytes: want.size(), Status: Missing}
	content, ok := sent[id]
	if !ok {
		r.Why = "the model was not sent this result"
		return r
	}
	if want.whole() && trimNL(content) == trimNL(want.Text) {
		r.Status, r.Recovered = Inline, r.Bytes
		return r
	}
	r.Why = "the result names no file"
	best := int64(-1)
	seen := map[string]bool{}
	var follow func(text string, depth int)
	follow = func(text string, depth int) {
		for _, f := range pointer.Files(text) {
			if !filepath.IsAbs(f) {
				f = filepath.Join(workspace, f)
			}
			if seen[f] {
				continue
			}
			seen[f] = true
			data, err := os.ReadFile(f)
			if err != nil {
				if best < 0 {
					r.File, r.Why = "", fmt.Sprintf("%s: %v", f, err)
				}
				continue
			}
			got := trimNL(string(data))
			n := matched(got, want)
			if n > best {
				best, r.File = n, f
			}
			if n == r.Bytes {
				return
			}
			if depth < 3 && pointer.Is(got) {
				follow(got, depth+1)
			}
		}
	}
	follow(content, 0)
	switch {
	case best == r.Bytes:
		r.Status, r.Recovered, r.Why = Recoverable, r.Bytes, ""
	case best > 0:
		r.Status, r.Recovered = Truncated, best
		r.Why = fmt.Sprintf("%s holds only the first %d of %d bytes", r.File, best, r.Bytes)
	case best == 0:
		r.Why = fmt.Sprintf("%s does not hold this output", r.File)
		r.File = ""
	}
	return r
}

// matched is how many bytes of the output got holds from the start: all of
// them when it is the output, len(got) when it is a start of the output, 0
// otherwise. When only the start of the output is known, got must begin
// with it and have the output's size.
func matched(got string, want Output) int64 {
	text := trimNL(want.Text)
	size := want.size()
	if want.whole() {
		if got == text {
			return size
		}
		if len(got) > 0 && strings.HasPrefix(text, got) {
			return int64(len(got))
		}
		return 0
	}
	switch {
	case !strings.HasPrefix(got, text) && !strings.HasPrefix(text, got):
		return 0
	case int64(len(got))+1 >= size: // the size may count the newline got lost
		return size
	default:
		return int64(len(got))
	}
}

// trimNL removes one trailing newline: see the package comment.
func trimNL(s string) string { return strings.TrimSuffix(s, "\n") }

// Sent reads, from transcript entries (the CLI's JSONL lines, as stored or
// as loaded through the store's layers), the content of every tool result
// by tool_use_id: what the model is sent for each call. A list of text
// blocks is joined by newlines; the last result of an id wins.
func Sent(entries []json.RawMessage) map[string]string {
	out := map[string]string{}
	for _, e := range entries {
		var entry struct {
			Message struct {
				Content json.RawMessage `json:"content"`
			} `json:"message"`
		}
		if json.Unmarshal(e, &entry) != nil {
			continue
		}
		var blocks []struct {
			Type      string          `json:"type"`
			ToolUseID string          `json:"tool_use_id"`
			Content   json.RawMessage `json:"content"`
		}
		if json.Unmarshal(entry.Message.Content, &blocks) != nil {
			continue
		}
		for _, b := range blocks {
			if b.Type == "tool_result" && b.ToolUseID != "" {
				out[b.ToolUseID] = contentText(b.Content)
			}
		}
	}
	return out
}

// contentText is a tool_result's content as text.
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	var b strings.Builder
	for i, p := range parts {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(p.Text)
	}
	return b.String()
}

// Stored reads what the stored, original entries know of each Bash call's
// output (by tool_use_id), from the CLI's toolUseResult: the whole stdout,
// or, when the CLI cut it, its start and persistedOutputSize. A result a
// hook replaced (a spill pointer) tells nothing of the output and is left
// out: give such outputs to Check from their source.
func Stored(entries []json.RawMessage) map[string]Output {
	out := map[string]Output{}
	for _, e := range entries {
		var entry struct {
			Message struct {
				Content json.RawMessage `json:"content"`
			} `json:"message"`
			ToolUseResult json.RawMessage `json:"toolUseResult"`
		}
		if json.Unmarshal(e, &entry) != nil || len(bytes.TrimSpace(entry.ToolUseResult)) == 0 {
			continue
		}
		var res struct {
			Stdout *string `json:"stdout"`
			Size   int64   `json:"persistedOutputSize"`
		}
		if json.Unmarshal(entry.ToolUseResult, &res) != nil || res.Stdout == nil || len(pointer.Files(*res.Stdout)) > 0 {
			continue
		}
		var blocks []struct {
			Type      string `json:"type"`
			ToolUseID string `json:"tool_use_id"`
		}
		if json.Unmarshal(entry.Message.Content, &blocks) != nil {
			continue
		}
		for _, b := range blocks {
			if b.Type == "tool_result" && b.ToolUseID != "" {
				out[b.ToolUseID] = Output{Text: *res.Stdout, Size: res.Size}
			}
		}
	}
	return out
}
