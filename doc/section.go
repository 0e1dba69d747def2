package doc

import (
	"regexp"
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
			return lang.Pick(s.zh, s.en)
		}
	}
	return key
}

// parsed is what the section parser found in one text.
type parsed struct {
	// bodies holds each section's text: the bodies of every heading that
	// names it, in order, joined by a blank line ("Unknowns: …" then
	// "Assumptions: …" keeps both).
	bodies map[string]string
	// each holds the bodies one by one, so a reader can tell two
	// conclusions from one.
	each     map[string][]string
	seen     map[string]bool // sections that had a heading, even an empty one
	preamble []string        // lines before the first heading
}

// parse splits text into sections. Fenced code stays in the body it sits in
// (a command in a code block is content) but is never read for headings,
// because models paste whole files into their replies; a fence left open
// cuts the text there (see fenceMask). A markdown heading that names no
// section of this layout ends the section it follows, unless it is deeper
// than that section's own heading (a subsection): "## Environment" after
// "## Checklist" is not a checklist item. A repeated heading appends.
func (l *layout) parse(text string) parsed {
	p := parsed{bodies: map[string]string{}, each: map[string][]string{}, seen: map[string]bool{}}
	lines := strings.Split(normalize(text), "\n")
	fenced, cut := fenceMask(lines)
	lines, fenced = lines[:cut], fenced[:cut]
	key, start, level := "", -1, 0
	var first string // the body text on the heading's own line
	flush := func(end int) {
		if start < 0 || key == "" {
			return
		}
		body := clean(first + "\n" + strings.Join(lines[start:end], "\n"))
		if body == "" || isPlaceholder(body) {
			return
		}
		p.each[key] = append(p.each[key], body)
		if prev := p.bodies[key]; prev != "" {
			body = prev + "\n\n" + body
		}
		p.bodies[key] = body
	}
	for i, line := range lines {
		if fenced[i] {
			if start < 0 {
				p.preamble = append(p.preamble, line)
			}
			continue
		}
		k, rest, ok := l.heading(line)
		if !ok {
			if key != "" && amendBlock(line) {
				continue // words a person added, kept in the section above
			}
			if n := headingLevel(line); n > 0 && start >= 0 && (level == 0 || n <= level) {
				// A heading of no section ends the one before it.
				flush(i)
				key, first, start, level = "", "", i+1, n
				continue
			}
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
		key, first, start, level = k, rest, i+1, headingLevel(line)
		if fenceRun(strings.TrimSpace(rest)) != "" {
			// A fence opened on the heading's line is no fence (fences
			// open at the start of a line) and would be one once the body
			// is written on lines of its own.
			first = ""
		}
		if n := headingLevel(rest); n > 0 {
			// "## 目标 # Notes": the rest is a heading of no section,
			// which ends this one at once.
			key, first, level = "", "", n
		}
	}
	flush(len(lines))
	return p
}

// amendStamp ends the heading of a block the human channel appends to a
// document: "## <label>(HH:MM:SS)" (spec-supplement), or with a space
// before the stamp in English. Whatever the label (a channel's texts may
// change it), such a block is a person's words added to the section above.
var amendStamp = regexp.MustCompile(`^##[ \t]+\S.*\(\d{2}:\d{2}:\d{2}\)[ \t]*$`)

// amendBlock reports whether line opens a block the human channel appended.
func amendBlock(line string) bool { return amendStamp.MatchString(strings.TrimSpace(line)) }

// headingLevel is the level of a markdown heading line ("## x" is 2), or 0
// when line is not one.
func headingLevel(line string) int {
	s := trimBlank(line)
	n := 0
	for n < len(s) && s[n] == '#' {
		n++
	}
	if n == 0 || n > 6 || n == len(s) || (s[n] != ' ' && s[n] != '\t') || strings.TrimSpace(s[n:]) == "" {
		return 0
	}
	return n
}

// The kinds of line fenceKinds tells apart.
const (
	proseLine int8 = iota
	fenceOpen
	fenceBody
	fenceClose
)

// fenceKinds tells, line by line, prose from the lines of a fenced code
// block (its opening line, its body, its closing line), and returns where
// the text ends: at the opening line of a fence that is never closed,
// because a fence left open means the reply was cut off mid-paste and
// whatever follows is not the model's prose. A fence opens on a line that
// starts (after blanks) with three or more backticks or tildes, and closes
// on a line holding only at least as many of the same.
func fenceKinds(lines []string) (kinds []int8, end int) {
	kinds = make([]int8, len(lines))
	open, marker := -1, ""
	for i, ln := range lines {
		s := strings.TrimSpace(ln)
		if open < 0 {
			if m := fenceRun(s); m != "" {
				open, marker = i, m
				kinds[i] = fenceOpen
			}
			continue
		}
		kinds[i] = fenceBody
		if m := fenceRun(s); m != "" && m[0] == marker[0] && len(m) >= len(marker) && m == s {
			kinds[i], open = fenceClose, -1
		}
	}
	if open >= 0 {
		return kinds, open
	}
	return kinds, len(lines)
}

// fenceMask marks the lines that belong to a fenced code block, fence
// lines included; end is fenceKinds'.
func fenceMask(lines []string) (fenced []bool, end int) {
	kinds, end := fenceKinds(lines)
	fenced = make([]bool, len(lines))
	for i, k := range kinds {
		fenced[i] = k != proseLine
	}
	return fenced, end
}

// fenceRun returns the leading run of backticks or tildes of s when it is
// three or more long, else "".
func fenceRun(s string) string {
	if s == "" || (s[0] != '`' && s[0] != '~') {
		return ""
	}
	n := 0
	for n < len(s) && s[n] == s[0] {
		n++
	}
	if n < 3 {
		return ""
	}
	return s[:n]
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

// stripFences removes fenced code blocks (fence lines included) and cuts
// the text at a fence left open, as parse does: what is left is the prose.
func stripFences(text string) string {
	lines := strings.Split(text, "\n")
	fenced, end := fenceMask(lines)
	out := make([]string, 0, end)
	for i := 0; i < end; i++ {
		if !fenced[i] {
			out = append(out, lines[i])
		}
	}
	return strings.Join(out, "\n")
}

// clean tidies a section body: trailing blanks and horizontal rules go (they
// are layout, not content), runs of blank lines shrink to one, and the body
// is trimmed. Inside fenced code every line is content and stays.
func clean(body string) string {
	lines := strings.Split(body, "\n")
	fenced, _ := fenceMask(lines)
	out := make([]string, 0, len(lines))
	blank := 0
	for i, ln := range lines {
		ln = strings.TrimRightFunc(ln, unicode.IsSpace)
		if fenced[i] {
			blank = 0
			out = append(out, ln)
			continue
		}
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

// bullets reads a list body as a person would, one item per entry,
// without list markers ("- " "* " "+ " "1. " "1、" "1) " "1）"). A "-*+"
// marker needs a blank after it and "1." must not be followed by a digit,
// so "**bold**" and "1.5 秒" keep their text. When the body has list
// markers, a line that continues an item (no blank line before it, or
// indented under it) joins that item, a nested item joins its parent after
// "; ", and an unindented paragraph after a blank line is prose around the
// list, not an item. Without markers every line is an item. A fenced code
// block under an item joins it, each line as `code`; one outside any item
// gives one item per line. A table gives one item per data row, its cells
// joined by " — " (a cell that only numbers the row left out); its header
// and separator rows are not items. Markdown headings are never items. A
// lone "none" in any of its spellings is no item at all (see isNone).
func bullets(body string) []string {
	lines := strings.Split(body, "\n")
	kinds, end := fenceKinds(lines)
	lines = lines[:end]
	marked, minIndent := false, -1
	for i, ln := range lines {
		if _, ok := listItem(ln); ok && kinds[i] == proseLine {
			marked = true
			if n := indentOf(ln); minIndent < 0 || n < minIndent {
				minIndent = n
			}
		}
	}
	var items []string
	cur := -1      // the item that following lines may join, -1 for none
	blank := false // a blank line since the last content line
	tableRow := -1 // the item the previous line added as a table row
	for i, ln := range lines {
		s := strings.TrimSpace(ln)
		prevRow := tableRow
		tableRow = -1
		switch {
		case kinds[i] == fenceOpen || kinds[i] == fenceClose:
			blank = false
		case kinds[i] == fenceBody:
			if s == "" {
				continue
			}
			if cur >= 0 {
				items[cur] += joiner(items[cur]) + "`" + s + "`"
			} else {
				items = append(items, s)
			}
		case s == "":
			blank = true
		case headingLevel(ln) > 0:
			cur, blank = -1, false
		case strings.HasPrefix(s, "|"):
			if isTableRule(s) {
				if prevRow >= 0 && prevRow == len(items)-1 {
					items = items[:prevRow] // the header row names columns
				}
				cur, blank = -1, false
				continue
			}
			if row := tableCells(s); row != "" {
				items = append(items, row)
				tableRow = len(items) - 1
			}
			cur, blank = -1, false
		default:
			text, isItem := listItem(ln)
			if isItem && text == "" {
				continue // a marker with nothing after it
			}
			switch {
			case !marked:
				items = append(items, s)
				cur = -1
			case isItem && indentOf(ln) > minIndent && cur >= 0:
				items[cur] += joiner(items[cur]) + text
			case isItem:
				items = append(items, text)
				cur = len(items) - 1
			case cur >= 0 && (!blank || indentOf(ln) > minIndent):
				items[cur] += " " + s
			default:
				cur = -1 // prose around the list
			}
			blank = false
		}
	}
	if len(items) == 1 && isNone(items[0]) {
		return nil
	}
	return items
}

// joiner is what separates an item from the code that joins it.
func joiner(item string) string {
	if strings.HasSuffix(item, ":") || strings.HasSuffix(item, "：") {
		return " "
	}
	return "; "
}

// listItem returns a line's text without its list marker, and whether it
// had one.
func listItem(ln string) (string, bool) {
	s := trimBlank(ln)
	if len(s) > 0 && strings.IndexByte("-*+", s[0]) >= 0 && len(s) > 1 && (s[1] == ' ' || s[1] == '\t') {
		if isRule(s) {
			return "", false
		}
		return cutCheckbox(strings.TrimSpace(s[1:])), true
	}
	if n := listNumber(s); n > 0 && !(s[n-1] == '.' && n < len(s) && s[n] >= '0' && s[n] <= '9') {
		return cutCheckbox(strings.TrimSpace(s[n:])), true
	}
	return "", false
}

// cutCheckbox removes a task-list box ("[ ] ", "[x] ") from an item: it
// is layout, and whether a box is ticked is the judge's to decide.
func cutCheckbox(s string) string {
	for _, box := range []string{"[ ] ", "[x] ", "[X] "} {
		if t, ok := strings.CutPrefix(s, box); ok && strings.TrimSpace(t) != "" {
			return strings.TrimSpace(t)
		}
	}
	return s
}

// indentOf counts a line's leading blanks, a tab as four.
func indentOf(ln string) int {
	n := 0
	for _, r := range ln {
		switch r {
		case ' ':
			n++
		case '\t':
			n += 4
		default:
			return n
		}
	}
	return n
}

// isTableRule reports whether s is a table's separator row: |---|:--:|.
func isTableRule(s string) bool {
	return strings.Trim(s, "|-: \t") == "" && strings.Contains(s, "-")
}

// tableCells joins a table row's cells with " — ", leaving out empty cells
// and a cell that only numbers the row.
func tableCells(s string) string {
	var cells []string
	for _, c := range strings.Split(strings.Trim(s, "| \t"), "|") {
		c = strings.TrimSpace(c)
		if c == "" || strings.Trim(c, "0123456789.#") == "" {
			continue
		}
		cells = append(cells, c)
	}
	return strings.Join(cells, " — ")
}

// noneWords are the ways a model writes an empty list.
var noneWords = map[string]bool{
	"none": true, "none yet": true, "nothing": true, "n/a": true, "na": true, "empty": true, "no items": true,
	"无": true, "没有": true, "暂无": true, "空": true, "없음": true, "all passed": true, "全部通过": true,
}

// isNone reports whether an item says the list is empty: "(none)", "None.",
// "_none_", "无", "None — all five passed", "无,全部通过". "None of the
// checks passed" is not: a word after "none" makes it a sentence.
func isNone(item string) bool {
	s := strings.ToLower(strings.TrimSpace(item))
	s = strings.Trim(s, "*_`()（）[]【】 \t")
	for w := range noneWords {
		rest, ok := strings.CutPrefix(s, w)
		if !ok {
			continue
		}
		rest = strings.TrimLeft(rest, "*_`)）] \t")
		if rest == "" {
			return true
		}
		r, _ := utf8.DecodeRuneInString(rest)
		if strings.ContainsRune(".。,，;；:：!！—–-(（", r) {
			return true
		}
	}
	return false
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
