package ephemeral

import (
	"path"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"
)

// verbPieces are the words FuzzVerbTable builds arguments from: options
// and subcommands the rules know, options they refuse, and operands that
// name devices, expand, glob, or hold programs that loop.
var verbPieces = []string{
	// Options, short and long, allowed somewhere and refused elsewhere.
	"-a", "-b", "-c", "-d", "-e", "-f", "-i", "-l", "-n", "-o", "-p", "-r", "-s", "-t", "-v", "-V", "-w", "-x", "-z",
	"-C", "-F", "-I", "-O", "-R", "-S", "-T", "-Z", "-1", "-5", "+5", "+5f", "-tvf", "-bn1", "-ni", "--",
	"--all", "--list", "--get", "--get-all", "--global", "--file=x", "--output=x", "--out=x", "--follow",
	"--in-place", "--exec=x", "--no-stream", "--to-command=sh", "--buffer-size=1", "--version", "--check",
	"--files0-from=x", "--arg", "--rawfile", "--tail=5", "--kubeconfig=x", "--name-only", "--count",
	// Subcommands and modes.
	"status", "log", "diff", "config", "get", "list", "set", "show", "expire", "delete", "reflog", "branch",
	"tag", "grep", "ls-tree", "rev-list", "merge-base", "show-ref", "stash", "worktree", "remote", "logs",
	"ps", "stats", "images", "rm", "tvf", "xf", "sh",
	// Operands.
	"f", "x", "a.tar", "a.zip", "sub", "HEAD", "main..HEAD", "user.name", "x=1", "1", "10", "100", "1e12",
	"/dev/null", "/dev/zero", "/dev/stdin", "../../dev/zero", "~/x", "~/../../dev/zero", "/proc/self/fd/0",
	"/proc/cpuinfo", "/d*/zero", "/inet/tcp/0/x/80", "$X", "\"$X\"", "x$X", "*", "./*.go", "]",
	"'{print}'", "'BEGIN{while(1);}'", "'{c[$1]++} END{for (k in c) print k}'", "'s/a/b/'", "':a;ba'",
	"':a;N;$!ba'", "'r /dev/zero'", "'1e id'", "'.'", "'repeat(1)'", "'.[] | .x'", "'def f: f; f'",
	"$'x'", "$\"x\"", "'%s\\n'", "'{{.Names}}'", "e$'x'pire", "2>/dev/null", ">out",
}

// verbSeparators join generated commands.
var verbSeparators = []string{" && ", " | ", "; ", " || ", "\n"}

// sortedVerbs are the verb table's names in a fixed order, so a seed
// always makes the same command.
func sortedVerbs() []string {
	names := make([]string, 0, len(verbs)+1)
	for name := range verbs {
		names = append(names, name)
	}
	sort.Strings(names)
	return append(names, "cd")
}

// generateCommand turns fuzz bytes into a command line: for each command a
// verb of the table, then up to seven arguments, each a piece or a few raw
// bytes of the input, and a separator to the next command.
func generateCommand(data []byte) string {
	names := sortedVerbs()
	next := func() (int, bool) {
		if len(data) == 0 {
			return 0, false
		}
		b := data[0]
		data = data[1:]
		return int(b), true
	}
	var sb strings.Builder
	for commands := 0; commands < 4; commands++ {
		v, ok := next()
		if !ok {
			break
		}
		if commands > 0 {
			sb.WriteString(verbSeparators[v%len(verbSeparators)])
		}
		sb.WriteString(names[v%len(names)])
		n, _ := next()
		for range n % 8 {
			k, ok := next()
			if !ok {
				break
			}
			sb.WriteByte(' ')
			if k < 224 {
				sb.WriteString(verbPieces[k%len(verbPieces)])
				continue
			}
			// A raw word of up to four input bytes.
			m := k%4 + 1
			for range m {
				c, ok := next()
				if !ok {
					break
				}
				sb.WriteByte(byte(c))
			}
		}
		more, _ := next()
		if more%3 == 0 {
			break
		}
	}
	return sb.String()
}

// verbTableSeeds start FuzzVerbTable: for each verb, a few byte strings
// that pick it with different arguments.
func verbTableSeeds() [][]byte {
	var seeds [][]byte
	for i := range sortedVerbs() {
		for j := 0; j < 3; j++ {
			seeds = append(seeds, []byte{byte(i), byte(1 + j*3), byte(j * 37), byte(j*53 + 7), byte(j*11 + 90), 0})
		}
	}
	return seeds
}

// verbTableSeedCommands are the commands the seeds make, for the bash
// cross-check.
func verbTableSeedCommands() []string {
	var cmds []string
	for _, s := range verbTableSeeds() {
		cmds = append(cmds, generateCommand(s))
	}
	return cmds
}

// FuzzVerbTable explores each verb's rule with generated arguments and
// checks: Is never panics and answers the same twice; whatever it accepts
// passes both oracles written apart from Is (writingConstruct and
// endlessConstruct), and survives the lexer's round trip: quoting every
// word again gives the same words, and the same answer.
func FuzzVerbTable(f *testing.F) {
	for _, s := range verbTableSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cmd := generateCommand(data)
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
		if found := endlessConstruct(cmd); found != "" {
			t.Fatalf("Is(%q) = true, but it holds %s", cmd, found)
		}
		checkRoundTrip(t, cmd)
	})
}

// checkRoundTrip quotes every word of an accepted line in single quotes
// and splits it again: the words must come back the same, and, when no
// word is one the shell would expand (where quoting changes the meaning),
// Is must accept the quoted line too.
func checkRoundTrip(t *testing.T, cmd string) {
	segments, ok := split(strings.Trim(cmd, " \t\n"))
	if !ok {
		t.Fatalf("Is(%q) = true, but split refuses it", cmd)
	}
	var sb strings.Builder
	plain := true
	for _, s := range segments {
		for i, w := range s.words {
			if i > 0 {
				sb.WriteByte(' ')
			}
			plain = plain && !w.uncertain() && !strings.HasPrefix(w.text, "~") && !strings.Contains(w.text, "=~")
			sb.WriteString("'" + strings.ReplaceAll(w.text, "'", `'\''`) + "'")
		}
		switch s.sep {
		case "":
		case "\n":
			sb.WriteString("\n")
		default:
			sb.WriteString(" " + s.sep + " ")
		}
	}
	again, ok := split(sb.String())
	if !ok || len(again) != len(segments) {
		t.Fatalf("Is(%q) = true, but its quoted form %q splits differently", cmd, sb.String())
	}
	for i := range segments {
		if !equalTexts(segments[i].words, textsOf(again[i].words)) {
			t.Fatalf("Is(%q) = true, but its quoted form %q has other words", cmd, sb.String())
		}
	}
	if plain && !Is(sb.String()) {
		t.Fatalf("Is(%q) = true, but Is(%q), the same words quoted, = false", cmd, sb.String())
	}
}

func textsOf(words []word) []string {
	out := make([]string, len(words))
	for i, w := range words {
		out[i] = w.text
	}
	return out
}

// TestVerbTableSeedsCoverEveryVerb keeps the generator honest: each verb
// of the table starts at least one seed's command.
func TestVerbTableSeedsCoverEveryVerb(t *testing.T) {
	started := map[string]bool{}
	for _, cmd := range verbTableSeedCommands() {
		verb, _, _ := strings.Cut(cmd, " ")
		started[verb] = true
	}
	for _, name := range sortedVerbs() {
		if !started[name] {
			t.Errorf("no seed starts with %s", name)
		}
	}
}

// endlessConstruct is the second oracle, for issue 8's classes: it looks
// for what never ends or hides its text, crudely and apart from Is.
func endlessConstruct(cmd string) string {
	if ansiCQuoting(cmd) {
		return "$'…' or $\"…\" quoting"
	}
	shell, text := unquote(cmd)
	if !blankSafeRedirects(shell) {
		return "" // writingConstruct's to report
	}
	// After cd, a relative path starts elsewhere: cd 'a/b/c' && cat
	// ../../dev/zero reads a/dev/zero. Only absolute paths are judged then.
	afterCd := false
	for _, words := range commandWords(shell, text) {
		afterCd = afterCd || words[0] == "cd"
		if found := endlessWords(words, afterCd); found != "" {
			return found
		}
	}
	return ""
}

// ansiCQuoting finds an unquoted $ before a quote.
func ansiCQuoting(cmd string) bool {
	single, double := false, false
	for i := 0; i < len(cmd); i++ {
		switch c := cmd[i]; {
		case single:
			single = c != '\''
		case c == '\\':
			i++
		case c == '"':
			double = !double
		case double:
		case c == '\'':
			single = true
		case c == '$' && i+1 < len(cmd) && (cmd[i+1] == '\'' || cmd[i+1] == '"'):
			return true
		}
	}
	return false
}

// lookOnly are the verbs that never read their operands' content.
var lookOnly = map[string]bool{
	"ls": true, "ll": true, "dir": true, "stat": true, "file": true, "realpath": true, "basename": true,
	"dirname": true, "echo": true, "printf": true, "test": true, "[": true, "find": true, "lsof": true,
	"df": true, "which": true, "whereis": true, "type": true, "command": true, "tree": true, "cd": true,
	"pwd": true, "uptime": true, "whoami": true, "id": true, "printenv": true, "free": true, "date": true,
	"hostname": true, "env": true, "ps": true, "pgrep": true, "jobs": true, "netstat": true,
	"systemctl": true, "docker": true, "kubectl": true, "locale": true, "nproc": true, "getconf": true,
	"sw_vers": true, "uname": true, "arch": true, "seq": true,
}

// valued are options whose next word is their value, for the crude
// operand counts below.
var valued = map[string]bool{
	"-c": true, "-g": true, "-l": true, "-o": true, "-s": true, "-n": true, "-cols": true, "-len": true,
	"-seek": true, "-name": true, "-groupsize": true, "-offset": true,
	"-f": true, "--file": true, "--blob": true, "-t": true, "--type": true, "--default": true,
}

var jqEndless = regexp.MustCompile(`repeat|recurse\(|while\(|until\(|range\(|def `)

func endlessWords(words []string, afterCd bool) string {
	verb, args := strings.ToLower(words[0]), words[1:]
	if !lookOnly[verb] {
		for _, a := range args {
			c := path.Clean(a)
			if (strings.HasPrefix(c, "/dev/") && c != "/dev/null") || !afterCd && strings.Contains(c, "../dev/") ||
				strings.HasPrefix(c, "/proc/") && strings.Contains(c, "/fd") {
				return "a device operand " + a
			}
		}
	}
	operands := 0
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case valued[a]:
			i++
		case !strings.HasPrefix(a, "-"):
			operands++
		}
	}
	switch verb {
	case "top":
		return "top"
	case "command":
		if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
			return "command running its operand"
		}
	case "awk":
		if prog := awkProgram(args); strings.Contains(prog, "while(") || strings.Contains(prog, "for(;;") {
			return "an awk loop"
		}
	case "jq":
		// The filter is the first word that is no option; --arg and
		// --argjson take two.
		for i := 0; i < len(args); i++ {
			switch a := args[i]; {
			case a == "--arg" || a == "--argjson":
				i += 2
			case strings.HasPrefix(a, "-") && a != "-":
			default:
				if jqEndless.MatchString(a) {
					return "a jq generator"
				}
				i = len(args)
			}
		}
	case "xxd":
		if operands > 1 {
			return "xxd writing its second operand"
		}
	case "git":
		if len(args) > 1 && args[0] == "config" {
			// git stops reading options at the first operand: an action
			// after it is an operand (--get a.b --list reads), but with
			// none before it the operands are NAME VALUE, which sets.
			for i := 1; i < len(args); i++ {
				a := args[i]
				if valued[a] {
					i++
					continue
				}
				if strings.HasPrefix(a, "--get") || a == "--list" || a == "-l" {
					i = len(args)
					continue
				}
				if !strings.HasPrefix(a, "-") {
					for _, later := range args[i:] {
						if a != "get" && a != "list" && (strings.HasPrefix(later, "--get") || later == "--list" || later == "-l") {
							return "git config with an action after an operand"
						}
					}
					i = len(args)
				}
			}
		}
	}
	return ""
}

// TestEndlessConstructFindsWhatItLooksFor keeps the second oracle honest.
func TestEndlessConstructFindsWhatItLooksFor(t *testing.T) {
	for _, cmd := range []string{
		"echo $'x'", "echo $\"x\"", "cat /dev/zero", "head ../../dev/zero", "cat /proc/self/fd/0",
		"top -b -n 1", "command rm -v x", "awk 'BEGIN{while(1);}'", "jq -n 'repeat(1)'",
		"xxd a b", "git config a b --get",
	} {
		if endlessConstruct(cmd) == "" {
			t.Errorf("endlessConstruct(%q) found nothing", cmd)
		}
	}
	for _, table := range [][]glanceCase{cases, glances} {
		for _, c := range table {
			if c.want {
				if found := endlessConstruct(c.cmd); found != "" {
					t.Errorf("endlessConstruct(%q) = %s on an accepted case", c.cmd, found)
				}
			}
		}
	}
}

// TestIsStaysLinear checks that Is grows linearly with its input, on long
// commands and pathological nesting: each input is timed at two sizes, 16
// times apart, interleaved, and the fastest of five runs of each is
// compared. Linear is a ratio near 16, quadratic 256; the bound, 64, is
// four times away from both. What is timed is the CPU time of the call's
// own thread (cpuTimeOf): on a loaded machine the wall time of the larger
// input also counted the seconds it waited for a core, and a linear case
// measured 67 times. No absolute time is a condition.
func TestIsStaysLinear(t *testing.T) {
	inputs := map[string]func(size int) string{
		"arguments":          func(n int) string { return "ls " + strings.Repeat("a ", n/2) },
		"one word":           func(n int) string { return "cat " + strings.Repeat("a", n) },
		"segments":           func(n int) string { return strings.Repeat("ls | ", n/5) + "ls" },
		"quotes":             func(n int) string { return "echo " + strings.Repeat(`'a'"b"`, n/6) },
		"sed blocks nested":  func(n int) string { return "sed '" + strings.Repeat("{", n/2) + strings.Repeat("}", n/2) + "' f" },
		"sed labels":         func(n int) string { return "sed '" + strings.Repeat(":a\nN\nba\n", n/10) + "' f" },
		"awk print >":        func(n int) string { return "awk '" + strings.Repeat("print >", n/7) + "' f" },
		"jq names":           func(n int) string { return "jq '" + strings.Repeat("a|", n/2) + "' f" },
		"paths of ..":        func(n int) string { return "cat " + strings.Repeat("../", n/3) + "dev/zero" },
		"options clustered":  func(n int) string { return "ls -" + strings.Repeat("l", n) },
		"git config long":    func(n int) string { return "git config --get " + strings.Repeat("a.", n/2) },
		"a control byte":     func(n int) string { return "ls " + strings.Repeat("a", n) + "\x01" },
		"an unclosed quote":  func(n int) string { return "echo '" + strings.Repeat("a", n) },
		"backslash newlines": func(n int) string { return "ls " + strings.Repeat("\\\n", n/2) },
	}
	const small, large = 64 << 10, 1 << 20
	timeIs := func(cmd string) time.Duration {
		runtime.GC() // no run pays for the garbage of the one before
		return cpuTimeOf(func() { Is(cmd) })
	}
	for name, make := range inputs {
		a, b := make(small), make(large)
		tSmall, tLarge := time.Duration(1<<63-1), time.Duration(1<<63-1)
		for range 5 {
			tSmall = min(tSmall, timeIs(a))
			tLarge = min(tLarge, timeIs(b))
		}
		// Below a millisecond the clock, not the algorithm, decides.
		ratio := float64(max(tLarge, time.Millisecond)) / float64(max(tSmall, time.Millisecond))
		t.Logf("%s: %v at %d KB, %v at %d KB (%.1fx)", name, tSmall, small>>10, tLarge, large>>10, ratio)
		if ratio > 64 {
			t.Errorf("Is on %s: 16 times the input took %.1f times as long (%v, %v); it should stay linear", name, ratio, tSmall, tLarge)
		}
	}
}
