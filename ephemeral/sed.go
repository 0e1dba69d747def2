package ephemeral

import "strings"

// sedScriptFiles reports whether a sed script only prints and reads, and
// ends: no w or W command, no s///w or s///e flag, no e command, no loop
// (see loopsEnd), and nothing this parser does not know. It also returns
// the files the script's r and R commands read. It reads the script the
// way GNU sed does and refuses whatever BSD sed (macOS) would split
// differently, so both agree on where each command ends.
func sedScriptFiles(script string) ([]string, bool) {
	p := sedParser{s: script, labels: map[string]bool{}, pending: map[string]bool{}}
	if !p.script() || p.loopBroken {
		return nil, false
	}
	for label := range p.pending {
		if !p.labels[label] {
			return nil, false // a branch to a label never defined
		}
	}
	return p.files, true
}

// sedMostDepth is how deep { blocks may nest.
const sedMostDepth = 32

type sedParser struct {
	s     string
	i     int
	depth int    // open { blocks
	label string // the label of the last :, b, t or T read
	// files are the names r and R read.
	files []string

	// The loop check (see loop): the labels defined so far, those
	// branched to before their definition, and what the commands since
	// the last label were.
	labels     map[string]bool
	pending    map[string]bool
	last       string // the last label defined
	clean      bool   // since it, only top-level commands, no label, branch or block
	reads      bool   // since it, an N or n without an address
	loopBroken bool   // some branch closes a loop that may not read
}

func (p *sedParser) script() bool {
	for {
		p.skip(" \t\n;")
		if p.eof() {
			return p.depth == 0
		}
		if p.at('#') {
			p.restOfLine()
			continue
		}
		start := p.i
		if !p.addresses() {
			return false
		}
		p.skip(" \t")
		for p.at('!') {
			p.i++
			p.skip(" \t")
		}
		if p.eof() {
			return false
		}
		name, depth, addressed := p.s[p.i], p.depth, p.i > start
		if !p.command() {
			return false
		}
		p.loop(name, depth, addressed)
	}
}

// command reads one command after its addresses. What a command's text,
// label or file name swallows is cut as early as any sed would cut it, so
// that whatever follows is still checked as commands.
func (p *sedParser) command() bool {
	c := p.next()
	switch {
	case c == '{':
		// No script a glance needs nests deeper; a deeper one is refused
		// at once rather than read to its end.
		p.depth++
		return p.depth <= sedMostDepth
	case c == '}':
		p.depth--
		return p.depth >= 0 && p.end()
	case strings.IndexByte("=dgGhHnNpPxzF", c) >= 0:
		return p.end()
	case strings.IndexByte("lLqQ", c) >= 0: // optional number
		p.skip(" \t")
		p.skip("0123456789")
		return p.end()
	case strings.IndexByte("aic", c) >= 0: // text to the end of the line
		p.restOfLine()
		return true
	case strings.IndexByte(":btTv", c) >= 0: // label, or version for v
		p.skip(" \t")
		start := p.i
		p.upTo(" \t\n;}")
		p.label = p.s[start:p.i]
		return true
	case c == 'r' || c == 'R': // read a file: its name runs to the end of the line
		p.skip(" \t")
		name := p.restOfLine()
		p.files = append(p.files, name)
		return !strings.ContainsAny(name, ";}#")
	case c == 's':
		return p.substitute()
	case c == 'y':
		return p.transliterate()
	}
	// e and w, W run or write; D restarts the cycle without reading
	// input, so s/^/\n/;D never ends; anything else is unknown.
	return false
}

// loop records one command for the loop check: every branch must either
// jump forward (to a later label, or to the end without one) or close a
// loop that reads a line on each turn. Such a loop has its label and its
// branch at the top level and between them only top-level commands, no
// label, branch or block among them, and an N or n without an address,
// which reads the next line or ends sed at the last. So :a;N;$!ba (join
// all lines) passes and :a;ba, :a;s/x/xx/;ta do not. Labels must be
// defined once. It needs only the last label's state: a loop back past a
// later label fails anyway.
func (p *sedParser) loop(name byte, depth int, addressed bool) {
	switch {
	case name == ':':
		if p.labels[p.label] || p.label == "" || depth != 0 {
			// Defined twice, empty, or inside a block: refused, so that
			// any loop starts at a top-level label.
			p.loopBroken = true
		}
		p.labels[p.label] = true
		p.last, p.clean, p.reads = p.label, true, false
	case strings.IndexByte("btT", name) >= 0:
		switch {
		case p.label == "":
			// To the end of the script: forward.
		case !p.labels[p.label]:
			p.pending[p.label] = true // forward, if it is defined later
		case p.label != p.last || !p.clean || !p.reads || depth != 0:
			p.loopBroken = true
		}
		p.clean = false
	case name == '{' || name == '}' || depth != 0:
		p.clean = false
	case (name == 'N' || name == 'n') && !addressed:
		p.reads = true
	}
}

// addresses reads an optional address or range: 3, $, /re/I, \%re%,
// first~step, addr1,+N, addr1,~N.
func (p *sedParser) addresses() bool {
	if _, ok := p.address(); !ok {
		return false
	}
	if !p.at(',') {
		return true
	}
	p.i++
	p.skip(" \t")
	if p.at('+') || p.at('~') {
		p.i++
		return p.skip("0123456789") > 0
	}
	found, ok := p.address()
	return ok && found
}

func (p *sedParser) address() (found, ok bool) {
	switch {
	case p.skip("0123456789") > 0:
		if p.at('~') {
			p.i++
			p.skip("0123456789")
		}
		return true, true
	case p.at('$'):
		p.i++
		return true, true
	case p.at('/'):
		p.i++
		if !p.delimited('/', true) {
			return true, false
		}
	case p.at('\\'):
		p.i++
		d, ok := p.delimiter()
		if !ok || !p.delimited(d, true) {
			return true, false
		}
	default:
		return false, true
	}
	p.skip("IM")
	return true, true
}

// substitute reads s/re/replacement/flags. The flags w (write) and e
// (execute) are not accepted, so end() fails on them.
func (p *sedParser) substitute() bool {
	d, ok := p.delimiter()
	if !ok || !p.delimited(d, true) || !p.delimited(d, false) {
		return false
	}
	p.skip("gpiImM0123456789")
	return p.end()
}

// transliterate reads y/abc/xyz/; BSD sed reads brackets there too.
func (p *sedParser) transliterate() bool {
	d, ok := p.delimiter()
	return ok && p.delimited(d, true) && p.delimited(d, true) && p.end()
}

func (p *sedParser) delimiter() (byte, bool) {
	if p.eof() {
		return 0, false
	}
	d := p.next()
	return d, d != '\\' && d != '\n' && d < 0x80
}

// delimited skips a regular expression or replacement and its closing
// delimiter d. A backslash escapes the next character. GNU sed ends at the
// first unescaped d even inside a bracket expression, BSD sed does not, so
// a bracket expression holding d is refused (see bracket).
func (p *sedParser) delimited(d byte, brackets bool) bool {
	for !p.eof() {
		c := p.next()
		switch {
		case c == '\\':
			if p.eof() || p.at('\n') {
				return false
			}
			p.i++
		case c == '\n':
			return false
		case c == d:
			return true
		case c == '[' && brackets:
			if !p.bracket(d) {
				return false
			}
		}
	}
	return false
}

// bracket skips a bracket expression the way BSD sed's compile_ccl does
// ([^]…], [[:alpha:]], [[.-.]], [[=a=]]), failing on the delimiter, a
// backslash or a newline inside: there the two seds would disagree.
func (p *sedParser) bracket(d byte) bool {
	for _, lead := range []byte{'^', ']'} {
		if p.at(lead) {
			if lead == d {
				return false
			}
			p.i++
		}
	}
	for !p.eof() {
		c := p.next()
		switch {
		case c == d || c == '\\' || c == '\n':
			return false
		case c == ']':
			return true
		case c == '[' && (p.at('.') || p.at(':') || p.at('=')):
			kind := p.next()
			if !p.classEnd(kind, d) {
				return false
			}
		}
	}
	return false
}

// classEnd skips to the closing kind+']' of [:name:], [.x.] or [=x=].
func (p *sedParser) classEnd(kind, d byte) bool {
	for !p.eof() {
		c := p.next()
		switch {
		case c == d || c == '\\' || c == '\n':
			return false
		case c == kind && p.at(']'):
			p.i++
			return true
		}
	}
	return false
}

// end accepts what may follow a command: the end, ;, a newline, } or a
// comment. Anything else (such as a w flag) is refused.
func (p *sedParser) end() bool {
	p.skip(" \t")
	return p.eof() || strings.IndexByte(";\n}#", p.s[p.i]) >= 0
}

func (p *sedParser) eof() bool { return p.i >= len(p.s) }

func (p *sedParser) at(c byte) bool { return p.i < len(p.s) && p.s[p.i] == c }

func (p *sedParser) next() byte {
	c := p.s[p.i]
	p.i++
	return c
}

// skip passes over characters from set and says how many.
func (p *sedParser) skip(set string) int {
	start := p.i
	for p.i < len(p.s) && strings.IndexByte(set, p.s[p.i]) >= 0 {
		p.i++
	}
	return p.i - start
}

// upTo passes over characters up to one from set.
func (p *sedParser) upTo(set string) {
	for p.i < len(p.s) && strings.IndexByte(set, p.s[p.i]) < 0 {
		p.i++
	}
}

// restOfLine passes over the rest of the line and returns it.
func (p *sedParser) restOfLine() string {
	start := p.i
	p.upTo("\n")
	return p.s[start:p.i]
}
