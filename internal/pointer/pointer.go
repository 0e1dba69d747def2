// Package pointer finds the files that a tool result standing in for an
// output names: the spill guard's pointers, the trimmer's stubs and the
// Claude Code CLI's <persisted-output> blocks. It is the one reader of those
// shapes, shared by the expiry that must keep naming the file and by the
// read-back check that follows every pointer.
package pointer

import (
	"strings"
	"unicode"
)

// PersistedTag opens the CLI's stand-in for an output it saved to a file.
const PersistedTag = "<persisted-output>"

// Is reports whether text has the shape of a pointer: the guard's and the
// trimmer's begin with '[', the CLI's with PersistedTag.
func Is(text string) bool {
	t := strings.TrimSpace(text)
	return strings.HasPrefix(t, "[") || strings.HasPrefix(t, PersistedTag)
}

// Persisted reports whether text is the CLI's <persisted-output> block.
func Persisted(text string) bool {
	return strings.HasPrefix(strings.TrimSpace(text), PersistedTag)
}

// Files lists, in order and once each, the .txt files a pointer-shaped text
// names (nil for any other text): every word of its head holding a '/' and
// ending in ".txt", with the punctuation around it removed. Paths are
// returned as written: a relative one is relative to the workspace. The
// preview after the head is the output's own text, whose words name no
// file of the pointer's (a grep output's "src/a.txt:1:" lines, say).
func Files(text string) []string {
	if !Is(text) {
		return nil
	}
	var out []string
	seen := map[string]bool{}
	for _, word := range strings.FieldsFunc(head(text), unicode.IsSpace) {
		p := pathIn(word)
		if p != "" && !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

// head is the part of a pointer that names its files: the guard's and the
// trimmer's first line, the CLI's block up to its first blank line (the
// preview follows it).
func head(text string) string {
	t := strings.TrimSpace(text)
	if Persisted(t) {
		h, _, _ := strings.Cut(t, "\n\n")
		return h
	}
	h, _, _ := strings.Cut(t, "\n")
	return h
}

// pathIn is the path in word: from its first character that can begin a
// path to the first ".txt" that ends one, or "".
func pathIn(word string) string {
	start := strings.IndexFunc(word, func(r rune) bool {
		return r == '/' || r == '.' || r == '~' || r == '_' || r == '-' || (r < 128 && (unicode.IsLetter(r) || unicode.IsDigit(r)))
	})
	if start < 0 {
		return ""
	}
	w := word[start:]
	for i := 0; ; {
		j := strings.Index(w[i:], ".txt")
		if j < 0 {
			return ""
		}
		end := i + j + len(".txt")
		if end == len(w) || !isPathRune(rune(w[end])) {
			p := w[:end]
			if !strings.Contains(p, "/") {
				return ""
			}
			return p
		}
		i = end
	}
}

func isPathRune(r rune) bool {
	return r < 128 && (unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' || r == '-' || r == '.' || r == '/')
}
