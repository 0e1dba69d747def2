package ephemeral

import (
	"regexp"
	"strings"
)

// awkRefusedText are refused anywhere in a program, also inside longer
// words (the seed's choice, which costs little): system runs a command;
// getline reads files, commands or the network; ENVIRON exposes the
// environment; ARGV and ARGC name the files awk opens next (ARGV[1] =
// "/inet/tcp/…" connects); pipes run commands (print | "cmd", "cmd" |
// getline, |&); gawk's @ makes indirect calls (@f() with f = "system"),
// @load and @include.
//
// gawk's SYMTAB reaches every variable by a name built at run time
// (SYMTAB["AR" "GV"][1] names the next file), PROCINFO and FUNCTAB its
// internals: they are refused too.
var awkRefusedText = []string{"system", "getline", "environ", "argv", "argc", "|", "@", "symtab", "procinfo", "functab"}

// awkRefusedNames are refused as whole words: while, do and for loops and
// functions (recursion) are how a program runs on without reading input.
var awkRefusedNames = map[string]bool{
	"while": true, "do": true, "for": true, "function": true, "func": true,
}

// awkForIn is for (key in array), which visits an array's keys once; it is
// the one loop allowed (END{for (k in n) print k, n[k]}).
var awkForIn = regexp.MustCompile(`\bfor\s*\(\s*([a-z_][a-z0-9_]*)\s+in\s+([a-z_][a-z0-9_]*)\s*\)`)

// awkProgramIsReadOnly does not parse awk. It refuses every program that
// could write, run or loop: any of awkRefusedText and awkRefusedNames
// (looked for in the lowercased text, strings included), and any > after
// the first print, since an output redirection (print > f, printf(…) >>
// f) follows its print keyword while a comparison like NR > 1 usually
// comes before. Without loops or functions each rule runs once per record
// and awk ends with its input.
func awkProgramIsReadOnly(prog string) bool {
	p := strings.ToLower(prog)
	for _, r := range awkRefusedText {
		if strings.Contains(p, r) {
			return false
		}
	}
	if i := strings.Index(p, "print"); i >= 0 && strings.Contains(p[i:], ">") {
		return false
	}
	// The loop goes, its names stay: for (k in ARGV) still names ARGV.
	p = awkForIn.ReplaceAllString(p, " $1 $2 ")
	return !anyName(p, awkRefusedNames)
}

// anyName reports whether s holds, as a whole identifier ([A-Za-z_]
// then letters, digits and _), one of names. It scans in place: a 10 MB
// program allocates nothing.
func anyName(s string, names map[string]bool) bool {
	for i := 0; i < len(s); {
		if !isNameByte(s[i], false) {
			i++
			continue
		}
		j := i + 1
		for j < len(s) && isNameByte(s[j], true) {
			j++
		}
		if names[s[i:j]] {
			return true
		}
		i = j
	}
	return false
}

func isNameByte(c byte, digitsToo bool) bool {
	return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || digitsToo && '0' <= c && c <= '9'
}
