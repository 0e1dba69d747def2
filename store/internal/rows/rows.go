// Package rows holds what flower's database backends (store/sqlite,
// store/postgres) share: the row key of a session key and its validation,
// the check and compaction of appended entries, and the reading of a
// turn's context size from a stored entry.
package rows

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/store"
)

// LastContextScan is how many of a transcript's newest entries LastContext
// looks through for usage.
const LastContextScan = 60

// Key validates key and returns its row key:
// "project_key/session_id[/subpath]". Errors wrap store.ErrInvalidKey.
func Key(key claude.SessionKey) (string, error) {
	if err := CheckSegment("project key", key.ProjectKey); err != nil {
		return "", err
	}
	if err := CheckSegment("session id", key.SessionID); err != nil {
		return "", err
	}
	sk := key.ProjectKey + "/" + key.SessionID
	if key.Subpath == "" {
		return sk, nil
	}
	if err := checkSubpath(key.Subpath); err != nil {
		return "", err
	}
	return sk + "/" + key.Subpath, nil
}

// CheckSegment validates a project key or session id (what names which):
// one segment of a row key. Errors wrap store.ErrInvalidKey.
func CheckSegment(what, s string) error {
	switch {
	case s == "":
		return fmt.Errorf("store: %w: the %s is empty", store.ErrInvalidKey, what)
	case strings.Contains(s, "/"):
		return fmt.Errorf("store: %w: the %s %q holds '/'; project keys are sanitized directory names (every '/' becomes '-') and session ids are UUIDs", store.ErrInvalidKey, what, s)
	case strings.Contains(s, "\x00"):
		return fmt.Errorf("store: %w: the %s %q holds NUL", store.ErrInvalidKey, what, s)
	}
	return nil
}

// checkSubpath validates a subagent subpath such as
// "subagents/agent-<id>": relative, '/'-joined, and unable to name anything
// outside its session once laid out as files.
func checkSubpath(p string) error {
	const want = "a subpath is relative and '/'-joined, like subagents/agent-<id>"
	switch {
	case strings.Contains(p, "\x00"):
		return fmt.Errorf("store: %w: subpath %q holds NUL; %s", store.ErrInvalidKey, p, want)
	case strings.Contains(p, `\`):
		return fmt.Errorf("store: %w: subpath %q holds a backslash; %s", store.ErrInvalidKey, p, want)
	case strings.HasPrefix(p, "/"):
		return fmt.Errorf("store: %w: subpath %q is absolute; %s", store.ErrInvalidKey, p, want)
	}
	for _, seg := range strings.Split(p, "/") {
		switch seg {
		case "..":
			return fmt.Errorf("store: %w: subpath %q has a '..' segment; %s", store.ErrInvalidKey, p, want)
		case "", ".":
			return fmt.Errorf("store: %w: subpath %q has an empty or '.' segment; %s", store.ErrInvalidKey, p, want)
		}
	}
	return nil
}

// Range returns the bounds [lo, hi) holding exactly the row keys that
// start with prefix+"/": '0' is the byte after '/', and both databases
// compare the key column bytewise (SQLite's TEXT, PostgreSQL's COLLATE "C"),
// so the range uses the primary key index with no LIKE escaping.
func Range(prefix string) (lo, hi string) {
	return prefix + "/", prefix + "0"
}

// Row is an entry ready to insert.
type Row struct {
	// Payload is the entry as compact JSON, its keys in the order given.
	// The payloads of a batch share one allocation.
	Payload json.RawMessage
	// UUID is the entry's "uuid" string; "" when it has none, and then
	// the entry is never deduplicated.
	UUID string
}

// Prepare compacts and checks every entry of a batch for the row key sk
// before anything is written, so a bad entry refuses the whole batch.
// Errors wrap store.ErrInvalidEntry and say that nothing was stored.
func Prepare(sk string, entries []json.RawMessage) ([]Row, error) {
	out := make([]Row, len(entries))
	total := 0
	for _, e := range entries {
		total += len(e)
	}
	var buf bytes.Buffer
	buf.Grow(total) // compacting never lengthens an entry
	for i, e := range entries {
		start := buf.Len()
		if err := json.Compact(&buf, e); err != nil {
			return nil, fmt.Errorf("store: append %s: %w: entry %d is not valid JSON (%v); nothing of this batch was stored", sk, store.ErrInvalidEntry, i, err)
		}
		compact := buf.Bytes()[start:buf.Len():buf.Len()]
		if len(compact) == 0 || compact[0] != '{' {
			return nil, fmt.Errorf("store: append %s: %w: entry %d is not a JSON object (it starts %.20q); nothing of this batch was stored", sk, store.ErrInvalidEntry, i, compact)
		}
		out[i].Payload = compact
		out[i].UUID = uuidOf(compact)
	}
	return out, nil
}

// uuidOf returns the "uuid" string of obj, a compact JSON object that
// json.Compact accepted, or "" when it has none or it is not a string. It
// reads the key as encoding/json does (escapes decoded, case folded, the
// last of repeated keys wins) but skips every other value without decoding
// it: a third of an append's time went to json.Unmarshal here.
func uuidOf(obj []byte) string {
	var last []byte // the value of the last key that reads as "uuid"
	for i := 1; i < len(obj) && obj[i] != '}'; {
		keyEnd := skipString(obj, i)
		key := obj[i:keyEnd]
		i = keyEnd + 1 // past ':'
		valueEnd := skipValue(obj, i)
		if keyIsUUID(key) {
			last = obj[i:valueEnd]
		}
		i = valueEnd
		if i < len(obj) && obj[i] == ',' {
			i++
		}
	}
	if len(last) < 2 || last[0] != '"' {
		return ""
	}
	if raw := last[1 : len(last)-1]; bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
		return string(raw)
	}
	var uid string
	if json.Unmarshal(last, &uid) != nil {
		return ""
	}
	return uid
}

// keyIsUUID reports whether the quoted key matches the field "uuid" the
// way encoding/json matches a struct field's name: case folded.
func keyIsUUID(quoted []byte) bool {
	name := quoted[1 : len(quoted)-1]
	if bytes.IndexByte(name, '\\') >= 0 {
		var s string
		if json.Unmarshal(quoted, &s) != nil {
			return false
		}
		name = []byte(s)
	}
	return bytes.EqualFold(name, []byte("uuid"))
}

// skipString returns the index just past the JSON string starting at i.
func skipString(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(b)
}

// skipValue returns the index just past the compact JSON value starting
// at i.
func skipValue(b []byte, i int) int {
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); {
			switch b[j] {
			case '"':
				j = skipString(b, j)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
			j++
		}
		return len(b)
	}
	for j := i; j < len(b); j++ { // a number, true, false or null
		switch b[j] {
		case ',', '}', ']':
			return j
		}
	}
	return len(b)
}

// UsageContext returns the context size (claude.Usage.Context) of an
// entry's message.usage; 0 when it has none or it does not decode. A field
// of the wrong type counts as 0.
func UsageContext(payload []byte) int {
	if !bytes.Contains(payload, []byte(`"usage"`)) {
		return 0
	}
	var e struct {
		Message struct {
			Usage claude.Usage `json:"usage"`
		} `json:"message"`
	}
	if err := json.Unmarshal(payload, &e); err != nil {
		var typeErr *json.UnmarshalTypeError
		if !errors.As(err, &typeErr) {
			return 0
		}
	}
	return e.Message.Usage.Context()
}
