package fakeapi

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"
)

// The prompt cache's prices, in input-token equivalents: what a user's bill
// charges for a token read from the cache, written to it, and produced.
const (
	// BytesPerToken is the fake's token rule: a part's tokens are its bytes
	// (as the request sent them, cache markers left out) divided by four,
	// rounded up. Real tokenizers differ by text; a fixed rule keeps the
	// benchmarks' figures reproducible.
	BytesPerToken = 4
	// CacheReadPrice is a token read from the cache.
	CacheReadPrice = 0.1
	// CacheWritePrice is a token written to the cache (the 5-minute TTL).
	CacheWritePrice = 1.25
	// OutputPrice is a token the model writes.
	OutputPrice = 5.0
	// CacheTTL is how long a cached prefix lives without a read.
	CacheTTL = 5 * time.Minute
)

// Tokens is bytes under the fake's rule (BytesPerToken), rounded up.
func Tokens(bytes int) int { return (bytes + BytesPerToken - 1) / BytesPerToken }

// InputEquivalents is the usage's price in input tokens: uncached input at
// 1, cache writes at CacheWritePrice, cache reads at CacheReadPrice, output
// at OutputPrice.
func (u Usage) InputEquivalents() float64 {
	return float64(u.InputTokens) + CacheWritePrice*float64(u.CacheCreationInputTokens) +
		CacheReadPrice*float64(u.CacheReadInputTokens) + OutputPrice*float64(u.OutputTokens)
}

// Zone is where a segment of a request was priced.
type Zone int

const (
	// Read: within the longest cached prefix, priced CacheReadPrice.
	Read Zone = iota
	// Write: after it, up to the request's last cache breakpoint, written
	// to the cache at CacheWritePrice.
	Write
	// Input: after the last breakpoint, plain input.
	Input
)

// Price is a token's price in the zone, in input-token equivalents.
func (z Zone) Price() float64 {
	switch z {
	case Read:
		return CacheReadPrice
	case Write:
		return CacheWritePrice
	}
	return 1
}

func (z Zone) String() string {
	switch z {
	case Read:
		return "cache read"
	case Write:
		return "cache write"
	}
	return "input"
}

// Segment is one cacheable unit of a request, in the API's prefix order:
// each tool definition, each system block, then each message's content
// blocks (a string content is one block).
type Segment struct {
	// Field is "tools", "system" or "messages"; Index the tool, system
	// block or message; Block the block within a message.
	Field        string
	Index, Block int
	// Role is a message's role: the same block under another role is
	// another prefix.
	Role string
	// Raw is the segment as sent, its cache_control marker removed (the
	// marker places a breakpoint; it is not part of the cached content).
	Raw json.RawMessage
	// Breakpoint: the request marked this segment with cache_control.
	Breakpoint bool
	Zone       Zone
}

// Pricing is a request priced by a PromptCache.
type Pricing struct {
	Segments []Segment
	// The request's bytes per zone.
	ReadBytes, WriteBytes, InputBytes int
}

// Usage is the pricing as the API reports it, with the reply's outputBytes.
func (p Pricing) Usage(outputBytes int) Usage {
	return Usage{InputTokens: Tokens(p.InputBytes), CacheCreationInputTokens: Tokens(p.WriteBytes),
		CacheReadInputTokens: Tokens(p.ReadBytes), OutputTokens: max(Tokens(outputBytes), 1)}
}

// PromptCache models the Messages API's prompt cache, as a user's bill
// sees it. A request reads the longest prefix of itself that an earlier
// request wrote at one of its cache breakpoints (a segment marked
// cache_control) within the TTL, writes the rest up to its own last
// breakpoint, and pays plain input after it; every breakpoint prefix of the
// request is then cached for CacheTTL (a read refreshes it). Two
// simplifications, stated: any cached prefix counts however far before a
// breakpoint it ends (the API looks back 20 blocks), and there is no
// minimum cacheable length.
//
// Its clock is the wall clock plus what Advance added, so a script can give
// each tool call a simulated duration. It is safe for concurrent use.
type PromptCache struct {
	mu      sync.Mutex
	now     func() time.Time
	offset  time.Duration
	entries map[[sha256.Size]byte]time.Time // prefix digest → expiry
}

// NewPromptCache returns an empty cache on now (nil: time.Now).
func NewPromptCache(now func() time.Time) *PromptCache {
	if now == nil {
		now = time.Now
	}
	return &PromptCache{now: now, entries: map[[sha256.Size]byte]time.Time{}}
}

// Advance moves the cache's clock forward by d.
func (c *PromptCache) Advance(d time.Duration) {
	c.mu.Lock()
	c.offset += d
	c.mu.Unlock()
}

// Now is the cache's clock.
func (c *PromptCache) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now().Add(c.offset)
}

// Price prices a request body at the cache's clock and updates the cache.
func (c *PromptCache) Price(body []byte) (Pricing, error) { return c.PriceAt(body, c.Now()) }

// PriceAt prices a request body as sent at time at and updates the cache.
// A body that is not a Messages request is an error, and changes nothing.
func (c *PromptCache) PriceAt(body []byte, at time.Time) (Pricing, error) {
	segs, err := Segments(body)
	if err != nil {
		return Pricing{}, err
	}
	digests := make([][sha256.Size]byte, len(segs))
	var prev [sha256.Size]byte
	lastBreak := -1
	for i, s := range segs {
		h := sha256.New()
		h.Write(prev[:])
		// Where the block stands (a message's first block or a later one,
		// and the role) is part of the prefix, as the JSON around it is.
		fmt.Fprintf(h, "%s\x00%s\x00%d\x00", s.Field, s.Role, s.Block)
		h.Write(s.Raw)
		h.Sum(digests[i][:0])
		prev = digests[i]
		if s.Breakpoint {
			lastBreak = i
		}
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	read := -1 // the last segment of the cached prefix
	for i := len(segs) - 1; i >= 0; i-- {
		if exp, ok := c.entries[digests[i]]; ok && at.Before(exp) {
			read = i
			c.entries[digests[i]] = at.Add(CacheTTL)
			break
		}
	}
	var p Pricing
	for i := range segs {
		switch {
		case i <= read:
			segs[i].Zone = Read
			p.ReadBytes += len(segs[i].Raw)
		case i <= lastBreak:
			segs[i].Zone = Write
			p.WriteBytes += len(segs[i].Raw)
		default:
			segs[i].Zone = Input
			p.InputBytes += len(segs[i].Raw)
		}
		if segs[i].Breakpoint {
			c.entries[digests[i]] = at.Add(CacheTTL)
		}
	}
	p.Segments = segs
	return p, nil
}

// Segments splits a Messages request body into its cacheable segments, in
// prefix order, each without its cache_control marker.
func Segments(body []byte) ([]Segment, error) {
	var w struct {
		Tools    []json.RawMessage `json:"tools"`
		System   json.RawMessage   `json:"system"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &w); err != nil {
		return nil, fmt.Errorf("fakeapi: price a request: %w", err)
	}
	var segs []Segment
	add := func(field string, index, block int, raw json.RawMessage) error {
		clean, marked, err := unmark(raw)
		if err != nil {
			return fmt.Errorf("fakeapi: price a request: %s[%d]: %w", field, index, err)
		}
		segs = append(segs, Segment{Field: field, Index: index, Block: block, Raw: clean, Breakpoint: marked})
		return nil
	}
	for i, t := range w.Tools {
		if err := add("tools", i, 0, t); err != nil {
			return nil, err
		}
	}
	system, err := contentItems(w.System)
	if err != nil {
		return nil, fmt.Errorf("fakeapi: price a request: system: %w", err)
	}
	for i, b := range system {
		if err := add("system", i, 0, b); err != nil {
			return nil, err
		}
	}
	for i, m := range w.Messages {
		blocks, err := contentItems(m.Content)
		if err != nil {
			return nil, fmt.Errorf("fakeapi: price a request: messages[%d]: %w", i, err)
		}
		for j, b := range blocks {
			if err := add("messages", i, j, b); err != nil {
				return nil, err
			}
			segs[len(segs)-1].Role = m.Role
		}
	}
	return segs, nil
}

// contentItems is a content field's blocks: none, a string (one text
// block: the API reads "x" and [{"type":"text","text":"x"}] as the same
// tokens, and the CLI sends one form or the other for the same entry as it
// is last in the request or not), or a list.
func contentItems(raw json.RawMessage) ([]json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if raw[0] == '"' {
		if !json.Valid(raw) {
			return nil, errors.New("a string content that is no JSON string")
		}
		block := append(append([]byte(`{"type":"text","text":`), raw...), '}')
		return []json.RawMessage{block}, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, errors.New("want a string or a list of blocks")
	}
	return items, nil
}

// unmark returns an item without its top-level cache_control member, the
// other bytes as sent (so the same block marked in one request and not in
// the next is the same prefix), and whether it had one.
func unmark(raw json.RawMessage) (json.RawMessage, bool, error) {
	i := bytes.IndexByte(raw, '{')
	if i < 0 || !bytes.Contains(raw, []byte(`"cache_control"`)) {
		return raw, false, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw[i:]))
	if _, err := dec.Token(); err != nil {
		return nil, false, err
	}
	first := true
	for dec.More() {
		from := int(dec.InputOffset())
		key, err := dec.Token()
		if err != nil {
			return nil, false, err
		}
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return nil, false, err
		}
		to := int(dec.InputOffset())
		if key == "cache_control" {
			rest := raw[i+to:]
			if first {
				rest = bytes.TrimLeft(rest, " \t\r\n")
				rest = bytes.TrimPrefix(rest, []byte(","))
			}
			clean := append(append(json.RawMessage{}, raw[:i+from]...), rest...)
			return clean, true, nil
		}
		first = false
	}
	return raw, false, nil
}
