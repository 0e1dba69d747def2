package ephemeral

import "strings"

// Word is one word of a command as bash hands it to the program, after
// quote removal and backslash escapes: cat ~/.config/flower/.en""v and
// cat ~/.config/flower/.e\nv both read .env.
type Word struct {
	// Text is the word after quote removal; a tilde is left as written.
	Text string
	// Expands: it holds a $ expansion, whose value Text does not show.
	Expands bool
	// Glob: it holds an unquoted glob or brace character, so bash may
	// replace it with any names Text matches as a pattern.
	Glob bool
	// Quoted: some part of it was quoted or escaped (a quoted ~ is not
	// expanded).
	Quoted bool
}

// Command is one simple command of a glance: its words, verb first, and
// the folder it starts in when the line began with cd DIR && (Dir, as
// written; "" for the working directory).
type Command struct {
	Dir   string
	Words []Word
}

// Commands reads cmd as Is does and returns its simple commands with
// their words as bash would pass them; ok is false when cmd is outside
// the grammar Is accepts (substitutions, subshells, redirections to
// files, control bytes), which a caller must treat as unreadable.
func Commands(cmd string) ([]Command, bool) {
	if strings.TrimSpace(cmd) == "" || hasControlByte(cmd) || hasSubstitution(cmd) {
		return nil, false
	}
	segments, ok := split(strings.Trim(cmd, " \t\n"))
	if !ok {
		return nil, false
	}
	dir := ""
	if d, ok := leadingCd(segments); ok {
		dir = d
		segments = segments[1:]
	}
	out := make([]Command, 0, len(segments))
	for _, s := range segments {
		c := Command{Dir: dir, Words: make([]Word, 0, len(s.words))}
		for _, w := range s.words {
			c.Words = append(c.Words, Word{Text: w.text, Expands: w.expands, Glob: w.globs, Quoted: w.quoted})
		}
		out = append(out, c)
	}
	return out, true
}
