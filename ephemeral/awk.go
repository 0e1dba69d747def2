package ephemeral

import (
	"regexp"
	"strings"
)

// awkRefusedText are the ways an awk program runs commands: pipes to and
// from commands (print | "cmd", "cmd" | getline, |&) and gawk's @
// (indirect calls such as @f() with f = "system", @load, @include).
var awkRefusedText = []string{"|", "@"}

// awkRefusedNames are the identifiers refused anywhere in a program:
// system runs a command; getline reads files, commands or the network;
// ENVIRON exposes the environment; ARGV and ARGC name the files awk
// opens next (ARGV[1] = "/inet/tcp/…" connects); while, do, for and
// functions (recursion) are how a program loops without reading input.
var awkRefusedNames = map[string]bool{
	"system": true, "getline": true, "environ": true, "argv": true, "argc": true,
	"while": true, "do": true, "for": true, "function": true, "func": true,
}

// awkForIn is for (key in array), which visits an array's keys once; it is
// the one loop allowed (END{for (k in n) print k, n[k]}).
var awkForIn = regexp.MustCompile(`\bfor\s*\(\s*([a-z_][a-z0-9_]*)\s+in\s+([a-z_][a-z0-9_]*)\s*\)`)

var awkName = regexp.MustCompile(`[a-z_][a-z0-9_]*`)

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
	for _, name := range awkName.FindAllString(p, -1) {
		if awkRefusedNames[name] {
			return false
		}
	}
	return true
}
