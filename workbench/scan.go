package workbench

import (
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Entry is one file of a workbench folder.
type Entry struct {
	// Path is the file's path as shown to the model (see Workbench.Show).
	Path string
	// Desc is the file's one-line description, "" when it has none.
	Desc string
	// Size is the file's size in bytes.
	Size int64
}

// Scan lists the regular files below dir, recursively, in lexical order.
// Files and folders whose name starts with a dot are skipped, and so is
// whatever cannot be read; a missing dir gives an empty list.
func (w *Workbench) Scan(dir string) []Entry {
	var out []Entry
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if d != nil && d.IsDir() && p != dir {
				return fs.SkipDir
			}
			return nil
		}
		if p != dir && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		info, err := os.Stat(p) // follows a symbolic link to a file
		if err != nil || !info.Mode().IsRegular() {
			return nil
		}
		out = append(out, Entry{Path: w.Show(p), Desc: Describe(p), Size: info.Size()})
		return nil
	})
	return out
}

// descLines is how many lines at the head of a file Describe reads.
const descLines = 8

// maxDesc is the longest description, in characters.
const maxDesc = 100

var descLine = regexp.MustCompile(`(?i)^\s*(?:#|//|--)\s*desc\s*[:：]\s*(.+)$`)

// Describe returns a file's one-line description: a "# desc: …" line
// ("// desc:" and "-- desc:" too) among its first 8 lines, else the first
// comment line of more than 3 characters (not a "#!" line), else the first
// line of a docstring; "" when there is none or the file cannot be read. It
// is cut at 100 characters.
func Describe(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	head := headLines(f, descLines)
	for _, line := range head {
		if m := descLine.FindStringSubmatch(line); m != nil {
			return cut(strings.TrimSpace(m[1]))
		}
	}
	for i, line := range head {
		s := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(s, "#!"):
			// A shebang says how to run the file, not what it does.
		case (strings.HasPrefix(s, "#") || strings.HasPrefix(s, "//") || strings.HasPrefix(s, "--")) && utf8.RuneCountInString(s) > 3:
			if d := strings.TrimSpace(strings.TrimLeft(s, "#/- ")); d != "" {
				return cut(d)
			}
		case strings.HasPrefix(s, `"""`) || strings.HasPrefix(s, "'''"):
			if d := strings.Trim(s, `"' `); d != "" {
				return cut(d)
			}
			// The docstring opens on a line of its own: take the next one.
			for _, next := range head[i+1:] {
				if d := strings.Trim(strings.TrimSpace(next), `"' `); d != "" {
					return cut(d)
				}
			}
			return ""
		}
	}
	return ""
}

// headLines returns at most n lines from the first 64 KiB of r.
func headLines(r io.Reader, n int) []string {
	data, err := io.ReadAll(io.LimitReader(r, 64<<10))
	if err != nil && len(data) == 0 {
		return nil
	}
	text := strings.ToValidUTF8(string(data), "\uFFFD")
	lines := strings.SplitN(text, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	return lines
}

// cut shortens s to maxDesc characters.
func cut(s string) string {
	if utf8.RuneCountInString(s) <= maxDesc {
		return s
	}
	return string([]rune(s)[:maxDesc])
}
