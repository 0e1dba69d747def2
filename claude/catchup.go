package claude

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"hash/maphash"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"strings"
)

// The CLI writes each transcript entry to its local JSONL file and mirrors
// it on stdout, but not in one step: a CLI killed in between (SIGKILL, a
// crash, flower's own stall kill) leaves entries in the file that no frame
// ever carried. When the CLI did not exit cleanly, the mirror reads its
// local transcripts once more and appends, in file order, the entries the
// store never received. A clean exit flushes every frame, so the files are
// read only after an abnormal end.

// entrySet is what a transcript file's entries are known by: the uuid of
// those with one and the compact JSON of every one, both hashed (a few
// bytes an entry, for the life of the session). Contents are counted: the
// CLI writes some bookkeeping lines (a mode, the tools used) again with the
// same bytes, and each line of the file is matched by one entry sent.
type entrySet map[uint64]int

var entrySeed = maphash.MakeSeed()

func uuidHash(uuid string) uint64 { return maphash.String(entrySeed, "uuid:"+uuid) }

func (s entrySet) add(raw []byte) {
	uuid, _, h := entryMark(raw)
	if uuid != "" {
		s[uuidHash(uuid)] = 1
	}
	s[h]++
}

// take reports whether an entry of this uuid or content was sent, and
// counts the content's use.
func (s entrySet) take(uuid string, h uint64) bool {
	if s[h] > 0 {
		s[h]--
		return true
	}
	return uuid != "" && s[uuidHash(uuid)] > 0
}

// entryMark is an entry's uuid, type and the hash of its compact JSON (the
// CLI writes the same object compactly to its file and to its frame).
func entryMark(raw []byte) (uuid, typ string, h uint64) {
	var head struct {
		UUID string `json:"uuid"`
		Type string `json:"type"`
	}
	_ = json.Unmarshal(raw, &head)
	var compact bytes.Buffer
	if json.Compact(&compact, raw) != nil {
		compact.Reset()
		compact.Write(bytes.TrimSpace(raw))
	}
	return head.UUID, head.Type, maphash.Bytes(entrySeed, compact.Bytes())
}

// cliOnly reports entry types the CLI keeps in its file and never mirrors:
// its record of each API request (large, and of no use to a resume).
func cliOnly(typ string) bool { return strings.HasPrefix(typ, "api-request") }

// unmirrored returns, per transcript, the entries of the CLI's local files
// that the store was never sent. A line is known when its uuid or its
// compact bytes were mirrored (or laid out for a resume), each sent entry
// matching one line; lines without a uuid are taken only after the last
// known line, so that a line whose bytes differ from its frame's (were the
// CLI to encode them apart) is never sent twice.
func (m *mirror) unmirrored() (order []string, pending map[string][]json.RawMessage) {
	m.mu.Lock()
	// Copies: take counts them down.
	known := make(map[string]entrySet, len(m.known))
	for p, s := range m.known {
		known[p] = maps.Clone(s)
	}
	sessions := append([]string(nil), m.sessions...)
	m.mu.Unlock()

	pending = map[string][]json.RawMessage{}
	seen := map[string]bool{}
	consider := func(path string) {
		path = filepath.Clean(path)
		if seen[path] {
			return
		}
		seen[path] = true
		if _, ok := m.keyFor(path); !ok {
			return
		}
		entries, err := unknownLines(path, known[path], m.secrets)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				slog.Warn("claude: could not read the CLI's transcript to catch up the store", "path", path, "err", err)
			}
			return
		}
		if len(entries) > 0 {
			order = append(order, path)
			pending[path] = entries
		}
	}
	var mains []string
	for p := range known {
		mains = append(mains, p)
	}
	for _, sid := range sessions {
		if !uuidRE.MatchString(sid) {
			continue // never a glob pattern
		}
		found, _ := filepath.Glob(filepath.Join(m.projectsDir, "*", sid+".jsonl"))
		mains = append(mains, found...)
	}
	// Main transcripts first, then each one's subagents: a subagent's
	// entries point at its parent's.
	for _, p := range sortedPaths(mains) {
		consider(p)
		if key, ok := m.keyFor(p); ok && key.Subpath == "" {
			dir := strings.TrimSuffix(p, ".jsonl")
			_ = filepath.WalkDir(dir, func(sub string, d fs.DirEntry, err error) error {
				if err == nil && !d.IsDir() && strings.HasSuffix(sub, ".jsonl") {
					consider(sub)
				}
				return nil
			})
		}
	}
	return order, pending
}

// sortedPaths puts main transcripts (<pk>/<sid>.jsonl, the shortest) before
// the subagent ones, keeping the order otherwise stable.
func sortedPaths(paths []string) []string {
	var mains, subs []string
	for _, p := range paths {
		if !strings.Contains(filepath.ToSlash(p), "/subagents/") {
			mains = append(mains, p)
		} else {
			subs = append(subs, p)
		}
	}
	return append(mains, subs...)
}

// unknownLines reads a JSONL transcript and returns, in order, the entries
// known does not hold (see unmirrored). A torn last line (the CLI was
// killed while writing it) is left out.
func unknownLines(path string, known entrySet, s *secrets) ([]json.RawMessage, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// Only unknown lines are kept: a long transcript is mostly known.
	type line struct {
		raw  json.RawMessage
		uuid string
		at   int
	}
	var unknown []line
	n, lastKnown := 0, -1
	r := bufio.NewReaderSize(f, 64<<10)
	for {
		b, err := r.ReadBytes('\n')
		// Masked as the mirrored copy was, so that the two match.
		s.mask(b)
		if b = bytes.TrimSpace(b); len(b) > 0 && json.Valid(b) {
			if uuid, typ, h := entryMark(b); !cliOnly(typ) {
				if known.take(uuid, h) {
					lastKnown = n
				} else {
					unknown = append(unknown, line{raw: b, uuid: uuid, at: n})
				}
				n++
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	var out []json.RawMessage
	for _, l := range unknown {
		if l.uuid != "" || l.at > lastKnown {
			out = append(out, l.raw)
		}
	}
	return out, nil
}
