package main

// What the economy benchmarks measure in the requests the fake API got:
// bytes (all, main thread, largest), where they go by request part, and
// the read-back check of every output the model was sent as a pointer.

import (
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/flowerrun/flower/claude/claudetest"
	"github.com/flowerrun/flower/claude/fakeapi"
	"github.com/flowerrun/flower/ephemeral"
	"github.com/flowerrun/flower/internal/pointer"
	"github.com/flowerrun/flower/store"
	"github.com/flowerrun/flower/store/readback"
)

// econFigures are one run's figures.
type econFigures struct {
	// Requests, Bytes and Largest count every request; the Main ones the
	// main thread's only (a subagent's request says cc_is_subagent=true).
	Requests, MainRequests int
	Bytes, MainBytes       int64
	Largest, MainLargest   int64
	// Parts and SubParts are the main thread's and the subagents' bytes
	// by request part (see econParts).
	Parts, SubParts map[string]int64
	// Check is the read-back of every Bash output, as the model was last
	// sent it; Pointed how many of its bytes were sent as a pointer (the
	// spill guard's, the trimmer's, the CLI's <persisted-output>), all of
	// which must be recoverable; Expired how many small glances expired
	// by design (their output is stale, the model is told to run them
	// again), left out of the check.
	Check   readback.Report
	Pointed int64
	Expired int
	Wall    time.Duration
	// Price is the run priced by the prompt-cache model, per timeline.
	Price map[string]econPrice
	// Resumes is the usage the fake reported (own timing) for the first
	// request of each resumed process: the first resume's, and for
	// flower's Runtime a second resume's, whose process only answers and
	// is left out of every other figure.
	Resumes []fakeapi.Usage
}

// The request parts, in the order they are printed.
const (
	partSystem     = "system prompt"
	partTools      = "tool schemas"
	partInline     = "messages: tool results, whole output inline"
	partPersisted  = "messages: tool results, CLI <persisted-output> preview"
	partSpill      = "messages: tool results, spill pointer"
	partPreview    = "messages: tool results, spill pointer's 400-character preview"
	partTrim       = "messages: tool results, trim stub"
	partExpired    = "messages: tool results, expiry note"
	partWrite      = "messages: tool results, Write acknowledgements"
	partAgent      = "messages: tool results, worker reports (Agent)"
	partResultElse = "messages: tool results, other"
	partToolUse    = "messages: tool calls (tool_use)"
	partReminder   = "messages: <system-reminder> texts"
	partText       = "messages: prompts and other texts"
	partSysEntry   = "messages: mid-conversation system entries"
	partFraming    = "messages: JSON framing"
	partOther      = "other fields (model, metadata, thinking…)"
)

var econPartOrder = []string{partSystem, partTools, partInline, partPersisted, partSpill, partPreview, partTrim, partExpired,
	partWrite, partAgent, partResultElse, partToolUse, partReminder, partText, partSysEntry, partFraming, partOther}

// econMeasure computes the figures of a run from its requests; outputs
// are the Bash calls' outputs the fake noted.
//
// configDir is the CLI's config directory: a pointer the CLI wrote in a
// process resumed from flower's store names a file in the driver's
// temporary resume directory, gone with that process; the driver keeps a
// copy at the same place under configDir and the next resume points the
// model there, so that is where the check reads it.
func econMeasure(reqs []*claudetest.Request, calls []econCall, outputs map[string]string, ws, configDir string) econFigures {
	f := econFigures{Parts: map[string]int64{}, SubParts: map[string]int64{}}
	sent := map[string]string{}
	for _, req := range reqs {
		n := int64(len(req.Body))
		f.Requests++
		f.Bytes += n
		f.Largest = max(f.Largest, n)
		parts := f.SubParts
		if !req.Subagent {
			f.MainRequests++
			f.MainBytes += n
			f.MainLargest = max(f.MainLargest, n)
			parts = f.Parts
		}
		econParts(req.Body, calls, outputs, parts)
		for _, b := range req.ToolResults() {
			if _, ok := econIndex(b.ToolUseID); ok {
				sent[b.ToolUseID] = econResumeDir.ReplaceAllString(b.Content, configDir+"/") // the newest request's wins
			}
		}
	}
	want := map[string]readback.Output{}
	for id, out := range outputs {
		i, _ := econIndex(id)
		content, ok := sent[id]
		if ok && econExpired(calls[i], out, content) {
			f.Expired++
			continue
		}
		want[id] = readback.Output{Text: out}
	}
	f.Check = readback.Check(sent, want, ws)
	for _, r := range f.Check.Results {
		if r.Status != readback.Inline {
			f.Pointed += r.Bytes
		}
	}
	return f
}

// econResumeDir matches the driver's temporary resume directory in a path
// (claude.materialize makes it with os.MkdirTemp).
var econResumeDir = regexp.MustCompile(`/[^\s"]*/claude-resume-[0-9]+/`)

// econExpired reports a result the expiry replaced by design: a glance
// small enough for expiry (bigger ones go to trimming and must stay
// recoverable), sent neither whole nor as a pointer to a file.
func econExpired(c econCall, output, content string) bool {
	return ephemeral.Is(c.Cmd) && len(output) <= store.DefaultEphemeralMaxChars &&
		econTrimNL(content) != econTrimNL(output) && len(pointer.Files(content)) == 0
}

func econTrimNL(s string) string { return strings.TrimSuffix(s, "\n") }

// econParts adds the bytes of one request body to parts, by part. A body
// that is not the JSON expected counts whole as partOther.
func econParts(body []byte, calls []econCall, outputs map[string]string, parts map[string]int64) {
	var top map[string]json.RawMessage
	if json.Unmarshal(body, &top) != nil {
		parts[partOther] += int64(len(body))
		return
	}
	counted := int64(0)
	for k, v := range top {
		n := int64(len(v))
		counted += n
		switch k {
		case "system":
			parts[partSystem] += n
		case "tools":
			parts[partTools] += n
		case "messages":
			econMessageParts(v, calls, outputs, parts)
		default:
			parts[partOther] += n + int64(len(k)) + 4
			counted += int64(len(k)) + 4
		}
	}
	parts[partOther] += int64(len(body)) - counted // the top object's own framing
}

func econMessageParts(raw json.RawMessage, calls []econCall, outputs map[string]string, parts map[string]int64) {
	var msgs []json.RawMessage
	if json.Unmarshal(raw, &msgs) != nil {
		parts[partOther] += int64(len(raw))
		return
	}
	counted := int64(0)
	for _, m := range msgs {
		var msg struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		}
		if json.Unmarshal(m, &msg) != nil {
			continue
		}
		if msg.Role == "system" {
			parts[partSysEntry] += int64(len(m))
			counted += int64(len(m))
			continue
		}
		var blocks []json.RawMessage
		if json.Unmarshal(msg.Content, &blocks) != nil {
			parts[partText] += int64(len(msg.Content)) // a plain string
			counted += int64(len(msg.Content))
			continue
		}
		for _, b := range blocks {
			part := econBlockPart(b, calls, outputs)
			n := int64(len(b))
			counted += n
			if part == partSpill {
				// The preview is what follows the pointer's first line; its
				// bytes as sent are about its length (newlines are spaces).
				var r struct {
					Content json.RawMessage `json:"content"`
				}
				json.Unmarshal(b, &r)
				if _, preview, ok := strings.Cut(econContentText(r.Content), "\n"); ok {
					p := min(int64(len(preview)), n)
					parts[partPreview] += p
					n -= p
				}
			}
			parts[part] += n
		}
	}
	parts[partFraming] += int64(len(raw)) - counted
}

// econBlockPart says which part a content block is.
func econBlockPart(raw json.RawMessage, calls []econCall, outputs map[string]string) string {
	var b struct {
		Type      string          `json:"type"`
		Text      string          `json:"text"`
		Name      string          `json:"name"`
		ToolUseID string          `json:"tool_use_id"`
		Content   json.RawMessage `json:"content"`
	}
	if json.Unmarshal(raw, &b) != nil {
		return partOther
	}
	switch b.Type {
	case "text":
		if strings.HasPrefix(strings.TrimSpace(b.Text), "<system-reminder>") {
			return partReminder
		}
		return partText
	case "tool_use":
		return partToolUse
	case "tool_result":
		return econResultPart(econContentText(b.Content), b.ToolUseID, calls, outputs)
	}
	return partOther
}

// econResultPart says what a tool result's content is, by its shape (the
// English texts of the guard, the trimmer and the expiry, which the
// benchmark's runtimes speak) and against the call's real output.
func econResultPart(content, id string, calls []econCall, outputs map[string]string) string {
	i, ours := econIndex(id)
	t := strings.TrimSpace(content)
	switch {
	case !ours || i >= len(calls):
		if strings.Contains(content, "Conclusion:") {
			return partAgent
		}
		return partResultElse
	case calls[i].Kind == "write":
		return partWrite
	case econTrimNL(content) == econTrimNL(outputs[id]):
		return partInline
	case pointer.Persisted(t):
		return partPersisted
	case strings.HasPrefix(t, "[Output of ") || strings.HasPrefix(t, "[Output partial"):
		return partSpill
	case strings.HasPrefix(t, "[Tool result archived"):
		return partTrim
	case strings.HasPrefix(t, "[Result of "):
		return partExpired
	}
	return partResultElse
}

// econContentText is a tool_result's content as text: a string, or its
// text blocks joined by newlines.
func econContentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []struct {
		Text string `json:"text"`
	}
	json.Unmarshal(raw, &blocks)
	texts := make([]string, len(blocks))
	for i, b := range blocks {
		texts[i] = b.Text
	}
	return strings.Join(texts, "\n")
}

// econStat is a median with its minimum and maximum.
type econStat struct{ med, min, max float64 }

func econStats(xs []float64) econStat {
	s := slices.Clone(xs)
	slices.Sort(s)
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return econStat{med, s[0], s[len(s)-1]}
}

// fmt prints the median in unit and, when the runs differed, the range.
func (s econStat) fmt(unit float64, prec int) string {
	if s.min == s.max {
		return fmt.Sprintf("%.*f", prec, s.med/unit)
	}
	return fmt.Sprintf("%.*f (%.*f–%.*f)", prec, s.med/unit, prec, s.min/unit, prec, s.max/unit)
}

func econOf(fs []econFigures, get func(econFigures) float64) econStat {
	xs := make([]float64, len(fs))
	for i, f := range fs {
		xs[i] = get(f)
	}
	return econStats(xs)
}

const (
	econMB = 1e6
	econKB = 1e3
)

// econPrint prints the long session's figures: one line per variant, then
// where each variant's bytes go.
func econPrint(w io.Writer, variants []econVariant, results [][]econFigures) {
	plain := econOf(results[0], func(f econFigures) float64 { return float64(f.Bytes) }).med
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "variant\trequests\ttotal MB\tlargest MB\tplain ÷ variant\tread-back of pointed bytes\twall s")
	for vi, v := range variants {
		fs := results[vi]
		total := econOf(fs, func(f econFigures) float64 { return float64(f.Bytes) })
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.1f×\t%s\t%s\n", v.name,
			econOf(fs, func(f econFigures) float64 { return float64(f.Requests) }).fmt(1, 0),
			total.fmt(econMB, 2),
			econOf(fs, func(f econFigures) float64 { return float64(f.Largest) }).fmt(econMB, 3),
			plain/total.med, econReadback(fs[0]),
			econOf(fs, func(f econFigures) float64 { return f.Wall.Seconds() }).fmt(1, 1))
	}
	tw.Flush()
	for vi, v := range variants {
		fmt.Fprintf(w, "\n%s: %s\n", v.name, v.about)
		econPrintParts(w, results[vi][0].Parts, results[vi][0].MainRequests)
	}
	econPrintPrices(w, variants, results)
	econPrintResumes(w, variants, results)
}

// econPrintResumes prints what the first request of each resumed process
// read from the prompt cache and wrote to it: a resume rewrites old
// results once, so a second resume should write little more than what
// came after the first.
func econPrintResumes(w io.Writer, variants []econVariant, results [][]econFigures) {
	fmt.Fprintln(w, "\nThe first request of each resumed process (own timing; a second resume is a third process that only answers, left out above)")
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "variant\tresume\tread from cache KB\twritten to cache KB\tinput KB\tprice, k tok-eq")
	for vi, v := range variants {
		for i, u := range results[vi][0].Resumes {
			price := fakeapi.CacheReadPrice*float64(u.CacheReadInputTokens) + fakeapi.CacheWritePrice*float64(u.CacheCreationInputTokens) +
				float64(u.InputTokens) + fakeapi.OutputPrice*float64(u.OutputTokens)
			kb := func(tokens int) string { return fmt.Sprintf("%.1f", float64(tokens*fakeapi.BytesPerToken)/1000) }
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%.1f\n", v.name, []string{"first", "second"}[min(i, 1)],
				kb(u.CacheReadInputTokens), kb(u.CacheCreationInputTokens), kb(u.InputTokens), price/1000)
		}
	}
	tw.Flush()
}

// econReadback sums up the read-back check in a cell.
func econReadback(f econFigures) string {
	bad := f.Check.Truncated + f.Check.Missing
	s := fmt.Sprintf("%.0f%% of %.2f MB", 100*float64(f.Pointed-bad)/float64(max(f.Pointed, 1)), float64(f.Pointed)/econMB)
	if bad > 0 {
		s += fmt.Sprintf(" (%d bytes LOST)", bad)
	}
	return s
}

// econPrintParts prints where a thread's bytes go, part by part.
func econPrintParts(w io.Writer, parts map[string]int64, requests int) {
	var total int64
	for _, n := range parts {
		total += n
	}
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	fmt.Fprintf(tw, "  part\tMB\tshare\tKB per request\t\n")
	for _, p := range econPartOrder {
		n := parts[p]
		if n == 0 {
			continue
		}
		fmt.Fprintf(tw, "  %s\t%.2f\t%.1f%%\t%.1f\t\n", p, float64(n)/econMB, 100*float64(n)/float64(total),
			float64(n)/econKB/float64(max(requests, 1)))
	}
	tw.Flush()
}
