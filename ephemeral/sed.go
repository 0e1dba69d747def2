package ephemeral

import "strings"

// sedScriptFiles reports whether a sed script only prints and reads, and
// ends: no w or W command, no s///w or s///e flag, no e command, no loop
// (see loopsEnd), and nothing this parser does not know. It also returns
// the files the script's r and R commands read. It reads the script the
// way GNU sed does and refuses whatever BSD sed (macOS) would split
// differently, so both agree on where each command ends.
func sedScriptFiles(script string) ([]string, bool) {
	p := sedParser{s: script}
	if !p.script() || !p.loopsEnd() {
		return nil, false
	}
	return p.files, true
}

type sedParser struct {
	s     string
	i     int
	depth int // open { blocks
	// cmds are the commands read so far, in order; files the names r and
	// R read.
	cmds  []sedCmd
	files []string
}

// sedCmd is what the loop check needs to know of one command.
type sedCmd struct {
	name      byte   // the command letter, or { or }
	label     string // for :, b, t and T
	depth     int    // the blocks it is in
	addressed bool   // it has an address or a !
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
		p.cmds = append(p.cmds, sedCmd{name: p.s[p.i], depth: p.depth, addressed: p.i > start})
		if !p.command() {
			return false
		}
	}
}

// command reads one command after its addresses. What a command's text,
// label or file name swallows is cut as early as any sed would cut it, so
// that whatever follows is still checked as commands.
func (p *sedParser) command() bool {
	c := p.next()
	switch {
	case c == '{':
		p.depth++
		return true
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
		p.cmds[len(p.cmds)-1].label = p.s[start:p.i]
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

// loopsEnd reports whether every branch either jumps forward (to a later
// label, or to the end without one) or closes a loop that reads a line on
// each turn: the label and the branch at the top level, and between them
// only top-level commands, no label or branch among them, and an N or n
// without an address, which reads the next line or ends sed at the last.
// So :a;N;$!ba (join all lines) passes and :a;ba, :a;s/x/xx/;ta do not.
// Labels must be defined once.
func (p *sedParser) loopsEnd() bool {
	labels := map[string]int{}
	for i, c := range p.cmds {
		if c.name == ':' {
			if _, dup := labels[c.label]; dup || c.label == "" {
				return false
			}
			labels[c.label] = i
		}
	}
	for i, c := range p.cmds {
		if strings.IndexByte("btT", c.name) < 0 || c.label == "" {
			continue
		}
		at, ok := labels[c.label]
		if !ok {
			return false
		}
		if at < i && !p.readsEachTurn(at, i) {
			return false
		}
	}
	return true
}

// readsEachTurn checks the loop from the label at cmds[from] back from the
// branch at cmds[to].
func (p *sedParser) readsEachTurn(from, to int) bool {
	if p.cmds[from].depth != 0 || p.cmds[to].depth != 0 {
		return false
	}
	reads := false
	for _, c := range p.cmds[from+1 : to] {
		if c.depth != 0 || strings.IndexByte(":btT{}", c.name) >= 0 {
			return false
		}
		if (c.name == 'N' || c.name == 'n') && !c.addressed {
			reads = true
		}
	}
	return reads
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
