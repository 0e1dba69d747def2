// Package ephemeral decides whether a Bash command is a read-only glance (git status, ls -la).
// It is a security boundary: whatever Is accepts, a coordinator runs unsupervised on the main thread.
// The delegate guard (what may run) and the transcript trimmer (what expires) share Is, so the two sets stay one.
package ephemeral

import "strings"

// Is reports whether cmd is an ephemeral glance: a command line that only
// reads and prints, and ends on its own. The rules, in the seed's order:
//
//  1. A blank command is not a glance.
//  2. Command substitution ($( … ), backticks, <( … ), >( … ), zsh's =( … )),
//     ${ … } and $[ … ] expansions, and control characters are refused
//     anywhere, even inside quotes.
//  3. Redirections may only send output to /dev/null (>, >>, 2>, &>, …) or
//     between descriptors (2>&1, >&2); any other > or < fails.
//  4. A lone & (a background job) fails; && and || are separators.
//  5. The line is split outside quotes on &&, ||, ;, | and newlines. Every
//     segment must be non-empty and start, case-insensitively and as a whole
//     word, with an allowed verb (see verbs.go), and its arguments must pass
//     that verb's own rules: git only queries, sed without -i or w/e
//     commands, awk without system, pipes or print >, find without
//     -exec/-delete, sort without -o, tail without -f, and so on.
//
// Hardening beyond the seed: the words xargs, exec, execdir, eval, source
// and tee are refused anywhere; so are subshells and groups ( … ) { … },
// comments, variable assignments (FOO=1 ls), wrappers (sudo, nohup, time)
// and verbs given as paths (/bin/ls, ./ls). Where a verb has options that
// write, run commands or never end, an argument the shell would expand
// ($VAR, a leading glob) is refused too, since it could become one.
//
// When in doubt Is says no: a false negative costs a dispatched worker, a
// false positive runs unsupervised.
func Is(cmd string) bool {
	if strings.TrimSpace(cmd) == "" {
		return false
	}
	if hasControlByte(cmd) || hasSubstitution(cmd) {
		return false
	}
	segments, ok := split(strings.Trim(cmd, " \t\n"))
	if !ok {
		return false
	}
	var b base
	if dir, ok := leadingCd(segments); ok {
		b.dir = dir
		segments = segments[1:]
	}
	for _, s := range segments {
		if !isGlance(s.words, b) {
			return false
		}
	}
	return true
}

// leadingCd accepts cd DIR as the first segment when && follows it and
// something comes after: the rest then runs in DIR, and its paths are
// read from there. DIR must be written plainly (no expansion or glob, no
// option, not -), and may not be /, nor in /dev, /proc or /sys: the CLI
// keeps the shell's directory for later commands, whose relative paths Is
// reads as staying where they start.
func leadingCd(segments []segment) (string, bool) {
	first := segments[0]
	if len(segments) < 2 || first.sep != "&&" || len(first.words) != 2 || first.words[0].text != "cd" {
		return "", false
	}
	dir := first.words[1]
	if dir.uncertain() || dir.text == "" || strings.HasPrefix(dir.text, "-") || forbiddenWords[strings.ToLower(dir.text)] {
		return "", false
	}
	if abs, ok := (base{}).resolve(dir.text); ok {
		top, _, _ := strings.Cut(strings.TrimPrefix(abs, "/"), "/")
		// cd .. reaches / only in the worst case resolve assumes, so only
		// a / written as such is refused.
		rooted := top == "" && strings.HasPrefix(dir.text, "/")
		if rooted || top == "dev" || top == "proc" || top == "sys" {
			return "", false
		}
	}
	return dir.text, true
}

// substitutions run another command or evaluate code. They are searched
// for in the raw text, quotes included: rejecting grep '$(' costs little.
var substitutions = []string{"$(", "`", "<(", ">(", "=(", "${", "$["}

func hasSubstitution(cmd string) bool {
	for _, s := range substitutions {
		if strings.Contains(cmd, s) {
			return true
		}
	}
	return false
}

// hasControlByte reports a control character other than tab and newline. A
// NUL would cut the line short where the shell reads it (so the shell would
// run less than was checked); the others have no place in a glance.
func hasControlByte(cmd string) bool {
	for i := 0; i < len(cmd); i++ {
		if c := cmd[i]; (c < ' ' && c != '\t' && c != '\n') || c == 0x7f {
			return true
		}
	}
	return false
}

// forbiddenWords run or write whatever follows them; the seed refuses them
// anywhere in the line, and so does Is, also spelled as options (-exec).
var forbiddenWords = map[string]bool{
	"xargs": true, "exec": true, "execdir": true, "eval": true, "source": true, "tee": true,
}

// isGlance checks one simple command: an allowed verb whose arguments pass
// the verb's rule and, unless the verb only looks names up, name no
// device file (see paths.go) seen from b.
func isGlance(words []word, b base) bool {
	for _, w := range words {
		if forbiddenWords[strings.ToLower(strings.TrimLeft(w.text, "-"))] {
			return false
		}
	}
	verb := words[0]
	// A lone [ is no pattern (nothing closes it), so the shell runs [.
	if verb.expands || (verb.globs && verb.text != "[") {
		return false
	}
	name, ok := asciiLower(verb.text)
	if !ok {
		return false
	}
	rule, ok := verbs[name]
	if !ok {
		return false
	}
	args := words[1:]
	if !rule.openArgs {
		for _, a := range args {
			if a.opaque() {
				return false
			}
		}
	}
	if !rule.names {
		for _, a := range args {
			if b.reachesDevice(a) {
				return false
			}
		}
	}
	if !rule.check(args) {
		return false
	}
	if rule.files != nil {
		for _, f := range rule.files(args) {
			if b.special(f, false) {
				return false
			}
		}
	}
	return true
}

// asciiLower lowercases s, refusing anything but ASCII: Unicode case
// folding would let "\u212Aubectl" (Kelvin sign) pass as kubectl while the
// shell looks up a different program.
func asciiLower(s string) (string, bool) {
	b := []byte(s)
	for i, c := range b {
		switch {
		case c >= 0x80:
			return "", false
		case 'A' <= c && c <= 'Z':
			b[i] = c + ('a' - 'A')
		}
	}
	return string(b), true
}
