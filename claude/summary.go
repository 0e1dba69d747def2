package claude

import (
	"bytes"
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"
)

// SessionSummaryData is the JSON object FoldSessionSummary keeps in
// SessionSummary.Data: what a session list shows without loading the
// transcript. Every field is either set once (the first value seen wins) or
// last-wins (every later value replaces it), so a store can fold each batch
// as it arrives and never re-read earlier entries.
//
// Its JSON form, with every field omitted while unset except entries:
//
//	{
//	  "first_prompt":     "fix the failing test in store/…",  // set once
//	  "command_fallback": "/model",                 // set once; a slash command seen before any real prompt
//	  "custom_title":     "store work",             // last-wins, from custom-title entries' customTitle
//	  "ai_title":         "Fix store tests",        // last-wins, from aiTitle
//	  "last_prompt":      "now run the benchmarks", // last-wins, from last-prompt entries' lastPrompt
//	  "summary_hint":     "Store tests fixed",      // last-wins, from summary entries' summary
//	  "tag":              "wip",                    // last-wins; a tag entry with an empty tag clears it
//	  "created_at":       1767225600000,            // set once: the first ISO timestamp, Unix ms
//	  "git_branch":       "main",                   // last-wins, from gitBranch
//	  "cwd":              "/home/u/repo",           // set once, from cwd
//	  "is_sidechain":     false,                    // set once, from the first entry's isSidechain
//	  "entries":          42                        // how many entries were folded
//	}
//
// The field names follow the Python Agent SDK's SessionSummaryEntry. Fields
// this version does not know are dropped when a summary is folded again.
type SessionSummaryData struct {
	// FirstPrompt is the first real user prompt, newlines turned into
	// spaces, at most 200 characters (a longer one is cut and ends in "…").
	// User entries that carry a tool_result, meta entries, compact summaries,
	// slash commands (<command-name>) and generated texts (a leading
	// lowercase tag such as <local-command-stdout>, "[Request interrupted by
	// user]") are skipped.
	FirstPrompt string `json:"first_prompt,omitempty"`
	// CommandFallback is the first slash command's name, shown when the
	// session has no real prompt.
	CommandFallback string `json:"command_fallback,omitempty"`
	CustomTitle     string `json:"custom_title,omitempty"`
	AITitle         string `json:"ai_title,omitempty"`
	LastPrompt      string `json:"last_prompt,omitempty"`
	SummaryHint     string `json:"summary_hint,omitempty"`
	Tag             string `json:"tag,omitempty"`
	// CreatedAt is the first entry timestamp that parses as RFC 3339, in
	// Unix milliseconds; 0 when none did.
	CreatedAt   int64  `json:"created_at,omitempty"`
	GitBranch   string `json:"git_branch,omitempty"`
	Cwd         string `json:"cwd,omitempty"`
	IsSidechain bool   `json:"is_sidechain,omitempty"`
	// Entries counts every entry folded, unreadable ones included.
	Entries int `json:"entries"`
}

// Title is what a session list shows for the session: the custom title, else
// the AI title, else the last prompt, else the summary, else the first
// prompt, else the slash command; "" when the session has none of them (the
// SDK leaves such sessions out of its listings).
func (d SessionSummaryData) Title() string {
	for _, s := range []string{d.CustomTitle, d.AITitle, d.LastPrompt, d.SummaryHint, d.FirstPrompt, d.CommandFallback} {
		if s != "" {
			return s
		}
	}
	return ""
}

// ParseSessionSummary decodes SessionSummary.Data as FoldSessionSummary
// writes it. Empty data or JSON null gives the zero value. It fails only when
// data is not a JSON object of that shape.
func ParseSessionSummary(data json.RawMessage) (SessionSummaryData, error) {
	var d SessionSummaryData
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		return d, nil
	}
	if err := json.Unmarshal(trimmed, &d); err != nil {
		return SessionSummaryData{}, errors.Join(errors.New("claude: session summary is not a summary object"), err)
	}
	return d, nil
}

// FoldSessionSummary folds a batch of newly appended entries into the summary
// a store keeps for key, and returns the new summary (a JSON object, see
// SessionSummaryData). prev is the summary the previous call returned, or nil
// for a session's first batch; data that does not decode is treated as nil.
// Folding batches one after another gives the same result as folding them
// all at once.
//
// Stores call it inside Append, only for main keys (key.Subpath empty):
// subagent transcripts must not change the session's summary. The fold is a
// pure function of its arguments and never fails: entries that are not JSON
// objects are counted and otherwise ignored. It does not stamp a time; the
// store sets SessionSummary.Mtime on its own write clock, the one
// SessionLister reports. The fold reads nothing from key today; it is in the
// signature, as in the SDK, so that stores need not change if it ever does.
func FoldSessionSummary(prev json.RawMessage, key SessionKey, entries []json.RawMessage) json.RawMessage {
	d, err := ParseSessionSummary(prev)
	if err != nil {
		d = SessionSummaryData{}
	}
	for _, raw := range entries {
		d.fold(raw)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // prompts often hold <tags>; keep them readable
	if err := enc.Encode(d); err != nil {
		// Unreachable: the struct holds only strings, ints and a bool.
		return json.RawMessage(`{}`)
	}
	return json.RawMessage(bytes.TrimRight(buf.Bytes(), "\n"))
}

// summaryEntry is the part of a transcript entry the fold reads. Values of
// the wrong JSON type leave their field unset (see fold).
type summaryEntry struct {
	Type             string `json:"type"`
	Timestamp        string `json:"timestamp"`
	IsSidechain      bool   `json:"isSidechain"`
	IsMeta           bool   `json:"isMeta"`
	IsCompactSummary bool   `json:"isCompactSummary"`
	Cwd              string `json:"cwd"`
	// The last-wins fields stay raw: only a JSON string replaces the value.
	CustomTitle json.RawMessage `json:"customTitle"`
	AITitle     json.RawMessage `json:"aiTitle"`
	LastPrompt  json.RawMessage `json:"lastPrompt"`
	Summary     json.RawMessage `json:"summary"`
	GitBranch   json.RawMessage `json:"gitBranch"`
	Tag         json.RawMessage `json:"tag"`
	Message     struct {
		Content json.RawMessage `json:"content"`
	} `json:"message"`
}

func (d *SessionSummaryData) fold(raw json.RawMessage) {
	first := d.Entries == 0
	d.Entries++
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return
	}
	var e summaryEntry
	if err := json.Unmarshal(trimmed, &e); err != nil {
		// A value of the wrong type only leaves its field unset; encoding/json
		// still fills the others. Anything else means the entry is unreadable.
		var typeErr *json.UnmarshalTypeError
		if !errors.As(err, &typeErr) {
			return
		}
	}
	if first {
		d.IsSidechain = e.IsSidechain
	}
	if d.CreatedAt == 0 && e.Timestamp != "" {
		if t, err := time.Parse(time.RFC3339Nano, e.Timestamp); err == nil {
			d.CreatedAt = t.UnixMilli()
		}
	}
	if d.Cwd == "" {
		d.Cwd = e.Cwd
	}
	d.foldFirstPrompt(&e)
	lastWins := []struct {
		dst *string
		src json.RawMessage
	}{
		{&d.CustomTitle, e.CustomTitle},
		{&d.AITitle, e.AITitle},
		{&d.LastPrompt, e.LastPrompt},
		{&d.SummaryHint, e.Summary},
		{&d.GitBranch, e.GitBranch},
	}
	for _, f := range lastWins {
		if v, ok := jsonString(f.src); ok {
			*f.dst = v
		}
	}
	if e.Type == "tag" {
		d.Tag, _ = jsonString(e.Tag) // an empty or missing tag clears it
	}
}

// jsonString decodes raw when it is a JSON string.
func jsonString(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

var (
	commandNameRE = regexp.MustCompile(`<command-name>(.*?)</command-name>`)
	// generatedPromptRE matches user texts the CLI generates rather than the
	// user types: a leading lowercase XML-like tag or an interrupt marker.
	generatedPromptRE = regexp.MustCompile(`^(?:\s*<[a-z][\w-]*[\s>]|\[Request interrupted by user[^\]]*\])`)
)

// firstPromptMax is the longest first_prompt kept, in characters.
const firstPromptMax = 200

func (d *SessionSummaryData) foldFirstPrompt(e *summaryEntry) {
	if d.FirstPrompt != "" || e.Type != "user" || e.IsMeta || e.IsCompactSummary {
		return
	}
	texts, hasToolResult := contentTexts(e.Message.Content)
	if hasToolResult {
		return
	}
	for _, text := range texts {
		text = strings.TrimSpace(strings.ReplaceAll(text, "\n", " "))
		if text == "" {
			continue
		}
		if m := commandNameRE.FindStringSubmatch(text); m != nil {
			if d.CommandFallback == "" {
				d.CommandFallback = m[1]
			}
			continue
		}
		if generatedPromptRE.MatchString(text) {
			continue
		}
		d.FirstPrompt = truncateRunes(text, firstPromptMax)
		return
	}
}

// contentTexts returns the texts of a message content (a string, or a list
// whose text blocks count) and whether the list holds a tool_result block.
func contentTexts(content json.RawMessage) (texts []string, hasToolResult bool) {
	content = bytes.TrimSpace(content)
	if len(content) == 0 {
		return nil, false
	}
	switch content[0] {
	case '"':
		var s string
		if json.Unmarshal(content, &s) == nil {
			return []string{s}, false
		}
	case '[':
		var blocks []json.RawMessage
		if json.Unmarshal(content, &blocks) != nil {
			return nil, false
		}
		for _, b := range blocks {
			var block struct {
				Type string  `json:"type"`
				Text *string `json:"text"`
			}
			if json.Unmarshal(b, &block) != nil {
				continue
			}
			switch {
			case block.Type == "tool_result":
				return nil, true
			case block.Type == "text" && block.Text != nil:
				texts = append(texts, *block.Text)
			}
		}
	}
	return texts, false
}

// truncateRunes cuts s to at most max characters, ending a cut string in "…".
func truncateRunes(s string, max int) string {
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	n := 0
	for i := range s {
		if n == max-1 {
			return strings.TrimRightFunc(s[:i], func(r rune) bool { return r == ' ' || r == '\t' }) + "…"
		}
		n++
	}
	return s
}
