package app

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"unicode/utf8"
)

// The command a person types to run this flower again. Every hint that
// says "run flower …" names it (texts write {flower}; text fills it in),
// so that after `go run ./cmd/flower demo`, or from a binary that is not
// on PATH, the hint is a command the shell knows.

// commandPlaceholder is where a text names the command.
const commandPlaceholder = "{flower}"

var (
	invokedOnce sync.Once
	invoked     = "flower"
)

// commandName is the command that runs this flower again: "flower" when
// that is what PATH finds, `go run ./cmd/flower` under go run, else the
// executable's path. It is worked out once, from this process.
func commandName() string {
	invokedOnce.Do(func() {
		exe, _ := os.Executable()
		invoked = invocation(invocationFacts{
			Arg0:     os.Args[0],
			Exe:      exe,
			Args:     os.Args[1:],
			Parent:   parentCommandLine(),
			LookPath: exec.LookPath,
		})
	})
	return invoked
}

// invocationFacts are what invocation reads, apart so that a test gives
// its own.
type invocationFacts struct {
	Arg0 string // os.Args[0]: what the parent executed
	Exe  string // os.Executable
	Args []string
	// Parent is the parent process's command line, nil when it cannot
	// be read (no /proc).
	Parent   []string
	LookPath func(string) (string, error)
}

// invocation decides the command name from f.
func invocation(f invocationFacts) string {
	if run := goRunPrefix(f.Parent, f.Args); run != "" {
		return run
	}
	if isGoBuildExecutable(f.Exe) {
		// go run, its command line unknown: the package's usual path
		// from the module's root.
		return "go run ./cmd/" + filepath.Base(f.Exe)
	}
	base := filepath.Base(f.Arg0)
	if f.Arg0 == "" || base == "." || base == string(filepath.Separator) {
		return shellQuote(f.Exe)
	}
	if f.LookPath != nil {
		if found, err := f.LookPath(base); err == nil && sameFile(found, f.Exe) {
			return base
		}
	}
	// Not what PATH finds under its name: the path, made absolute so
	// that the hint works from any directory.
	p := f.Arg0
	if !strings.ContainsRune(p, filepath.Separator) {
		p = f.Exe
	}
	if abs, err := filepath.Abs(p); err == nil {
		p = abs
	}
	return shellQuote(p)
}

// goRunPrefix is "go run PKG" (with go run's own flags) when parent is the
// go command running this process with args, else "".
func goRunPrefix(parent, args []string) string {
	if len(parent) < 3 || filepath.Base(parent[0]) != "go" || parent[1] != "run" || len(parent) < 3+len(args) {
		return ""
	}
	head, tail := parent[:len(parent)-len(args)], parent[len(parent)-len(args):]
	for i := range args {
		if tail[i] != args[i] {
			return ""
		}
	}
	words := []string{"go"}
	for _, w := range head[1:] {
		words = append(words, shellQuote(w))
	}
	return strings.Join(words, " ")
}

// isGoBuildExecutable says exe lives where go run puts the program it
// built: a go-build folder in the temp directory, removed when go run
// ends, so its path is no command to give anyone.
func isGoBuildExecutable(exe string) bool {
	dir := filepath.Dir(exe)
	return filepath.Base(dir) == "exe" && strings.Contains(exe, string(filepath.Separator)+"go-build")
}

// parentCommandLine is the parent process's argv on Linux, else nil.
func parentCommandLine() []string {
	if runtime.GOOS != "linux" {
		return nil
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", os.Getppid()))
	if err != nil || len(b) == 0 {
		return nil
	}
	return strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
}

func sameFile(a, b string) bool {
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}

// named puts the command's name where a help text names the command: the
// word flower standing alone, never inside a path, a module or a folder
// (~/.config/flower/.env, github.com/flowerrun/flower, .flower), nor a
// possessive (flower's files). Replacing every "flower" broke those once
// the name became a path.
func (m *Command) named(s string) string {
	name := m.name()
	if name == "flower" {
		return s
	}
	const word = "flower"
	var b strings.Builder
	for {
		i := strings.Index(s, word)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		end := i + len(word)
		if commandBoundary(s[:i], true) && commandBoundary(s[end:], false) {
			b.WriteString(s[:i])
			b.WriteString(name)
		} else {
			b.WriteString(s[:end])
		}
		s = s[end:]
	}
}

// commandBoundary says whether the text beside the word lets it stand
// alone: before it (before set) the end of what precedes, else the start
// of what follows.
func commandBoundary(side string, before bool) bool {
	if side == "" {
		return true
	}
	var r rune
	if before {
		r, _ = utf8.DecodeLastRuneInString(side)
	} else {
		r, _ = utf8.DecodeRuneInString(side)
		if r == '.' || r == ',' || r == ':' || r == ';' {
			// The end of a sentence, unless a name goes on (flower.go).
			rest := side[1:]
			return rest == "" || rest[0] == ' ' || rest[0] == '\n'
		}
	}
	if r >= utf8.RuneSelf {
		return true // Chinese text and its punctuation around the word
	}
	if before && (r == ':' || r == ',' || r == ';') {
		return true // 用法:flower, a list's next item
	}
	return strings.ContainsRune(" \t\n`\"()[]=|", r)
}
