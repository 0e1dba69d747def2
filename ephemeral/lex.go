package ephemeral

import "strings"

// word is one shell word after quote removal, with what the shell may
// still do to it when the command runs.
type word struct {
	text string
	// quoted: some part of it was quoted or escaped.
	quoted bool
	// expands: it holds a $ expansion, which text shows unexpanded: the
	// value the command sees is unknown.
	expands bool
	// splits: it holds an unquoted $ expansion, which the shell may split
	// into several words, any of them an option.
	splits bool
	// globs: it holds an unquoted glob or brace pattern, which the shell
	// may replace with any number of file names.
	globs bool
	// pinned: its first character is literal and neither '-' nor '+', so
	// whatever a glob or a quoted expansion makes of it is no option.
	pinned bool
}

// opaque reports whether the shell may turn w into an option the rules
// never saw: an unquoted $VAR, "$VAR", a leading glob such as * or ?x.
func (w word) opaque() bool {
	return w.splits || ((w.expands || w.globs) && !w.pinned)
}

// uncertain reports whether the command may receive something other than
// exactly w.text as exactly one word.
func (w word) uncertain() bool {
	return w.expands || w.globs
}

// target is what a pending redirection may point to.
type target int

const (
	noTarget    target = iota
	devNull            // after >, >>, >|, &>, &>>
	devNullOrFD        // after >&: also a descriptor (2>&1) or - (close)
)

// segment is one simple command and the operator that ends it: "&&",
// "||", ";", "|", "\n", or "" for the last one.
type segment struct {
	words []word
	sep   string
}

// split cuts a command line into simple commands, each a list of words,
// at &&, ||, ;, | and newlines outside quotes. Safe redirections are
// dropped. It fails on everything outside a glance's grammar: unbalanced
// quotes, ( ) subshells, { } groups, comments, a lone & (background), <
// of any kind, > to anything but /dev/null or a descriptor, and empty
// commands (ls ;; pwd, ls |). One trailing ; is allowed (ls;): it ends
// the last command and starts none.
func split(line string) ([]segment, bool) {
	l := lexer{src: line}
	for l.pos < len(l.src) {
		if !l.step() {
			return nil, false
		}
	}
	if l.trailingSemicolon() {
		return l.segments, true
	}
	if !l.endSegment("") {
		return nil, false
	}
	return l.segments, true
}

// trailingSemicolon reports whether the line ended right after a ; that
// closed a command, with nothing but blanks since.
func (l *lexer) trailingSemicolon() bool {
	n := len(l.segments)
	return n > 0 && l.segments[n-1].sep == ";" && !l.touched && !l.cur.started && l.redirect == noTarget
}

type lexer struct {
	src      string
	pos      int
	segments []segment
	words    []word      // the words of the segment being read
	touched  bool        // the segment being read has words or redirections
	cur      wordBuilder // the word being read
	redirect target      // a redirection waits for its target word
}

func (l *lexer) step() bool {
	c := l.src[l.pos]
	switch c {
	case ' ', '\t':
		l.pos++
		return l.endWord()
	case '\n':
		l.pos++
		if !l.touched && !l.cur.started {
			// A blank line, or a newline after && or |: only whitespace.
			return true
		}
		return l.endSegment("\n")
	case ';':
		l.pos++
		return l.endSegment(";")
	case '|':
		l.pos++
		if l.skipByte('|') {
			return l.endSegment("||")
		}
		return l.endSegment("|")
	case '&':
		return l.ampersand()
	case '>':
		return l.output()
	case '<', '(', ')':
		// Input redirection, here-documents, subshells, extglob patterns.
		return false
	case '\'':
		return l.singleQuoted()
	case '"':
		l.pos++
		return l.doubleQuoted()
	case '\\':
		return l.escaped()
	case '$':
		return l.dollar()
	case '#':
		if !l.cur.started {
			// A comment would hide the rest of the line from the shell
			// but not from these rules; refuse rather than reason about it.
			return false
		}
	case '{':
		return l.brace()
	case '*', '?', '[', '^': // ^ negates a pattern in zsh's extendedglob
		l.cur.add(c, glob)
		l.pos++
		return true
	}
	l.cur.add(c, literal)
	l.pos++
	return true
}

// ampersand reads &&, &> and &>>; a lone & would run a background job.
func (l *lexer) ampersand() bool {
	if !l.endWord() {
		return false
	}
	l.pos++
	switch {
	case l.skipByte('&'):
		return l.endSegment("&&")
	case l.skipByte('>'):
		l.skipByte('>')
		return l.startRedirect(devNull)
	}
	return false
}

// output reads >, >>, >|, >& with an optional descriptor number before it.
func (l *lexer) output() bool {
	if l.cur.isDescriptor() {
		l.cur = wordBuilder{} // 2> : the 2 names a descriptor, not an argument
	}
	if !l.endWord() {
		return false
	}
	l.pos++
	if l.skipByte('&') {
		return l.startRedirect(devNullOrFD)
	}
	if !l.skipByte('>') {
		l.skipByte('|')
	}
	return l.startRedirect(devNull)
}

func (l *lexer) startRedirect(t target) bool {
	if l.redirect != noTarget {
		return false
	}
	l.redirect = t
	l.touched = true
	return true
}

func (l *lexer) singleQuoted() bool {
	body := l.src[l.pos+1:]
	end := strings.IndexByte(body, '\'')
	if end < 0 {
		return false
	}
	l.cur.addQuoted(body[:end])
	l.pos += end + 2
	return true
}

// doubleQuoted reads up to the closing quote; l.pos is past the opening
// one. Backslash escapes only $ ` " \ and newline there.
func (l *lexer) doubleQuoted() bool {
	l.cur.addQuoted("")
	for l.pos < len(l.src) {
		c := l.src[l.pos]
		switch {
		case c == '"':
			l.pos++
			return true
		case c == '\\' && l.pos+1 < len(l.src) && strings.IndexByte("$`\"\\\n", l.src[l.pos+1]) >= 0:
			if next := l.src[l.pos+1]; next != '\n' {
				l.cur.add(next, literal)
			}
			l.pos += 2
		case c == '$' && startsParameter(l.src, l.pos):
			l.cur.add(c, expansion)
			l.pos++
		default:
			l.cur.add(c, literal)
			l.pos++
		}
	}
	return false
}

func (l *lexer) escaped() bool {
	if l.pos+1 >= len(l.src) {
		return false
	}
	next := l.src[l.pos+1]
	l.pos += 2
	if next != '\n' { // backslash-newline joins lines and leaves nothing
		l.cur.addQuoted(l.src[l.pos-1 : l.pos])
	}
	return true
}

// dollar reads an unquoted $: a parameter or a plain dollar sign. ANSI-C
// $'…' and locale $"…" quoting are refused: bash decodes \x2d as '-' in
// the one and may translate the other into any text, so the word the
// command receives is not the word the rules would compare (git reflog
// e$'x'pire runs expire).
func (l *lexer) dollar() bool {
	var next byte
	if l.pos+1 < len(l.src) {
		next = l.src[l.pos+1]
	}
	switch {
	case next == '\'' || next == '"':
		return false
	case startsParameter(l.src, l.pos):
		l.cur.add('$', expansion)
		l.cur.w.splits = true
	default:
		l.cur.add('$', literal)
	}
	l.pos++
	return true
}

// brace admits git's reflog syntax (stash@{0}, HEAD@{1.day.ago}) and
// nothing else: a brace expansion like {-i,x} spells options unseen, and a
// brace at a word's start opens a command group.
func (l *lexer) brace() bool {
	if !strings.HasSuffix(l.cur.text.String(), "@") {
		return false
	}
	l.cur.add('{', glob)
	l.pos++
	return true
}

func (l *lexer) skipByte(c byte) bool {
	if l.pos < len(l.src) && l.src[l.pos] == c {
		l.pos++
		return true
	}
	return false
}

// endWord finishes the word being read: it becomes an argument, or the
// target a pending redirection must accept.
func (l *lexer) endWord() bool {
	if !l.cur.started {
		return true
	}
	w := l.cur.word()
	l.cur = wordBuilder{}
	l.touched = true
	if l.redirect == noTarget {
		l.words = append(l.words, w)
		return true
	}
	ok := isSafeTarget(w, l.redirect)
	l.redirect = noTarget
	return ok
}

func (l *lexer) endSegment(sep string) bool {
	if !l.endWord() || l.redirect != noTarget || len(l.words) == 0 {
		return false
	}
	l.segments = append(l.segments, segment{words: l.words, sep: sep})
	l.words = nil
	l.touched = false
	return true
}

// isSafeTarget accepts /dev/null, and after >& a descriptor (1, 2-) or -
// (close). It must be written plainly: no quotes, no expansion.
func isSafeTarget(w word, t target) bool {
	if w.quoted || w.uncertain() {
		return false
	}
	if w.text == "/dev/null" {
		return true
	}
	if t != devNullOrFD {
		return false
	}
	digits := strings.TrimSuffix(w.text, "-")
	return digits == "" || isDigits(digits)
}

// startsParameter reports whether the $ at s[i] may begin an expansion.
// Bash expands $NAME, $1, $@ …; zsh also $=NAME (split), $~NAME (glob),
// $^NAME and $+NAME. So only a $ before a blank, a quote, an operator or
// the end counts as a plain dollar sign.
func startsParameter(s string, i int) bool {
	return i+1 < len(s) && strings.IndexByte(" \t\n\"';|&<>()", s[i+1]) < 0
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// charKind says where a character of a word comes from.
type charKind int

const (
	literal   charKind = iota
	glob               // an unquoted glob or brace character
	expansion          // the $ that starts an expansion
)

// wordBuilder gathers one word and what the shell may do to it.
type wordBuilder struct {
	text    strings.Builder
	started bool
	decided bool // the first character has been seen, so pinned is known
	w       word
}

func (b *wordBuilder) add(c byte, kind charKind) {
	if !b.decided {
		b.decided = true
		b.w.pinned = kind == literal && c != '-' && c != '+'
	}
	switch kind {
	case glob:
		b.w.globs = true
	case expansion:
		b.w.expands = true
	}
	b.started = true
	b.text.WriteByte(c)
}

// addQuoted adds quoted text; a pair of empty quotes still makes a word.
func (b *wordBuilder) addQuoted(s string) {
	b.started = true
	b.w.quoted = true
	for i := 0; i < len(s); i++ {
		b.add(s[i], literal)
	}
}

// isDescriptor reports whether the word so far is a bare number, which
// before > names the descriptor to redirect.
func (b *wordBuilder) isDescriptor() bool {
	return b.started && !b.w.quoted && !b.w.uncertain() && isDigits(b.text.String())
}

func (b *wordBuilder) word() word {
	w := b.w
	w.text = b.text.String()
	return w
}
