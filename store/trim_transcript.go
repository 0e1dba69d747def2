package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"unicode/utf8"
)

// A loaded transcript, decoded once per Load. Every entry keeps its original
// bytes; only entries marked changed are re-encoded on the way out, so the
// others reach the CLI byte for byte as stored.

// transcriptEntry is one stored entry during a Load.
type transcriptEntry struct {
	raw json.RawMessage
	// obj is the decoded object (numbers as json.Number), nil when raw is not
	// a JSON object: such an entry is passed through untouched.
	obj     map[string]any
	changed bool
	dropped bool

	// The fields below are read from obj once, by index, because the
	// layers' dozen passes over every entry looked them up in the maps
	// again each time, at about half the cost of reading the JSONL file.
	// The layers never rewrite "type", "uuid", "isCompactSummary",
	// "isMeta", "isApiErrorMessage" or message.model, nor a block's "type",
	// "id" or "tool_use_id"; message.content changes only through
	// setBlocks, which indexes the new list.
	typ         string // obj["type"]; "" when missing or not a string
	entryUUID   string // obj["uuid"]; "" when missing or not a string
	isProtected bool   // isCompactSummary or isMeta is true
	// apiError: isApiErrorMessage is true or message.model is "<synthetic>".
	apiError bool
	// content holds the object blocks of message.content, in order; it is
	// empty when the content is not a list.
	content []contentBlock
}

// contentBlock is an object block of message.content with the fields the
// layers pick blocks by.
type contentBlock struct {
	m   map[string]any
	typ string // m["type"]; "" when missing or not a string
	// id is a tool_use's "id" or a tool_result's "tool_use_id"; "" when
	// missing, not a string, or the block is of another type.
	id string
}

// index reads the fields the layers select entries and blocks by.
func (e *transcriptEntry) index() {
	e.typ = e.str("type")
	e.entryUUID = e.str("uuid")
	e.isProtected = e.flag("isCompactSummary") || e.flag("isMeta")
	model, _ := e.message()["model"].(string)
	e.apiError = e.flag("isApiErrorMessage") || model == "<synthetic>"
	e.indexBlocks()
}

func (e *transcriptEntry) indexBlocks() {
	e.content = nil
	for _, x := range e.blocks() {
		m, ok := x.(map[string]any)
		if !ok {
			continue
		}
		b := contentBlock{m: m}
		b.typ, _ = m["type"].(string)
		switch b.typ {
		case "tool_use":
			b.id, _ = m["id"].(string)
		case "tool_result":
			b.id, _ = m["tool_use_id"].(string)
		}
		e.content = append(e.content, b)
	}
}

// decodeTranscript decodes rows without touching them. bad lists the indexes
// of rows that are not JSON objects, with the reason. Decoding dominates a
// resume's load, and rows are independent: they are decoded in parallel,
// one contiguous share per processor.
func decodeTranscript(rows []json.RawMessage) (es []*transcriptEntry, bad map[int]error) {
	es = make([]*transcriptEntry, len(rows))
	errs := make([]error, len(rows))
	inShares(len(rows), 256, func(lo, hi int) { decodeShare(rows, lo, hi, es, errs) })
	for i, err := range errs {
		if err != nil {
			if bad == nil {
				bad = map[int]error{}
			}
			bad[i] = err
		}
	}
	return es, bad
}

// inShares calls f on [0, n) split into one contiguous share per
// processor, each of at least minShare items, in parallel, and returns when
// every call has.
func inShares(n, minShare int, f func(lo, hi int)) {
	workers := min(runtime.GOMAXPROCS(0), max(1, n/minShare))
	share := (n + workers - 1) / workers
	var wg sync.WaitGroup
	for lo := 0; lo < n; lo += share {
		hi := min(lo+share, n)
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(lo, hi)
		}()
	}
	wg.Wait()
}

// decodeShare decodes rows[lo:hi] into es and errs as one stream of rows
// through one Decoder, whose buffer grows to the largest row once: a
// Decoder per row regrew it from 512 bytes for every row, allocating about
// 1.75 times what the entries themselves need. Each row must still be one
// object by itself: where the stream's Decoder fails or ends a value
// anywhere but at the row's end (a row that is cut, one a neighbour
// completes, data after the object), that row is decoded alone, which gives
// the same error as before, and a fresh stream starts at the next row.
func decodeShare(rows []json.RawMessage, lo, hi int, es []*transcriptEntry, errs []error) {
	for i := lo; i < hi; {
		r := &rowStream{rows: rows[i:hi]}
		dec := json.NewDecoder(r)
		dec.UseNumber()
		var end int64 // the stream offset where row i starts
		for ; i < hi; i++ {
			row := rows[i]
			es[i] = &transcriptEntry{raw: row}
			start := end
			end += int64(len(row)) + 1 // the row and its newline
			t := bytes.TrimLeft(row, " \t\r\n")
			body := bytes.TrimRight(t, " \t\r\n")
			if len(body) == 0 || body[0] != '{' {
				es[i].obj, errs[i] = decodeEntryObject(row)
				i++
				break // the stream would read this row as a value: start anew after it
			}
			var obj map[string]any
			err := dec.Decode(&obj)
			if err != nil || dec.InputOffset() != start+int64(len(row)-len(t)+len(body)) {
				es[i].obj, errs[i] = decodeEntryObject(row)
				i++
				break
			}
			es[i].obj = obj
		}
	}
	// Indexing here spreads it over the decoding workers too.
	for i := lo; i < hi; i++ {
		es[i].index()
	}
}

// rowStream reads rows one after the other, each followed by a newline.
type rowStream struct {
	rows    []json.RawMessage
	off     int  // read offset within rows[0]
	newline bool // rows[0] is read; its newline is next
}

func (r *rowStream) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) && len(r.rows) > 0 {
		if r.newline {
			p[n] = '\n'
			n++
			r.rows, r.off, r.newline = r.rows[1:], 0, false
			continue
		}
		c := copy(p[n:], r.rows[0][r.off:])
		n += c
		r.off += c
		r.newline = r.off == len(r.rows[0])
	}
	if n == 0 && len(r.rows) == 0 {
		return 0, io.EOF
	}
	return n, nil
}

func decodeEntryObject(raw json.RawMessage) (map[string]any, error) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || t[0] != '{' {
		return nil, fmt.Errorf("not a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(t))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil {
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	// One scan instead of json.Valid first: what follows the object must
	// be nothing.
	if dec.InputOffset() != int64(len(t)) {
		return nil, fmt.Errorf("not valid JSON: data after the object")
	}
	return obj, nil
}

// encodeTranscript returns the surviving entries as new JSON: changed ones
// re-encoded, the others copies of their original bytes.
func encodeTranscript(es []*transcriptEntry) ([]json.RawMessage, error) {
	// Re-encoding the changed entries is most of the work (the trimmed and
	// expired ones carry their whole toolUseResult), and entries are
	// independent: they are encoded in parallel, like the decode.
	var changed []int
	size := 0
	for i, e := range es {
		switch {
		case e.dropped:
		case e.changed && e.obj != nil:
			changed = append(changed, i)
		default:
			size += len(e.raw)
		}
	}
	encoded := make([]json.RawMessage, len(changed))
	errs := make([]error, len(changed))
	inShares(len(changed), 64, func(lo, hi int) {
		for k := lo; k < hi; k++ {
			encoded[k], errs[k] = encodeEntry(es[changed[k]])
		}
	})
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	out := make([]json.RawMessage, 0, len(es))
	// The copies share one allocation, each capped at its own length so
	// that appending to one cannot overwrite the next.
	copies := make([]byte, 0, size)
	for _, e := range es {
		if e.dropped {
			continue
		}
		if !e.changed || e.obj == nil {
			at := len(copies)
			copies = append(copies, e.raw...)
			out = append(out, json.RawMessage(copies[at:len(copies):len(copies)]))
			continue
		}
		out = append(out, encoded[0])
		encoded = encoded[1:]
	}
	return out, nil
}

// encodeEntry re-encodes a changed entry's object.
func encodeEntry(e *transcriptEntry) (json.RawMessage, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(e.obj); err != nil {
		return nil, fmt.Errorf("store: re-encode transcript entry %s: %w", e.uuid(), err)
	}
	return json.RawMessage(bytes.TrimRight(buf.Bytes(), "\n")), nil
}

func (e *transcriptEntry) str(field string) string {
	if e.obj == nil {
		return ""
	}
	s, _ := e.obj[field].(string)
	return s
}

func (e *transcriptEntry) flag(field string) bool {
	if e.obj == nil {
		return false
	}
	b, _ := e.obj[field].(bool)
	return b
}

func (e *transcriptEntry) uuid() string { return e.entryUUID }

// protected entries (compact summaries, meta entries) are never rewritten.
func (e *transcriptEntry) protected() bool { return e.isProtected }

func (e *transcriptEntry) message() map[string]any {
	if e.obj == nil {
		return nil
	}
	m, _ := e.obj["message"].(map[string]any)
	return m
}

// blocks is message.content when it is a list of blocks, else nil.
func (e *transcriptEntry) blocks() []any {
	m := e.message()
	if m == nil {
		return nil
	}
	l, _ := m["content"].([]any)
	return l
}

func (e *transcriptEntry) setBlocks(l []any) {
	e.message()["content"] = l
	e.changed = true
	e.indexBlocks()
}

// eachBlock calls f for every block of message.content with the given type.
func (e *transcriptEntry) eachBlock(typ string, f func(b contentBlock)) {
	for _, b := range e.content {
		if b.typ == typ {
			f(b)
		}
	}
}

func (e *transcriptEntry) hasBlock(typ string) bool {
	for _, b := range e.content {
		if b.typ == typ {
			return true
		}
	}
	return false
}

// resultText reads a tool_result block: its text (the string content, or the
// text blocks of a list joined by newlines) and whether it holds anything
// else (an image, a document, any block that is not text), which makes it
// opaque: never trimmed, expired or rewritten.
func resultText(b map[string]any) (text string, opaque bool) {
	switch c := b["content"].(type) {
	case nil:
		return "", false
	case string:
		return c, false
	case []any:
		var parts []string
		for _, x := range c {
			blk, _ := x.(map[string]any)
			s, isText := blk["text"].(string)
			if blk["type"] != "text" || !isText {
				opaque = true
				continue
			}
			parts = append(parts, s)
		}
		return strings.Join(parts, "\n"), opaque
	default:
		return "", true
	}
}

// site is a tool_result block in the content list of an unprotected entry.
type site struct {
	entry  int
	block  map[string]any
	id     string // the block's tool_use_id; "" when missing or not a string
	text   string
	opaque bool
}

func (s site) chars() int { return utf8.RuneCountInString(s.text) }

func (s site) setContent(es []*transcriptEntry, content string) {
	s.block["content"] = content
	es[s.entry].changed = true
}

// findSites lists the sites of the surviving entries in file order.
func findSites(es []*transcriptEntry) []site {
	var sites []site
	for i, e := range es {
		if e.obj == nil || e.dropped || e.protected() {
			continue
		}
		e.eachBlock("tool_result", func(b contentBlock) {
			text, opaque := resultText(b.m)
			sites = append(sites, site{entry: i, block: b.m, id: b.id, text: text, opaque: opaque})
		})
	}
	return sites
}

// toolUse is a tool_use block of an assistant entry.
type toolUse struct {
	entry int
	name  string
	input map[string]any
}

// findToolUses maps tool_use ids to their first assistant entry.
func findToolUses(es []*transcriptEntry) map[string]toolUse {
	uses := map[string]toolUse{}
	for i, e := range es {
		if e.obj == nil || e.dropped || e.typ != "assistant" {
			continue
		}
		e.eachBlock("tool_use", func(b contentBlock) {
			if _, seen := uses[b.id]; b.id == "" || seen {
				return
			}
			name, _ := b.m["name"].(string)
			input, _ := b.m["input"].(map[string]any)
			uses[b.id] = toolUse{entry: i, name: name, input: input}
		})
	}
	return uses
}

func isInterrupted(b map[string]any) bool {
	if isErr, _ := b["is_error"].(bool); !isErr {
		return false
	}
	text, opaque := resultText(b)
	return !opaque && strings.Contains(text, "[Request interrupted")
}
