// Package ephemeral decides whether a Bash command is a read-only glance (git status, ls -la).
// It is a security boundary: whatever Is accepts, a coordinator runs unsupervised on the main thread.
// The delegate guard (what may run) and the transcript trimmer (what expires) share Is, so the two sets stay one.
//
// The seed described a glance by a deny-list: an allowed first word, minus the forms known to
// mutate (sed -i, sort -o, find -delete). Issue 8 showed how that fails: an option looked for
// anywhere while the program stops reading options at its first operand (command rm -v x,
// git config NAME VALUE --get), a word compared by its raw text while bash decodes it
// (git reflog e$'x'pire), glances that never end (cat /dev/zero, sed ':a;ba'), and options no
// list had heard of. So the rules are now allow-lists: each verb lists the options it accepts, in
// the order and with the values its program reads them (options.go), and refuses every other; a
// few seed verbs whose every option only prints keep accepting any argument, and a few long-
// lived deny-lists remain where the program's options are many and only named ones act (rg,
// tree, ss, lsof, free, jobs, uname, find's primaries, git's shared long options). A glance
// must also end on its own: Is refuses what it can see loop or wait, and the guard's time limit
// bounds what it cannot (a FIFO, a symlink to a device, a pathological regex).
package ephemeral

import "strings"

// Is reports whether cmd is an ephemeral glance: a command line that only
// reads and prints, and ends on its own. The rules:
//
//  1. A blank command is not a glance.
//  2. Command substitution ($( … ), backticks, <( … ), >( … ), zsh's =( … )),
//     ${ … } and $[ … ] expansions, and control characters are refused
//     anywhere, even inside quotes. So are ANSI-C $'…' and locale $"…"
//     quoting, outside quotes: the text bash passes differs from the text
//     written.
//  3. Redirections may only send output to /dev/null (>, >>, 2>, &>, …) or
//     between descriptors (2>&1, >&2); any other > or < fails.
//  4. A lone & (a background job) fails; && and || are separators.
//  5. The line is split outside quotes on &&, ||, ;, | and newlines. Every
//     segment must be non-empty (one trailing ; is allowed) and start,
//     case-insensitively and as a whole word, with an allowed verb (see
//     verbs.go), and its arguments must pass that verb's own rule.
//  6. The first segment may instead be cd DIR followed by &&: DIR plainly
//     written, not /, nor in /dev, /proc or /sys; the rest is read from
//     DIR.
//  7. A verb that reads its arguments' content (cat, head, grep, sed, git,
//     the checksums …) may not be given a device file or another endless
//     file as an argument or option value: /dev/* other than /dev/null,
//     /sys, and /proc beyond a few small files, however the path is spelled
//     (//dev/zero, ../../dev/zero, ~/../dev/zero, /d*/zero); an expansion
//     is refused there, since $PWD/.. may be anything (see paths.go).
//
// The verb rules, in short (each file says why): git runs only queries,
// its subcommand spelled exactly as the builtin (any other spelling runs a
// repository's alias), without describe --dirty/--broken or
// --show-signature (they write; see RefreshesIndex for git diff), with
// git config only in its reading forms (one read action before any
// operand, no more operands than it takes) and git reflog without
// expire/delete however spelled; command only as command -v/-V NAME…,
// options first; sed without -i, -f, w/W/e, D or a loop that may not read
// (sed.go); awk without system, pipes, getline, ARGV, print >, while/do/
// for loops (for-in excepted) or functions, and no "inet" in an operand
// or -v value (gawk's /inet network files), no SYMTAB, PROCINFO or
// FUNCTAB; jq without def, repeat, recurse, while, until, range, the
// regular-expression builtins, env/$ENV, input, -f or modules; find without -exec, -ok,
// -delete, -fprint*, -fls, -newer*, -files0-from; sort without -o, -S,
// -T, -m, --compress-program, --files0-from; tail without following;
// test and [ without -v, -R or an expanded word (bash evaluates -v's
// subscript); no printenv or env, ps without e (they show environments);
// tac of plain files only; seq of at
// most ten million numbers; xxd without -r and with one input at most; tar
// only -t/--list with -f ARCHIVE; unzip only -l, -v, -Z; docker ps,
// images, stats --no-stream, logs without -f; kubectl get and logs without
// -f; top refused (it writes ~/.config/procps).
//
// Hardening beyond the seed: the words xargs, exec, execdir, eval, source
// and tee are refused anywhere; so are subshells and groups ( … ) { … },
// comments, variable assignments (FOO=1 ls), wrappers (sudo, nohup, time)
// and verbs given as paths (/bin/ls, ./ls). Where a verb has options that
// write, run commands or never end, an argument the shell would expand
// ($VAR, a leading glob) is refused too, since it could become one; where
// a rule decides by a word's text (a subcommand, expire), that word must
// be written plainly.
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
