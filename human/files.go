package human

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"
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
		label = c.texts.AmendLabel
	}
	stamp := time.Now().Format("15:04:05")
	block := "\n## " + label + "(" + stamp + ")\n" + text + "\n"
	if c.english {
		block = "\n## " + label + " (" + stamp + ")\n" + text + "\n"
	}
	unless := ""
	if once {
		unless = text
	}
	if err := c.appendFile(c.amendPath, c.texts.AmendHeader, block, unless); err != nil {
		if errors.Is(err, errPresent) {
			return false
		}
		slog.Warn("human: could not amend the brief", "path", c.amendPath, "err", err)
		return false
	}
	return true
}

// logAsk appends one settled ask to the Q&A log.
func (c *Channel) logAsk(a Ask) {
	if c.logPath == "" {
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "- **Q**(%s) %s\n", a.ID, a.Question)
	if len(a.Options) > 0 {
		fmt.Fprintf(&b, "  - %s%s\n", c.texts.LogOptions, strings.Join(a.Options, " / "))
	}
	fmt.Fprintf(&b, "  - **A**[%s] %s\n", a.State, a.Answer)
	c.log(b.String())
}

// logMail appends one delivered mail to the Q&A log.
func (c *Channel) logMail(m Mail) {
	if c.logPath == "" {
		return
	}
	c.log(fmt.Sprintf("\n- **%s**(%s) %s\n", c.texts.LogMail, m.ID, m.Text))
}

func (c *Channel) log(s string) {
	if err := c.appendFile(c.logPath, c.texts.LogHeader, s, ""); err != nil {
		// The log is an archive; losing a line must not stop the run.
		slog.Warn("human: could not append to the Q&A log", "path", c.logPath, "err", err)
	}
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
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return fmt.Errorf("append to %s: %w", path, werr)
	}
	return nil
}
