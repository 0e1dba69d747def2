package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"syscall"

	"github.com/flowerrun/flower"
	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/internal/cliinstall"
	"github.com/flowerrun/flower/internal/lang"
	"github.com/flowerrun/flower/internal/screen"
	"github.com/flowerrun/flower/team"
)

// findCLI is the one lookup of the Claude Code CLI that go, run, once and
// demo pass before anything is written: FLOWER_CLAUDE, flower's pinned
// copy in the user's cache, claude on PATH (a warning outside the tested
// range); with none, the pinned version is installed with npm into the
// cache, after one question on a terminal (yes installs without asking;
// off a terminal without it the error says to add --yes).
func (m *Command) findCLI(ctx context.Context, ui *UI, yes bool) (string, error) {
	env := cliinstall.Env{Getenv: m.getenv}
	f, err := env.Find(ctx)
	var none *cliinstall.NotFoundError
	if errors.As(err, &none) {
		ui.Printf(ui.T("cliNone"), none.Dir)
		if !yes {
			if !ui.Interactive {
				return "", fmt.Errorf(ui.T("cliNoTTY"), cliinstall.Version, none.Dir)
			}
			yes, rerr := ui.askYesNo(ctx, fmt.Sprintf(ui.T("cliAsk"), cliinstall.Version, cliinstall.DownloadMB, cliinstall.InstalledMB), true)
			if rerr != nil && ctx.Err() != nil {
				return "", rerr
			}
			if rerr != nil || !yes {
				return "", errors.New(ui.T("cliDeclined"))
			}
		}
		f, err = env.Install(ctx, func(s string) { ui.Screen.Line(screen.Dim, "- "+s) })
	}
	if err != nil {
		return "", unusableCLI(ui.Lang, err)
	}
	if f.Untested {
		ui.Screen.Line(screen.Yellow, fmt.Sprintf(ui.T("cliUntested"), f.Path, f.Version,
			claude.OldestTestedCLIVersion, claude.NewestTestedCLIVersion))
	}
	return f.Path, nil
}

// unusableCLI is err in lang's words when the CLI named is there and
// cannot be used; other errors as they are.
func unusableCLI(l flower.Lang, err error) error {
	var bad *cliinstall.UnusableError
	if !errors.As(err, &bad) {
		return err
	}
	if bad.Err == nil {
		return fmt.Errorf(text(l, "cliNotExec"), bad.Path)
	}
	why := bad.Err.Error()
	if errors.Is(bad.Err, syscall.ENOEXEC) {
		why = text(l, "cliNotProgram") + ": " + why
	}
	if bad.From == cliinstall.FromPATH {
		return fmt.Errorf(text(l, "cliPathCannotRun"), bad.Path, why)
	}
	return fmt.Errorf(text(l, "cliEnvCannotRun"), bad.Path, why)
}

// isYes reads an answer to a yes/no question whose default is yes.
func isYes(line string) bool {
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "", "y", "yes", "是", "好", "嗯":
		return true
	}
	return false
}

// isExplicitYes reads an answer to a yes/no question whose default is no.
func isExplicitYes(line string) bool { return strings.TrimSpace(line) != "" && isYes(line) }

// runVersion is `flower version` (and --version, -V): flower's build, the
// Claude Code CLI a run would use, found as a run finds it (its
// `--version` is read; nothing is installed, no session starts), and the
// range flower is tested with. It always exits 0: a missing CLI is an
// answer, not a failure.
func (m *Command) runVersion(ctx context.Context, args []string) error {
	var g globals
	fs := newFlagSet("version")
	g.register(fs)
	l := m.argLang(args)
	pos, err := m.parse(fs, m.versionUsage(l), args)
	if err != nil {
		return err
	}
	if err := g.checkLang(); err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageErrorf(text(l, "versionArgs"), m.name(), strings.Join(pos, " "))
	}
	out := m.name() + " " + team.BuildVersion() + "\n"
	env := cliinstall.Env{Getenv: m.getenv}
	f, err := env.Find(ctx)
	var none *cliinstall.NotFoundError
	switch {
	case errors.As(err, &none):
		out += fmt.Sprintf(text(l, "versionNoCLI"), none.Dir, cliinstall.Version) + "\n"
	case err != nil:
		out += fmt.Sprintf(text(l, "versionCLIError"), unusableCLI(l, err)) + "\n"
	default:
		v := f.Version
		if v == "" {
			v = text(l, "versionUnknown")
		}
		from := f.From
		if from == cliinstall.FromCache {
			from = text(l, "versionPinned")
		}
		line := fmt.Sprintf(text(l, "versionCLI"), v, f.Path, from)
		if f.Untested {
			line += text(l, "versionUntested")
		}
		out += line + "\n"
	}
	out += fmt.Sprintf(text(l, "versionTested"), claude.OldestTestedCLIVersion, claude.NewestTestedCLIVersion, cliinstall.Version) + "\n"
	out = screen.SanitizeLines(out)
	if cols := m.stdoutWidth(); cols > 0 {
		// Laid out for the terminal at the blanks: its own wrap broke
		// the paths mid-word. A pipe gets each line whole, for grep.
		var lines []string
		for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
			lines = append(lines, wrapWords(line, cols)...)
		}
		out = strings.Join(lines, "\n") + "\n"
	}
	_, err = io.WriteString(m.Stdout, out)
	return err
}

// argLang is the language of a command line's own words before its flags
// are parsed (help, a flag error): a valid --lang in args, else the
// locale's.
func (m *Command) argLang(args []string) flower.Lang {
	for i, a := range args {
		v, ok := "", false
		switch {
		case a == "--lang" || a == "-lang":
			if i+1 < len(args) {
				v, ok = args[i+1], true
			}
		case strings.HasPrefix(a, "--lang="), strings.HasPrefix(a, "-lang="):
			_, v, ok = strings.Cut(a, "=")
		}
		if ok && lang.Check(flower.Lang(v)) == nil {
			return flower.Lang(v).Canonical()
		}
	}
	return lang.FromLocale(m.getenv)
}
