package ephemeral

import (
	"strings"
	"testing"
)

// FuzzIs checks the security property on whatever the fuzzer makes of the
// table: Is never panics, answers the same twice, and whatever it accepts
// passes writingConstruct, a second scan written apart from Is.
func FuzzIs(f *testing.F) {
	for _, c := range cases {
		f.Add(c.cmd)
	}
	f.Fuzz(func(t *testing.T, cmd string) {
		got := Is(cmd)
		if again := Is(cmd); again != got {
			t.Fatalf("Is(%q) answered %v, then %v", cmd, got, again)
		}
		if !got {
			return
		}
		if found := writingConstruct(cmd); found != "" {
			t.Fatalf("Is(%q) = true, but it holds %s", cmd, found)
		}
	})
}

// TestWritingConstructFindsWhatItLooksFor keeps the fuzz oracle honest: a
// checker that finds nothing would let FuzzIs pass whatever Is does.
func TestWritingConstructFindsWhatItLooksFor(t *testing.T) {
	for _, cmd := range []string{
		"echo $(id)", "echo `id`", "diff <(ls) x", "ls >(cat)", "echo ${X}",
		"ls > out", "ls 2>err", "ls &>all", "ls >&file", "cat < f",
		"ls &", "ls & pwd",
		"ls | tee x", "find . | xargs rm", "exec ls", "eval x", "source f",
		"find . -delete", "find . -exec rm {} ;", "find . -okdir rm {} ;", "find . -fprint x",
		"sed -i s/a/b/ f", "sed -ni p f", "sed --in-place s/a/b/ f", "sed -I '' s/a/b/ f",
		"sort -o x f", "sort -ro x f", "sort --output=x f", "sort --out x f",
		"awk 'BEGIN{system(\"id\")}'", "awk '{print | \"sh\"}' f",
		"git reset --hard", "git push --force", "git fetch --prune", "git diff --output=x",
		"git branch -D x", "git branch --delete x",
		"tail -f log", "tail --follow log", "env FOO=1 sh",
	} {
		if writingConstruct(cmd) == "" {
			t.Errorf("writingConstruct(%q) found nothing", cmd)
		}
	}
	for _, c := range cases {
		if c.want {
			if found := writingConstruct(c.cmd); found != "" {
				t.Errorf("writingConstruct(%q) = %s on an accepted case", c.cmd, found)
			}
		}
	}
}

// writingConstruct scans a command line for constructs a glance must not
// hold and says which it found, or "". It shares no code with Is and is
// cruder: it knows quotes and redirections, then looks at words.
func writingConstruct(cmd string) string {
	for _, s := range []string{"$(", "`", "<(", ">(", "${"} {
		if strings.Contains(cmd, s) {
			return "substitution " + s
		}
	}
	shell, text := unquote(cmd)
	if strings.Contains(string(shell), "<") {
		return "input redirection"
	}
	if !blankSafeRedirects(shell) {
		return "output redirection to a file"
	}
	if strings.Contains(strings.ReplaceAll(string(shell), "&&", ""), "&") {
		return "background job"
	}
	for _, words := range commandWords(shell, text) {
		if found := writingWords(words); found != "" {
			return found
		}
	}
	return ""
}

// unquote returns the line as the shell sees its structure (every quoted
// or escaped byte turned into '_') and, byte for byte, the text the
// command receives (0 for quote marks and escaping backslashes).
// Backslash-newline pairs are left out of both.
func unquote(cmd string) (shell, text []byte) {
	add := func(s, t byte) { shell, text = append(shell, s), append(text, t) }
	for i := 0; i < len(cmd); i++ {
		c := cmd[i]
		switch {
		case c == '\\' && i+1 < len(cmd):
			if cmd[i+1] != '\n' {
				add('_', 0)
				add('_', cmd[i+1])
			}
			i++
		case c == '\'':
			add('_', 0)
			for i++; i < len(cmd) && cmd[i] != '\''; i++ {
				add('_', cmd[i])
			}
			add('_', 0)
		case c == '"':
			add('_', 0)
			for i++; i < len(cmd) && cmd[i] != '"'; i++ {
				if cmd[i] == '\\' && i+1 < len(cmd) && strings.IndexByte("$`\"\\\n", cmd[i+1]) >= 0 {
					add('_', 0)
					i++
				}
				add('_', cmd[i])
			}
			add('_', 0)
		case c == '$' && i+1 < len(cmd) && cmd[i+1] == '\'':
			// ANSI-C quoting: kept with its $, undecoded.
			add('_', '$')
			add('_', 0)
			for i += 2; i < len(cmd) && cmd[i] != '\''; i++ {
				if cmd[i] == '\\' && i+1 < len(cmd) {
					add('_', cmd[i])
					i++
				}
				add('_', cmd[i])
			}
			add('_', 0)
		default:
			add(c, c)
		}
	}
	return shell, text
}

// blankSafeRedirects overwrites with spaces every redirection to
// /dev/null or between descriptors, and reports false on any other.
func blankSafeRedirects(shell []byte) bool {
	for i := 0; i < len(shell); i++ {
		if shell[i] != '>' {
			continue
		}
		start := i
		for start > 0 && (shell[start-1] >= '0' && shell[start-1] <= '9' || shell[start-1] == '&') {
			start--
		}
		end := i + 1
		dup := false
		if end < len(shell) && shell[end] == '&' {
			dup = true
			end++
		} else if end < len(shell) && (shell[end] == '>' || shell[end] == '|') {
			end++
		}
		for end < len(shell) && (shell[end] == ' ' || shell[end] == '\t') {
			end++
		}
		targetStart := end
		for end < len(shell) && !strings.ContainsRune(" \t\n;|&<>()", rune(shell[end])) {
			end++
		}
		target := string(shell[targetStart:end])
		if target != "/dev/null" && !(dup && isDescriptorOrClose(target)) {
			return false
		}
		for j := start; j < end; j++ {
			shell[j] = ' '
		}
		i = end - 1
	}
	return true
}

func isDescriptorOrClose(s string) bool {
	s = strings.TrimSuffix(s, "-")
	return strings.Trim(s, "0123456789") == ""
}

// commandWords cuts the line at unquoted ; | & and newlines, and each piece
// at unquoted blanks, returning the words' received text.
func commandWords(shell, text []byte) [][]string {
	var all [][]string
	var words []string
	var cur []byte
	inWord := false
	endWord := func() {
		if inWord {
			words = append(words, string(cur))
		}
		cur, inWord = nil, false
	}
	for i, s := range shell {
		switch {
		case strings.IndexByte(";|&\n", s) >= 0:
			endWord()
			if len(words) > 0 {
				all = append(all, words)
			}
			words = nil
		case s == ' ' || s == '\t':
			endWord()
		default:
			inWord = true
			if text[i] != 0 {
				cur = append(cur, text[i])
			}
		}
	}
	endWord()
	if len(words) > 0 {
		all = append(all, words)
	}
	return all
}

// writingWords looks at one command's words for what writes, runs or
// never ends.
func writingWords(words []string) string {
	for _, w := range words {
		switch strings.ToLower(strings.TrimLeft(w, "-")) {
		case "tee", "xargs", "exec", "execdir", "eval", "source":
			return "the word " + w
		}
	}
	verb, args := strings.ToLower(words[0]), words[1:]
	switch verb {
	case "tail", "sort", "sed":
		// getopt: after --, every word is an operand.
		for i, a := range args {
			if a == "--" {
				args = args[:i]
				break
			}
		}
	}
	has := func(pred func(string) bool) bool {
		for _, a := range args {
			if pred(a) {
				return true
			}
		}
		return false
	}
	cluster := func(a, letters, stops string) bool {
		if !strings.HasPrefix(a, "-") || strings.HasPrefix(a, "--") {
			return false
		}
		for _, c := range a[1:] {
			if strings.ContainsRune(letters, c) {
				return true
			}
			if strings.ContainsRune(stops, c) {
				return false
			}
		}
		return false
	}
	longPrefixOf := func(a, name string) bool {
		n, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		return strings.HasPrefix(a, "--") && len(n) > 0 && strings.HasPrefix(name, n)
	}
	switch verb {
	case "find":
		if has(func(a string) bool {
			for _, p := range []string{"-delete", "-exec", "-ok", "-fprint", "-fls"} {
				if strings.HasPrefix(strings.ToLower(a), p) {
					return true
				}
			}
			return false
		}) {
			return "a find action"
		}
	case "sed":
		if has(func(a string) bool { return cluster(a, "iI", "efl") || longPrefixOf(a, "in-place") }) {
			return "sed in place"
		}
	case "sort":
		if has(func(a string) bool { return cluster(a, "o", "ktST") || longPrefixOf(a, "output") }) {
			return "sort -o"
		}
	case "awk":
		if prog := awkProgram(args); strings.Contains(prog, "system") || strings.Contains(prog, "|") {
			return "awk running a command"
		}
	case "git":
		if has(func(a string) bool {
			return a == "--hard" || strings.HasPrefix(a, "--force") || strings.HasPrefix(a, "--prune") || strings.HasPrefix(a, "--output")
		}) {
			return "a destructive git option"
		}
		if len(args) > 0 && strings.ToLower(args[0]) == "branch" && has(func(a string) bool {
			return cluster(a, "dDmM", "") || a == "--delete" || a == "--move"
		}) {
			return "git branch deleting or moving"
		}
	case "tail":
		if has(func(a string) bool { return cluster(a, "fF", "") || longPrefixOf(a, "follow") }) {
			return "tail following"
		}
	case "env":
		if len(args) > 0 {
			return "env with arguments"
		}
	}
	return ""
}

// awkProgram is the first argument that is neither an option nor the value
// of -F or -v; later ones are files, where a | is only a name.
func awkProgram(args []string) string {
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--":
			if i+1 < len(args) {
				return args[i+1]
			}
			return ""
		case a == "-F" || a == "-v":
			i++
		case strings.HasPrefix(a, "-"):
		default:
			return a
		}
	}
	return ""
}
