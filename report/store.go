package report

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	_ "modernc.org/sqlite" // the session store's driver
)

// storeData is what the report takes from one sessions.db.
type storeData struct {
	sessions map[string]*Session
	order    []string
	turns    []storedTurn
	// prompts are each session's first main-thread user text.
	prompts map[string]string
}

// storedTurn is one model call (an assistant message, however many
// entries the CLI split it into).
type storedTurn struct {
	session string
	sub     bool
	time    time.Time
	model   string
	usage   Tokens
}

// openReadOnly opens the store so that it can neither write nor lock out
// a writer. A database with no -wal file beside it has no writer now (the
// last connection of a WAL database removes it on close) and is opened
// immutable: SQLite then touches no -shm or lock either, so the directory
// is left exactly as it was. With a -wal file a run may be writing: the
// connection is read-only and query-only, and in WAL mode a reader never
// blocks the writer.
func openReadOnly(path string) (*sql.DB, error) {
	q := url.Values{}
	q.Set("mode", "ro")
	q.Add("_pragma", "query_only(1)")
	q.Add("_pragma", "busy_timeout(5000)")
	if _, err := os.Lstat(path + "-wal"); errors.Is(err, fs.ErrNotExist) {
		q.Set("immutable", "1")
	}
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(path)}
	db, err := sql.Open("sqlite", u.String()+"?"+q.Encode())
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	return db, nil
}

// readStore reads every entry of the store at path; nil when there is
// none, with a problem when it cannot be read.
func (g *gatherer) readStore(ctx context.Context, path string) *storeData {
	sd := &storeData{sessions: map[string]*Session{}, prompts: map[string]string{}}
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		return sd
	}
	db, err := openReadOnly(path)
	if err != nil {
		g.problem("%s could not be opened (%v): sessions, tokens and the context watermark are missing", path, err)
		return sd
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	rows, err := db.QueryContext(ctx, `SELECT store_key, payload FROM entries ORDER BY store_key, seq`)
	if err != nil {
		g.problem("%s could not be read (%v): sessions, tokens and the context watermark are missing; if it is damaged, move it aside and the next run starts a new one", path, err)
		return sd
	}
	defer rows.Close()
	type msgKey struct{ key, id string }
	turnAt := map[msgKey]int{}
	models := map[string]map[string]int{} // main-thread turns per model, per session
	agents := map[string]bool{}           // subagent keys seen
	for rows.Next() {
		var key string
		var payload []byte
		if err := rows.Scan(&key, &payload); err != nil {
			g.problem("%s: a row could not be read: %v", path, err)
			return sd
		}
		_, rest, _ := strings.Cut(key, "/")
		sid, _, sub := strings.Cut(rest, "/")
		s := sd.sessions[sid]
		if s == nil {
			s = &Session{ID: sid}
			sd.sessions[sid] = s
			sd.order = append(sd.order, sid)
		}
		th := &s.Main
		if sub {
			th = &s.Sub
			if !agents[key] {
				agents[key] = true
				s.Agents++
			}
		}
		th.Entries++
		th.Chars += len(payload)
		var e struct {
			Type      string    `json:"type"`
			Timestamp time.Time `json:"timestamp"`
			Message   struct {
				ID      string          `json:"id"`
				Model   string          `json:"model"`
				Content json.RawMessage `json:"content"`
				Usage   *struct {
					Input         int `json:"input_tokens"`
					Output        int `json:"output_tokens"`
					CacheRead     int `json:"cache_read_input_tokens"`
					CacheCreation int `json:"cache_creation_input_tokens"`
				} `json:"usage"`
			} `json:"message"`
		}
		if json.Unmarshal(payload, &e) != nil {
			continue
		}
		if e.Type == "user" && !sub && sd.prompts[sid] == "" {
			sd.prompts[sid] = userText(e.Message.Content)
		}
		if e.Type != "assistant" || e.Message.ID == "" || e.Message.Usage == nil || e.Message.Model == "<synthetic>" {
			continue
		}
		u := Tokens{Input: e.Message.Usage.Input, Output: e.Message.Usage.Output, CacheRead: e.Message.Usage.CacheRead, CacheCreation: e.Message.Usage.CacheCreation}
		mk := msgKey{key, e.Message.ID}
		if i, ok := turnAt[mk]; ok {
			sd.turns[i].usage = u // the CLI repeats a message's usage on each of its entries
			continue
		}
		turnAt[mk] = len(sd.turns)
		sd.turns = append(sd.turns, storedTurn{session: sid, sub: sub, time: e.Timestamp, model: e.Message.Model, usage: u})
		th.Turns++
		if models[sid] == nil {
			models[sid] = map[string]int{}
		}
		if !sub {
			models[sid][e.Message.Model]++
		}
	}
	if err := rows.Err(); err != nil {
		g.problem("%s could not be read to the end (%v): what follows is partial", path, err)
	}
	for _, t := range sd.turns {
		s := sd.sessions[t.session]
		if t.sub {
			s.Sub.Tokens.add(t.usage)
		} else {
			s.Main.Tokens.add(t.usage)
		}
	}
	for sid, s := range sd.sessions {
		best := 0
		for m, n := range models[sid] {
			if n > best || (n == best && m < s.Model) {
				s.Model, best = m, n
			}
		}
	}
	return sd
}

// mainTurns are the main threads' turns in time order.
func (sd *storeData) mainTurns() []storedTurn {
	var out []storedTurn
	for _, t := range sd.turns {
		if !t.sub {
			out = append(out, t)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].time.Before(out[j].time) })
	return out
}

// turnsOf are the turns (both sides) that belong to steps[i].
func (sd *storeData) turnsOf(steps []Step, i int) []storedTurn {
	var out []storedTurn
	for _, t := range sd.turns {
		if rowOf(steps, t, steps[i].Aside) == i {
			out = append(out, t)
		}
	}
	return out
}

// slack widens a row's time bounds: the manifest's clock and the CLI's
// transcript timestamps differ by moments.
const slack = 2 * time.Second

// rowOf is the row a turn belongs to: among the rows that used its session
// and whose time bounds hold it, the one that started last; -1 for none.
func rowOf(steps []Step, t storedTurn, aside bool) int {
	best := -1
	for i, s := range steps {
		if s.Aside != aside || (s.SessionID != t.session && !slices.Contains(s.Retired, t.session)) {
			continue
		}
		if !t.time.IsZero() && !s.StartedAt.IsZero() {
			if t.time.Before(s.StartedAt.Add(-slack)) || (!s.EndedAt.IsZero() && t.time.After(s.EndedAt.Add(slack))) {
				continue
			}
		}
		if best < 0 || s.StartedAt.After(steps[best].StartedAt) {
			best = i
		}
	}
	return best
}

// userText is a user message's text: its content when that is a string,
// else its text blocks joined; "" for tool results.
func userText(content json.RawMessage) string {
	var s string
	if json.Unmarshal(content, &s) == nil {
		return s
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(content, &blocks) != nil {
		return ""
	}
	var parts []string
	for _, b := range blocks {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}
