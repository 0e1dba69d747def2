package human

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/flowerrun/flower/internal/atomicfile"
)

// Amend appends text to the amend file under a heading with label and the
// time of day: "\n## <label>(HH:MM:SS)\n<text>\n" (a new file starts with
// the texts' AmendHeader). An empty label means the run label (运行中补充 /
// "Added during the run"); Texts().WakeLabel marks words given when a run
// wakes. It reports whether it wrote: false without an amend path, for empty
// text, or when the file cannot be written (logged; the run goes on).
func (c *Channel) Amend(text, label string) bool {
	text = strings.TrimSpace(text)
	return c.amend(text, label, false)
}

// AmendOnce is Amend, except that it writes nothing and reports false when
// the amend file already holds text: a run started again with the same
// words (a wake) amends the brief once, and the caller learns whether the
// brief changed (and so whether the goal must be derived again).
func (c *Channel) AmendOnce(text, label string) bool {
	return c.amend(strings.TrimSpace(text), label, true)
}

func (c *Channel) amend(text, label string, once bool) bool {
	if c.amendPath == "" || text == "" {
		return false
	}
	label = strings.TrimSpace(label)
	if label == "" {
		label = c.Texts().AmendLabel
	}
	stamp := time.Now().Format("15:04:05")
	block := "\n## " + label + "(" + stamp + ")\n" + text + "\n"
	if c.Lang().IsEnglish() {
		block = "\n## " + label + " (" + stamp + ")\n" + text + "\n"
	}
	unless := ""
	if once {
		unless = text
	}
	if err := c.appendFile(c.amendPath, c.Texts().AmendHeader, block, unless); err != nil {
		if errors.Is(err, errPresent) {
			return false
		}
		slog.Warn("human: could not amend the brief", "path", c.amendPath, "err", err)
		return false
	}
	c.fileMu.Lock()
	c.amended = append(c.amended, block)
	c.fileMu.Unlock()
	return true
}

// KeepAmendments appends to the amend file again every block this channel
// appended that the file no longer holds, and returns them (joined): a
// step that replaced the whole file (the clarify gate writing the brief)
// calls it, so words sent while it ran survive the rewrite.
func (c *Channel) KeepAmendments() (string, error) {
	if c.amendPath == "" {
		return "", nil
	}
	c.fileMu.Lock()
	blocks := append([]string(nil), c.amended...)
	c.fileMu.Unlock()
	var lost []string
	for _, b := range blocks {
		data, err := os.ReadFile(c.amendPath)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("human: read %s: %w", c.amendPath, err)
		}
		if strings.Contains(string(data), b) {
			continue
		}
		if err := c.appendFile(c.amendPath, c.Texts().AmendHeader, b, ""); err != nil {
			return "", fmt.Errorf("human: the words sent during the step could not be written back to %s: %w", c.amendPath, err)
		}
		lost = append(lost, strings.TrimSpace(b))
	}
	return strings.Join(lost, "\n\n"), nil
}

// logEscaper keeps each value of a Q&A log entry on its line: a question
// or an answer holding a newline and Markdown would otherwise write
// entries of its own (a forged "- **Q**(q7) … **A**[answered] Yes").
// Backslashes are doubled so the escape is unambiguous.
var logEscaper = strings.NewReplacer("\\", "\\\\", "\r\n", "\\n", "\n", "\\n", "\r", "\\r",
	"\u2028", "\\u2028", "\u2029", "\\u2029", "\u0085", "\\u0085")

// logValue is s as one line of the Q&A log: line breaks escaped, other
// control characters (NUL included) shown as U+FFFD.
func logValue(s string) string {
	s = logEscaper.Replace(s)
	return strings.Map(func(r rune) rune {
		if r == '\t' {
			return ' '
		}
		if r < 0x20 || r == 0x7f {
			return '\uFFFD'
		}
		return r
	}, s)
}

// logAsk appends one settled ask to the Q&A log.
func (c *Channel) logAsk(a Ask) {
	if c.logPath == "" {
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "- **Q**(%s) %s\n", a.ID, logValue(a.Question))
	if len(a.Options) > 0 {
		opts := make([]string, len(a.Options))
		for i, o := range a.Options {
			// " / " separates the options: one holding it would read as two.
			opts[i] = strings.ReplaceAll(logValue(o), " / ", " ∕ ")
		}
		fmt.Fprintf(&b, "  - %s%s\n", c.Texts().LogOptions, strings.Join(opts, " / "))
	}
	fmt.Fprintf(&b, "  - **A**[%s] %s\n", a.State, logValue(a.Answer))
	c.log(b.String())
}

// logMail appends one delivered mail to the Q&A log.
func (c *Channel) logMail(m Mail) {
	if c.logPath == "" {
		return
	}
	c.log(fmt.Sprintf("\n- **%s**(%s) %s\n", c.Texts().LogMail, m.ID, logValue(m.Text)))
}

func (c *Channel) log(s string) {
	var err error
	if c.logRecord != "" {
		err = c.appendRecorded(s)
	} else {
		err = c.appendFile(c.logPath, c.Texts().LogHeader, s, "")
	}
	if err != nil {
		// The log is an archive; losing a line must not stop the run.
		slog.Warn("human: could not append to the Q&A log", "path", c.logPath, "err", err)
	}
}

// appendRecorded adds s to flower's own copy of the log and writes the
// record and the log file whole from it: an entry a tool slipped into
// either does not survive flower's next entry.
func (c *Channel) appendRecorded(s string) error {
	c.fileMu.Lock()
	defer c.fileMu.Unlock()
	kept, err := c.keptLog()
	if err != nil {
		return err
	}
	if len(kept) == 0 {
		s = c.Texts().LogHeader + s
	}
	c.logKept = append(kept, s...)
	return c.writeKeptLog()
}

// keptLog is the log as flower last wrote it: the copy this process holds,
// else the record on disk (absent: empty). c.fileMu must be held.
func (c *Channel) keptLog() ([]byte, error) {
	if c.logKept != nil {
		return c.logKept, nil
	}
	rec, err := os.ReadFile(c.logRecord)
	if errors.Is(err, fs.ErrNotExist) {
		return []byte{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", c.logRecord, err)
	}
	return rec, nil
}

// writeKeptLog writes the record (0600, in a 0700 folder) and the log file
// from the copy this process holds; an empty copy is an empty record and
// no log file. c.fileMu must be held.
func (c *Channel) writeKeptLog() error {
	if err := os.MkdirAll(filepath.Dir(c.logRecord), 0o700); err != nil {
		return fmt.Errorf("create the folder of %s: %w", c.logRecord, err)
	}
	if err := atomicfile.Write(c.logRecord, c.logKept, 0o600); err != nil {
		return err
	}
	if len(c.logKept) == 0 {
		if err := os.Remove(c.logPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove %s: %w", c.logPath, err)
		}
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(c.logPath), 0o755); err != nil {
		return fmt.Errorf("create the folder of %s: %w", c.logPath, err)
	}
	return atomicfile.Write(c.logPath, c.logKept, 0o644)
}

// KeepLogRecord takes flower's own copy of the Q&A log (WithLogRecord)
// into this process: the record on disk, or, when there is none yet, the
// log file as it is (a new run's is empty; a run directory of a flower
// that kept no record has its log adopted). A run calls it before any
// tool runs; from then on the copy in memory is the truth, so a tool that
// rewrites or removes the record as well as the log changes nothing.
func (c *Channel) KeepLogRecord() error {
	if c.logRecord == "" || c.logPath == "" {
		return nil
	}
	c.fileMu.Lock()
	defer c.fileMu.Unlock()
	rec, err := os.ReadFile(c.logRecord)
	switch {
	case err == nil:
		c.logKept = rec
		c.numberAfter(rec)
		return nil
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("human: read the Q&A log's copy %s: %w", c.logRecord, err)
	}
	now, err := os.ReadFile(c.logPath)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("human: read the Q&A log %s: %w", c.logPath, err)
	}
	c.logKept = append([]byte{}, now...)
	c.numberAfter(now)
	if err := c.writeKeptLog(); err != nil {
		return fmt.Errorf("human: the Q&A log's copy: %w", err)
	}
	return nil
}

// CheckLog compares the Q&A log file and the record with flower's own
// copy (KeepLogRecord, and every entry since) and, when either differs,
// writes both back from it and reports true: something other than this
// channel wrote them (a tool's Bash, since the tools' edits are refused),
// and what it wrote is not the person's. Without a record (or a log path)
// it does nothing; before KeepLogRecord it takes the record as the copy.
func (c *Channel) CheckLog() (bool, error) {
	if c.logRecord == "" || c.logPath == "" {
		return false, nil
	}
	c.fileMu.Lock()
	defer c.fileMu.Unlock()
	kept, err := c.keptLog()
	if err != nil {
		return false, fmt.Errorf("human: %w", err)
	}
	c.logKept = kept
	changed := false
	for _, path := range []string{c.logPath, c.logRecord} {
		now, err := os.ReadFile(path)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return false, fmt.Errorf("human: read %s: %w", path, err)
		}
		// An absent log file is an empty one; an absent record is not.
		if !bytes.Equal(now, kept) || (path == c.logRecord && err != nil) {
			changed = true
		}
	}
	if !changed {
		return false, nil
	}
	if err := c.writeKeptLog(); err != nil {
		return true, fmt.Errorf("human: the Q&A log %s was changed and could not be put back: %w", c.logPath, err)
	}
	return true, nil
}

// Amendments returns the blocks this channel appended to the amend file,
// each exactly as written: anything else found added to the file came
// from someone other than the person's channel.
func (c *Channel) Amendments() []string {
	c.fileMu.Lock()
	defer c.fileMu.Unlock()
	return append([]string(nil), c.amended...)
}

// errPresent says appendFile found the text it was told to look for.
var errPresent = errors.New("already in the file")

// appendFile appends s to path, creating it and its parents; a new file
// gets header first. With unless set, an existing file that contains
// unless is left alone (errPresent); the check and the write are one step
// for this channel's writers. The file is created exclusively, so of two writers
// (goroutines or processes) only one writes the header; each append is one
// O_APPEND write, so lines never interleave.
func (c *Channel) appendFile(path, header, s, unless string) error {
	c.fileMu.Lock()
	defer c.fileMu.Unlock()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("create the folder of %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|os.O_EXCL, 0o644)
	if err == nil {
		s = header + s
	} else if errors.Is(err, fs.ErrExist) {
		if unless != "" {
			old, rerr := os.ReadFile(path)
			if rerr != nil {
				return fmt.Errorf("read %s: %w", path, rerr)
			}
			if strings.Contains(string(old), unless) {
				return errPresent
			}
		}
		f, err = os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	}
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	_, werr := f.WriteString(s)
	if werr == nil {
		// Synced before the caller shows a receipt: an answer or an
		// amendment a crash could undo would make the receipt a lie.
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return fmt.Errorf("append to %s: %w", path, werr)
	}
	return nil
}

// loggedID is an id as the Q&A log writes it: "(q3)" after a question's
// mark, "(m4)" after a mail's.
var loggedID = regexp.MustCompile(`(?m)^- \*\*[^*\n]*\*\*\(([qm])([1-9][0-9]{0,8})\)`)

// numberAfter makes this channel number its asks and mail after every id
// in log, an earlier process's Q&A log of the same run: a run continued by
// another process (woken, or taken over by another worker) never gives a
// new question the id of one already asked, so a reply that names a
// question means that question alone.
func (c *Channel) numberAfter(log []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range loggedID.FindAllSubmatch(log, -1) {
		if n, err := strconv.Atoi(string(m[2])); err == nil && n > c.seq {
			c.seq = n
		}
	}
}
