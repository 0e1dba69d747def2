package doc

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// section describes one section of a document: the field it fills and the
// headings that introduce it.
type section struct {
	key     string   // field identifier, e.g. "goal"
	zh, en  string   // canonical names, written by ToMarkdown
	ko      string   // Korean name, accepted when parsing
	aliases []string // other spellings models use, accepted when parsing
}

// alias is one accepted heading spelling.
type alias struct {
	name  string
	key   string
	latin bool // matched case-insensitively and only as a whole word
	// han says the name is written in Chinese characters. Chinese puts no
	// space between words, so such a name followed by a blank and text
	// ("边界 不做X") is a heading with its body on the line, as the seed
	// allows; in English or Korean that is how prose reads.
	han bool
}

// layout is one document's sections with their headings compiled into a
// table sorted longest first: otherwise "未知" would swallow "未知与假设".
type layout struct {
	sections []section
	heads    []alias
}

func newLayout(sections ...section) *layout {
	l := &layout{sections: sections}
	for _, s := range sections {
		for _, name := range append([]string{s.zh, s.en, s.ko}, s.aliases...) {
			if name != "" {
				l.heads = append(l.heads, alias{name: name, key: s.key, latin: isLatin(name), han: isHan(name)})
			}
		}
	}
	slices.SortStableFunc(l.heads, func(a, b alias) int {
		if len(a.name) != len(b.name) {
			return len(b.name) - len(a.name)
		}
		return strings.Compare(a.name, b.name)
	})
	return l
}

// name returns the canonical heading of key in lang.
func (l *layout) name(key string, lang Lang) string {
	for _, s := range l.sections {
		if s.key == key {
			return lang.pick(s.zh, s.en)
		}
	}
	return key
}

// parsed is what the section parser found in one text.
type parsed struct {
	bodies   map[string]string // first non-empty body of each section
	seen     map[string]bool   // sections that had a heading, even an empty one
	preamble []string          // lines before the first heading
}

// parse splits text into sections. Fenced code is removed first because
// models paste whole files into their replies, and a heading inside pasted
// code must not start a section; the first section with content wins when a
// heading repeats.
func (l *layout) parse(text string) parsed {
	p := parsed{bodies: map[string]string{}, seen: map[string]bool{}}
	lines := strings.Split(stripFences(normalize(text)), "\n")
	key, start := "", -1
	var first string // the body text on the heading's own line
	flush := func(end int) {
		if start < 0 {
			return
		}
		body := clean(first + "\n" + strings.Join(lines[start:end], "\n"))
		if _, done := p.bodies[key]; !done && body != "" && !isPlaceholder(body) {
			p.bodies[key] = body
		}
	}
	for i, line := range lines {
		k, rest, ok := l.heading(line)
		if !ok {
			if start < 0 {
				p.preamble = append(p.preamble, line)
			}
			continue
		}
		flush(i)
		// "## 目标 ## 边界 X": the rest of the line is itself a heading, so
		// the first one is empty. Each round shortens rest, so this ends.
		for {
			p.seen[k] = true
			next, more, again := l.heading(rest)
			if !again {
				break
			}
			k, rest = next, more
		}
		key, first, start = k, rest, i+1
	}
	flush(len(lines))
	return p
}

// heading reports whether line is a heading of this layout, and returns its
// section key and any body text on the same line. Accepted forms: "## 目标",
// "**目标**", "目标:", "目标：", "3. 边界", "3、边界", "3) 边界", "1. **Goal**",
// each optionally followed by body text. A Chinese name, bare or numbered,
// takes body text after a blank without a colon ("3、边界 不做X", "目标 做X").
// A name running straight into text ("下一步是跑测试"), or a Latin or Korean
// name followed by text without a colon ("Next step is…"), is prose, not a
// heading: the original took it for one and split sections in the middle
// of a body.
func (l *layout) heading(line string) (key, rest string, ok bool) {
	s := trimBlank(line)
	hashes := 0
	for hashes < len(s) && s[hashes] == '#' {
		hashes++
	}
	if hashes > 6 {
		return "", "", false
	}
	s = trimBlank(s[hashes:])
	if s == "" {
		return "", "", false
	}
	emphasis := false
	s, emphasis = cutEmphasis(s)
	if n := listNumber(s); n > 0 {
		s = trimBlank(s[n:])
		if !emphasis {
			s, emphasis = cutEmphasis(s)
		}
	}
	for _, a := range l.heads {
		after, found := a.match(s)
		if !found {
			continue
		}
		t, colon := cutColon(after)
		closed := false
		if emphasis {
			if u, ok := strings.CutPrefix(t, "**"); ok {
				t, closed = trimBlank(u), true
			} else if u, ok := strings.CutPrefix(t, "__"); ok {
				t, closed = trimBlank(u), true
			}
		}
		if !colon {
			t, colon = cutColon(t)
		}
		// A closing "##" sequence is decoration. TrimLeft, not Trim: it
		// stops at the first other character, which keeps a line of many
		// nested headings linear.
		if hashes > 0 && strings.TrimLeft(t, "# \t") == "" {
			t = ""
		}
		if colon || t == "" || hashes > 0 || closed {
			return a.key, t, true
		}
		if a.han && after != "" && unicode.IsSpace([]rune(after)[0]) {
			return a.key, t, true
		}
		// The longest alias that fits decides; a shorter one would only
		// read the same prose line as a different heading.
		return "", "", false
	}
	return "", "", false
}

// match reports whether s starts with the alias and returns what follows.
// A Latin alias must end at a word boundary, so "Goals are…" is not "Goal".
func (a alias) match(s string) (string, bool) {
	if len(s) < len(a.name) {
		return "", false
	}
	head := s[:len(a.name)]
	if a.latin {
		if !strings.EqualFold(head, a.name) {
			return "", false
		}
		if r, _ := utf8.DecodeRuneInString(s[len(a.name):]); len(s) > len(a.name) && isWordRune(r) {
			return "", false
		}
	} else if head != a.name {
		return "", false
	}
	return s[len(a.name):], true
}

// trimBlank removes leading white space of any kind: "\u3000目标:" is a
// heading, and a body's first line, which clean trims the same way, must be
// judged alike when the document is read back.
func trimBlank(s string) string {
	return strings.TrimLeftFunc(s, unicode.IsSpace)
}

// cutEmphasis removes an opening "**" or "__".
func cutEmphasis(s string) (string, bool) {
	if strings.HasPrefix(s, "**") || strings.HasPrefix(s, "__") {
		return trimBlank(s[2:]), true
	}
	return s, false
}

// cutColon removes blanks and one ASCII or full-width colon.
func cutColon(s string) (string, bool) {
	s = trimBlank(s)
	for _, c := range []string{":", "："} {
		if t, ok := strings.CutPrefix(s, c); ok {
			return trimBlank(t), true
		}
	}
	return s, false
}

// listNumber returns the length of a leading "3." "3、" "3)" or "3）", or 0.
func listNumber(s string) int {
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	if n == 0 || n == len(s) {
		return 0
	}
	for _, m := range []string{".", "、", ")", "）"} {
		if strings.HasPrefix(s[n:], m) {
			return n + len(m)
		}
	}
	return 0
}

// normalize drops a byte-order mark and turns CRLF and lone CR into LF.
func normalize(text string) string {
	text = strings.TrimPrefix(text, "\ufeff")
	if strings.IndexByte(text, '\r') < 0 {
		return text
	}
	return strings.ReplaceAll(strings.ReplaceAll(text, "\r\n", "\n"), "\r", "\n")
}

// stripFences replaces each closed ``` or ~~~ block with a newline and cuts
// the text at an unclosed one: a fence left open means the reply was cut off
// mid-paste, and whatever follows is not the model's prose (the original
// checked only backticks; both kinds are cut here). One left-to-right scan, so
// the cost is linear in the text.
func stripFences(text string) string {
	var b strings.Builder
	i := 0
	for {
		j := fenceAt(text, i)
		if j < 0 {
			b.WriteString(text[i:])
			return b.String()
		}
		b.WriteString(text[i:j])
		end := strings.Index(text[j+3:], text[j:j+3])
		if end < 0 {
			return b.String()
		}
		b.WriteByte('\n')
		i = j + 3 + end + 3
	}
}

// fenceAt returns the index of the first "```" or "~~~" at or after i, or -1.
func fenceAt(text string, i int) int {
	for i < len(text) {
		k := strings.IndexAny(text[i:], "`~")
		if k < 0 {
			return -1
		}
		j := i + k
		if strings.HasPrefix(text[j:], "```") || strings.HasPrefix(text[j:], "~~~") {
			return j
		}
		i = j + 1
	}
	return -1
}

// clean tidies a section body: trailing blanks and horizontal rules go (they
// are layout, not content), runs of blank lines shrink to one, and the body
// is trimmed.
func clean(body string) string {
	lines := strings.Split(body, "\n")
	out := lines[:0]
	blank := 0
	for _, ln := range lines {
		ln = strings.TrimRightFunc(ln, unicode.IsSpace)
		if isRule(ln) {
			continue
		}
		if ln == "" {
			blank++
			if blank > 1 {
				continue
			}
		} else {
			blank = 0
		}
		out = append(out, ln)
	}
	return strings.TrimSpace(strings.Join(out, "\n"))
}

// isRule reports whether line is a markdown rule: ---, *** or ___ (3 or more).
func isRule(line string) bool {
	s := strings.Trim(line, " \t")
	if len(s) < 3 || (s[0] != '-' && s[0] != '*' && s[0] != '_') {
		return false
	}
	return strings.Count(s, s[:1]) == len(s)
}

// placeholders are what ToMarkdown writes for an empty section. A human who
// copies one back, or a document read back from disk, must still count the
// section as missing.
var placeholders = []string{
	briefPlaceholderZh, briefPlaceholderEn, emptyZh, emptyEn,
	"（未填）", "（空）",
}

const (
	briefPlaceholderZh = "(未填)"
	briefPlaceholderEn = "(not filled in)"
	emptyZh            = "(空)"
	emptyEn            = "(empty)"
)

func isPlaceholder(body string) bool {
	for _, p := range placeholders {
		if strings.EqualFold(body, p) {
			return true
		}
	}
	return false
}

// bullets splits a list body into items, one a line, without list markers
// ("- " "* " "+ " "1. " "1、" "1) " "1）"). A "-*+" marker needs a blank
// after it and "1." must not be followed by a digit, so "**bold**" and
// "1.5 秒" keep their text.
func bullets(body string) []string {
	var items []string
	for _, ln := range strings.Split(body, "\n") {
		s := trimBlank(ln)
		switch {
		case len(s) > 0 && strings.IndexByte("-*+", s[0]) >= 0 && (len(s) == 1 || s[1] == ' ' || s[1] == '\t'):
			s = s[1:]
		default:
			if n := listNumber(s); n > 0 && !(s[n-1] == '.' && n < len(s) && s[n] >= '0' && s[n] <= '9') {
				s = s[n:]
			}
		}
		if s = strings.TrimSpace(s); s != "" {
			items = append(items, s)
		}
	}
	return items
}

// isLatin reports whether a word is written in ASCII letters, which are
// matched case-insensitively and on word boundaries; other scripts match as
// plain substrings because Chinese has no spaces between words.
func isLatin(word string) bool {
	for i := 0; i < len(word); i++ {
		if c := word[i] | 0x20; c >= 'a' && c <= 'z' {
			return true
		}
	}
	return false
}

// isHan reports whether a word is written in Chinese characters.
func isHan(word string) bool {
	for _, r := range word {
		if !unicode.Is(unicode.Han, r) {
			return false
		}
	}
	return word != ""
}

// isWordRune reports whether r continues a word. The underscore does not:
// "__Goal__" and "__achieved__" are markdown emphasis around a word.
func isWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r)
}

// oneLine makes s safe for a single markdown line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
