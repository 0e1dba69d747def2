package human

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/flowerrun/flower/internal/atomicfile"
)

// The file front end: a run publishes its waiting questions in a directory
// and reads answers dropped into it, so a human elsewhere (another shell,
// a phone with ssh, a script) can answer with `flower reply`.
//
//	<dir>/pending.json      the waiting questions (PendingFile), replaced whole
//	<dir>/replies/*.json    one Reply per file, written whole by the replier
//	<dir>/outcomes/<name>   what became of reply <name> (Outcome)
const (
	PendingName  = "pending.json"
	RepliesDir   = "replies"
	OutcomesDir  = "outcomes"
	filePollTick = 200 * time.Millisecond
)

// PendingFile is pending.json.
type PendingFile struct {
	// Questions wait for an answer, oldest first; empty when none does.
	Questions []PendingQuestion `json:"questions"`
	// PID is the serving process, so a replier can tell a live run.
	PID int `json:"pid"`
}

// PendingQuestion is one waiting question.
type PendingQuestion struct {
	ID       string    `json:"id"`
	Question string    `json:"question"`
	Options  []string  `json:"options,omitempty"`
	AskedAt  time.Time `json:"asked_at"`
}

// Reply is one reply file. With an ID it answers that question (digits
// 1..n pick a choice) or, with Skip, declines it; a question that is no
// longer waiting gets nothing, and the text goes to the inbox instead, so
// no word is lost. Without an ID the text goes to the inbox.
type Reply struct {
	ID   string `json:"id,omitempty"`
	Text string `json:"text"`
	Skip bool   `json:"skip,omitempty"`
	// Sig is the reply's signature (SignReply) where the front end
	// accepts only signed replies (ServeSignedFiles).
	Sig string `json:"sig,omitempty"`
}

// SignReply is the signature of reply r delivered under file name: the
// HMAC-SHA256 under key of the name and the reply's fields, in hex. The
// name is in it so that a signed file copied under another name is no
// reply.
func SignReply(key []byte, name string, r Reply) string {
	h := hmac.New(sha256.New, key)
	for _, field := range []string{name, r.ID, r.Text, strconv.FormatBool(r.Skip)} {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(field)))
		h.Write(n[:])
		h.Write([]byte(field))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Outcome says what a reply did: "answered", "declined", "mail",
// "ignored" (no words) or "refused" (not a reply file), with the
// question's or the mail's id.
type Outcome struct {
	Result string `json:"result"`
	ID     string `json:"id"`
	// Answer is the text the model got (a picked choice's text).
	Answer string `json:"answer,omitempty"`
	// Note says why a reply did not do what it asked: the question was no
	// longer waiting or unknown (the words went to the inbox), or the file
	// was refused.
	Note string `json:"note,omitempty"`
	// Durable: a mail's words are in the words journal on disk; Amended:
	// they were appended to the brief.
	Durable bool `json:"durable,omitempty"`
	Amended bool `json:"amended,omitempty"`
}

// ServeFiles runs the file front end of ch in dir until ctx ends: it keeps
// pending.json equal to ch.Pending() and consumes the reply files. It
// returns nil when ctx ends, or an error when dir cannot be made. Files
// that cannot be read are logged and left for the human to see.
func ServeFiles(ctx context.Context, ch *Channel, dir string) error {
	return ServeSignedFiles(ctx, ch, dir, nil)
}

// ServeSignedFiles is ServeFiles taking only the reply files signed with
// key (SignReply); nil takes every reply. A team run's front end is signed
// by its worker: the run's own processes can write the folder, and a reply
// they drop there is refused and named, never taken as the person's.
func ServeSignedFiles(ctx context.Context, ch *Channel, dir string, key []byte) error {
	for _, d := range []string{dir, filepath.Join(dir, RepliesDir), filepath.Join(dir, OutcomesDir)} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("human: the reply directory: %w", err)
		}
	}
	var published []PendingQuestion
	first := true
	tick := time.NewTicker(filePollTick)
	defer tick.Stop()
	for {
		consumeReplies(ch, dir, key)
		now := pendingQuestions(ch)
		if first || !reflect.DeepEqual(now, published) {
			if err := writeJSON(filepath.Join(dir, PendingName), PendingFile{Questions: now, PID: os.Getpid()}); err != nil {
				slog.Warn("human: pending.json not written", "err", err)
			} else {
				published, first = now, false
			}
		}
		select {
		case <-ctx.Done():
			// Nothing waits any more: say so, so a replier does not
			// answer a run that is gone.
			_ = writeJSON(filepath.Join(dir, PendingName), PendingFile{Questions: []PendingQuestion{}})
			return nil
		case <-tick.C:
		}
	}
}

func pendingQuestions(ch *Channel) []PendingQuestion {
	out := []PendingQuestion{}
	for _, a := range ch.Pending() {
		out = append(out, PendingQuestion{ID: a.ID, Question: a.Question, Options: a.Options, AskedAt: a.AskedAt})
	}
	return out
}

// consumeReplies applies the reply files, oldest name first (WriteReply
// names them by time). A file that is not a reply (a link, a FIFO, a
// device, over MaxReplyBytes, not JSON, not text, unsigned where key is
// given) is renamed to .bad, never read past its cap, and its outcome says
// why.
func consumeReplies(ch *Channel, dir string, key []byte) {
	rdir := filepath.Join(dir, RepliesDir)
	entries, err := os.ReadDir(rdir)
	if err != nil {
		return
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || strings.HasPrefix(name, ".") || !strings.HasSuffix(name, ".json") {
			continue
		}
		path := filepath.Join(rdir, name)
		r, err := readReply(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err == nil && key != nil && !hmac.Equal([]byte(r.Sig), []byte(SignReply(key, name, r))) {
			err = fmt.Errorf("%w: %s is not signed by the person's side (flower reply, the dashboard, the worker): a reply written by the run itself is never taken as the person's", errNotAReply, name)
		}
		var out Outcome
		if err != nil {
			slog.Warn("human: a reply file was refused; renamed to .bad", "file", path, "err", err)
			_ = os.Rename(path, path+".bad")
			out = Outcome{Result: "refused", Note: err.Error()}
		} else {
			out = Route(ch, r)
			_ = os.Remove(path)
		}
		if err := writeJSON(filepath.Join(dir, OutcomesDir, name), out); err != nil {
			slog.Warn("human: outcome not written", "err", err)
		}
	}
}

// readReply reads one reply file (see readBounded) and checks that it is
// a Reply of text.
func readReply(path string) (Reply, error) {
	var r Reply
	data, err := readBounded(path, MaxReplyBytes)
	if err != nil {
		return r, err
	}
	if err := checkText(string(data)); err != nil {
		return r, fmt.Errorf("%s: %w", path, err)
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return r, fmt.Errorf("%w: %s is not a JSON reply: %v", errNotAReply, path, err)
	}
	if err := checkText(r.Text); err != nil {
		return r, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

// Route is the one routing of what a human says, for every front end (the
// console and `flower reply`): it answers the question r.ID while it
// waits (digits 1..n pick a choice; Skip declines it), and otherwise
// sends the text to the inbox, so no line is ever dropped. A question that
// settled a moment before (its timeout won) or that this run never asked
// gets the text as mail, and the outcome's Note says so.
func Route(ch *Channel, r Reply) Outcome {
	text := strings.TrimSpace(r.Text)
	note := ""
	if r.ID != "" {
		waiting := false
		for _, a := range ch.Pending() {
			if a.ID != r.ID {
				continue
			}
			waiting = true
			if r.Skip {
				if ch.Decline(a.ID, text) {
					return Outcome{Result: "declined", ID: a.ID}
				}
				break
			}
			if n, err := strconv.Atoi(text); err == nil && n >= 1 && n <= len(a.Options) {
				text = a.Options[n-1]
			}
			if text == "" {
				if ch.Decline(a.ID, "") {
					return Outcome{Result: "declined", ID: a.ID}
				}
				break
			}
			if ch.Answer(a.ID, text) {
				return Outcome{Result: "answered", ID: a.ID, Answer: text}
			}
			break
		}
		note = ch.notWaitingNote(r.ID, waiting)
	}
	if m, ok := ch.Send(text); ok {
		return Outcome{Result: "mail", ID: m.ID, Answer: text, Note: note, Durable: m.Durable, Amended: m.Amended}
	}
	return Outcome{Result: "ignored", Note: note}
}

// WriteReply drops r into dir's replies, written whole, and returns the
// file's name (the key of its outcome).
func WriteReply(dir string, r Reply) (string, error) {
	return WriteReplyOwned(dir, r, nil, nil)
}

// WriteReplyOwned is WriteReply for a writer other than the run's user
// (a root worker delivering to its run's user): own is given the replies
// folder when it makes it and the file before the file appears under its
// name, so that the run never sees a reply it cannot read yet (it would
// refuse it, and the person's words would be lost). nil owns nothing.
// With a key the reply is signed for ServeSignedFiles.
func WriteReplyOwned(dir string, r Reply, key []byte, own func(path string) error) (string, error) {
	if own == nil {
		own = func(string) error { return nil }
	}
	rdir := filepath.Join(dir, RepliesDir)
	if _, err := os.Stat(rdir); errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(rdir, 0o700); err != nil {
			return "", fmt.Errorf("human: the replies directory: %w", err)
		}
		if err := own(rdir); err != nil {
			return "", fmt.Errorf("human: the replies directory: %w", err)
		}
	}
	name := fmt.Sprintf("%020d-%d.json", time.Now().UnixNano(), os.Getpid())
	r.Sig = ""
	if key != nil {
		r.Sig = SignReply(key, name, r)
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return "", err
	}
	// A dot name until it is whole and owned: the reader skips those.
	tmp, err := os.CreateTemp(rdir, ".reply-*")
	if err != nil {
		return "", fmt.Errorf("human: writing a reply: %w", err)
	}
	_, werr := tmp.Write(append(data, '\n'))
	serr := tmp.Sync()
	err = errors.Join(werr, serr, tmp.Close())
	if err == nil {
		err = own(tmp.Name())
	}
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(rdir, name))
	}
	if err != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("human: writing a reply: %w", err)
	}
	return name, nil
}

// maxPendingBytes caps pending.json as read by a replier: the questions
// are bounded by the model's output, far below it.
const maxPendingBytes = 16 << 20

// ReadPending reads dir's pending.json; fs.ErrNotExist when no run has
// served there.
func ReadPending(dir string) (PendingFile, error) {
	var p PendingFile
	data, err := readBounded(filepath.Join(dir, PendingName), maxPendingBytes)
	if err != nil {
		return p, err
	}
	if err := json.Unmarshal(data, &p); err != nil {
		return p, fmt.Errorf("human: %s is not JSON: %w", PendingName, err)
	}
	return p, nil
}

// WaitOutcome waits for reply name's outcome until ctx ends, and removes it.
func WaitOutcome(ctx context.Context, dir, name string) (Outcome, error) {
	path := filepath.Join(dir, OutcomesDir, name)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		data, err := readBounded(path, MaxReplyBytes)
		if err == nil {
			var o Outcome
			if err := json.Unmarshal(data, &o); err != nil {
				return o, err
			}
			_ = os.Remove(path)
			return o, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return Outcome{}, err
		}
		select {
		case <-ctx.Done():
			return Outcome{}, ctx.Err()
		case <-tick.C:
		}
	}
}

func writeJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(path, append(data, '\n'), 0o600)
}
