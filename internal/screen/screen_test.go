package screen

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/flowerrun/flower/internal/screen/screentest"
	"go.uber.org/goleak"
)

// TestMain doubles as the writer process of the pty tests.
func TestMain(m *testing.M) {
	if mode := os.Getenv("SCREEN_HELPER"); mode != "" {
		helper(mode)
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// helper writes to its stdout (a pty) through a Screen: "blocks" writes
// SCREEN_N blocks of three lines tagged SCREEN_TAG; "model" writes one
// line of hostile model text and one of 200 CJK columns.
func helper(mode string) {
	s := New(os.Stdout)
	defer s.Close()
	s.SetPrompt("> ")
	switch mode {
	case "blocks":
		tag := os.Getenv("SCREEN_TAG")
		n, _ := strconv.Atoi(os.Getenv("SCREEN_N"))
		for i := range n {
			s.Block(Plain, fmt.Sprintf("%s %04d a %s", tag, i, strings.Repeat("x", 30)),
				fmt.Sprintf("%s %04d b %s", tag, i, strings.Repeat("y", 30)),
				fmt.Sprintf("%s %04d c %s", tag, i, strings.Repeat("z", 30)))
		}
	case "model":
		s.Line(Green, "model: \x1b]0;pwned\x07 title \x1b[31mred\x1b[0m \x1b[2J clear \x07bell\u009b1;1H end")
		s.Line(Plain, strings.Repeat("中", 100))
	case "typed":
		// The terminal's echo of a typed line and its Enter, as the line
		// discipline writes them, then the screen's Echo.
		s.SetPrompt("(type = add to the request) > ")
		s.SetStatus("- status")
		s.Line(Plain, "before")
		os.Stdout.WriteString("add a README\r\n")
		s.Echo("add a README")
		os.Stdout.WriteString("\r\n") // an empty line
		s.Echo("")
		s.Line(Plain, "after")
		os.Exit(0)
	case "footer":
		// A prompt wider than 80 columns (the English idle hint), a status
		// line changing between lines, long lines that must wrap.
		s.SetPrompt("(type = add to the request, delivered at the next checkpoint; start with ? = a side question that does not disturb it) > ")
		for i := range 30 {
			if os.Getenv("SCREEN_STATUS") != "" {
				s.SetStatus(fmt.Sprintf("- work · round 1/3 · 0:%02d · tool Bash", i))
			}
			if i%10 == 9 {
				s.Line(Plain, fmt.Sprintf("line %02d %s end", i, strings.Repeat("w ", 90)))
				continue
			}
			s.Line(Plain, fmt.Sprintf("line %02d", i))
		}
		if os.Getenv("SCREEN_STATUS") != "" {
			s.SetStatus("- work · round 1/3 · 0:30 · tool Bash")
		}
		if os.Getenv("SCREEN_KEEP") != "" {
			os.Exit(0) // the footer stays, as while a run waits for a line
		}
		return // Close erases the footer
	}
	s.SetPrompt("")
}

// runOnPTY starts the helpers with one pty as their stdout and returns what
// the terminal received once all of them ended.
func runOnPTY(t *testing.T, cols uint16, envs ...[]string) string {
	t.Helper()
	master, slave, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	if err := pty.Setsize(master, &pty.Winsize{Rows: 24, Cols: cols}); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	done := make(chan struct{})
	go func() { io.Copy(&out, master); close(done) }()
	var cmds []*exec.Cmd
	for _, env := range envs {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), env...)
		cmd.Stdout, cmd.Stderr = slave, os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	for _, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatalf("helper: %v", err)
		}
	}
	slave.Close()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the pty never drained")
	}
	return out.String()
}

// terminalLines replays what a terminal shows for the scrolled-off lines:
// each "\r\n"-ended line after its last erase, prompts dropped.
func terminalLines(raw string) []string {
	var lines []string
	for _, l := range strings.Split(raw, "\n") {
		l = strings.TrimRight(l, "\r")
		if i := strings.LastIndex(l, eraseFooter); i >= 0 {
			l = l[i+len(eraseFooter):]
		}
		if l == "" || l == "> " {
			continue
		}
		lines = append(lines, l)
	}
	return lines
}

func TestTwoProcessesOnOneTerminalNeverMixTheirLines(t *testing.T) {
	const n = 300
	raw := runOnPTY(t, 120,
		[]string{"SCREEN_HELPER=blocks", "SCREEN_TAG=AAA", "SCREEN_N=" + strconv.Itoa(n)},
		[]string{"SCREEN_HELPER=blocks", "SCREEN_TAG=BBB", "SCREEN_N=" + strconv.Itoa(n)})
	lines := terminalLines(raw)
	whole := regexp.MustCompile(`^(AAA|BBB) (\d{4}) ([abc]) (x{30}|y{30}|z{30})$`)
	if len(lines) != 2*3*n {
		t.Fatalf("got %d lines, want %d", len(lines), 2*3*n)
	}
	for i := 0; i < len(lines); i += 3 {
		var first []string
		for j, part := range []string{"a", "b", "c"} {
			m := whole.FindStringSubmatch(lines[i+j])
			if m == nil {
				t.Fatalf("line %d is torn: %q", i+j, lines[i+j])
			}
			if j == 0 {
				first = m
			}
			if m[1] != first[1] || m[2] != first[2] || m[3] != part {
				t.Fatalf("lines %d-%d: a block was split by the other process: %q", i, i+2, lines[i:i+3])
			}
		}
	}
}

func TestModelEscapesArriveSanitizedAndCJKWrapsAtTheWidth(t *testing.T) {
	raw := runOnPTY(t, 120, []string{"SCREEN_HELPER=model"})
	lines := terminalLines(raw)
	if len(lines) != 3 {
		t.Fatalf("want 3 lines, got %q", lines)
	}
	want := "\x1b[32mmodel:  title red  clear bell end\x1b[0m"
	if lines[0] != want {
		t.Errorf("model line:\n got %q\nwant %q (only flower's green may pass)", lines[0], want)
	}
	// 100 CJK characters are 200 columns: on 120 columns, 60 then 40,
	// nothing cut.
	if lines[1] != strings.Repeat("中", 60) || lines[2] != strings.Repeat("中", 40) {
		t.Errorf("CJK line wrapped as %q", lines[1:])
	}
	if strings.Contains(raw, "pwned") || strings.Contains(raw, "\x1b[2J") || strings.Contains(raw, "\x07") {
		t.Errorf("an escape sequence of the model reached the terminal: %q", raw)
	}
}

func TestNotATerminalGetsPlainUncutLines(t *testing.T) {
	var b bytes.Buffer
	s := NewWriter(&b)
	s.SetPrompt("> ")
	long := strings.Repeat("中", 100)
	s.Block(Red, "\x1b[1mbold\x1b[0m\tok", long)
	sc := bufio.NewScanner(&b)
	var got []string
	for sc.Scan() {
		got = append(got, sc.Text())
	}
	if len(got) != 2 || got[0] != "bold ok" || got[1] != long {
		t.Errorf("plain lines: %q", got)
	}
}

func TestSanitize(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"plain 中文", "plain 中文"},
		{"a\x1b[38;5;196mb", "ab"},
		{"osc \x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\", "osc link"},
		{"unterminated \x1b]0;title", "unterminated "},
		{"dcs \x1bPq#0;2;0;0;0\x1b\\ end", "dcs  end"},
		{"keypad \x1b=x", "keypad x"},
		{"cr\rlf\nnul\x00del\x7f", "crlfnuldel"},
		{"c1 \u0085\u009b2Jx", "c1 x"},
		{"bidi \u202eevil\u202c", "bidi evil"},
		{"isolates \u2066a\u2069 marks \u200eb\u200f\u061cc", "isolates a marks bc"},
		{"bad \xff utf8", "bad \ufffd utf8"},
		{"trailing esc \x1b", "trailing esc "},
	} {
		if got := Sanitize(c.in); got != c.want {
			t.Errorf("Sanitize(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestWidth(t *testing.T) {
	for _, c := range []struct {
		s    string
		cols int
	}{{"abc", 3}, {"中文", 4}, {"ｈｉ", 4}, {"é", 2}, {"e\u0301", 1}, {"—", 2}, {"😀", 2}, {"", 0}} {
		if got := Columns(c.s); got != c.cols {
			t.Errorf("Columns(%q) = %d, want %d", c.s, got, c.cols)
		}
	}
	if got := Cut("abcdefghij", 8); got != "abcde..." {
		t.Errorf("Cut latin: %q", got)
	}
	if got := Cut("中中中中中", 8); got != "中中..." {
		t.Errorf("Cut CJK: %q", got)
	}
	if got := Cut("short", 40); got != "short" {
		t.Errorf("Cut fitting: %q", got)
	}
	for _, c := range []struct {
		s    string
		cols int
		want []string
	}{
		{"short", 10, []string{"short"}},
		{"one two three four", 9, []string{"one two", "three", "four"}},
		{"  | a subagent line that wraps", 12, []string{"  | a", "  | subagent", "  | line", "  | that", "  | wraps"}},
		{"中中中中中", 4, []string{"中中", "中中", "中"}},
		{"abcdefghij", 4, []string{"abcd", "efgh", "ij"}},
		{"中", 1, []string{"中"}},
		{"anything", 0, []string{"anything"}},
	} {
		if got := WrapRow(c.s, c.cols); !slices.Equal(got, c.want) {
			t.Errorf("WrapRow(%q, %d) = %q, want %q", c.s, c.cols, got, c.want)
		}
	}
	if got := Pad("现在在做", 10); got != "现在在做  " {
		t.Errorf("Pad: %q", got)
	}
}

func FuzzSanitize(f *testing.F) {
	f.Add("a\x1b[31mb\x1b]0;t\x07c")
	f.Fuzz(func(t *testing.T, s string) {
		out := Sanitize(s)
		if strings.ContainsAny(out, "\x1b\x07\r\n\x00") || strings.ContainsRune(out, 0x9b) {
			t.Fatalf("Sanitize(%q) = %q keeps a control", s, out)
		}
		if Sanitize(out) != out {
			t.Fatalf("Sanitize is not idempotent on %q", s)
		}
	})
}

func TestTheFooterLeavesNothingBehindAtAnyWidth(t *testing.T) {
	for _, c := range []struct{ status, keep bool }{{false, true}, {true, true}, {true, false}} {
		for _, cols := range []int{10, 40, 80, 160} {
			status := c.status && cols >= footerMinWidth
			t.Run(fmt.Sprintf("status %v, kept %v, %d columns", c.status, c.keep, cols), func(t *testing.T) {
				env := []string{"SCREEN_HELPER=footer"}
				if c.keep {
					env = append(env, "SCREEN_KEEP=1")
				}
				if c.status {
					env = append(env, "SCREEN_STATUS=1")
				}
				raw := runOnPTY(t, uint16(cols), env)
				grid := screentest.Render(raw, cols, 200)
				for len(grid) > 0 && grid[len(grid)-1] == "" {
					grid = grid[:len(grid)-1]
				}
				prompts, statuses := 0, 0
				var text []string
				for _, row := range grid {
					switch {
					case strings.HasPrefix(row, "(typ"):
						prompts++
					case strings.HasPrefix(row, "- work · round"):
						statuses++
					default:
						text = append(text, row)
					}
					if Columns(row) > cols-0 {
						t.Errorf("row wider than %d: %q", cols, row)
					}
				}
				wantPrompts, wantStatus := 0, 0
				if c.keep {
					wantPrompts = 1
					if last := grid[len(grid)-1]; !strings.HasPrefix(last, "(typ") || !strings.HasSuffix(last, ">") {
						t.Errorf("the last row is not the prompt:\n%s", strings.Join(grid, "\n"))
					}
				}
				if prompts != wantPrompts {
					t.Errorf("%d prompts on the screen, want %d:\n%s", prompts, wantPrompts, strings.Join(grid, "\n"))
				}
				if status && c.keep {
					wantStatus = 1
					if above := grid[len(grid)-2]; !strings.HasPrefix(above, "- work · round 1/3 · 0:30") {
						t.Errorf("the status line above the prompt is %q", above)
					}
				}
				if statuses != wantStatus {
					t.Errorf("%d status lines on the screen, want %d:\n%s", statuses, wantStatus, strings.Join(grid, "\n"))
				}
				// Every output line once, the long ones whole (wrapped).
				joined := strings.Join(text, " ")
				for i := range 30 {
					if n := strings.Count(joined, fmt.Sprintf("line %02d", i)); n != 1 {
						t.Errorf("line %02d shown %d times:\n%s", i, n, strings.Join(grid, "\n"))
					}
				}
				if n := strings.Count(joined, "end"); n != 3 {
					t.Errorf("%d long lines shown whole, want 3:\n%s", n, strings.Join(grid, "\n"))
				}
			})
		}
	}
}

func TestATypedLineStaysOnceAboveTheFooter(t *testing.T) {
	raw := runOnPTY(t, 80, []string{"SCREEN_HELPER=typed"})
	grid := screentest.Render(raw, 80, 24)
	var rows []string
	for _, r := range grid {
		if r != "" {
			rows = append(rows, r)
		}
	}
	want := []string{"before", "> add a README", "after", "- status", "(type = add to the request) >"}
	if !slices.Equal(rows, want) {
		t.Errorf("screen rows:\n%s\nwant\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"))
	}
}

func TestSanitizeLinesKeepsLinesAndDropsControls(t *testing.T) {
	in := "first \x1b]0;title\x07line\nsecond \x1b]52;c;cHduZWQ=\x07\x1b[2J\u202eevil\u202c\r\n\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\\n"
	want := "first line\nsecond evil\nlink\n"
	if got := SanitizeLines(in); got != want {
		t.Errorf("SanitizeLines = %q, want %q", got, want)
	}
	if got := SanitizeLines("clean\ntwo lines\n"); got != "clean\ntwo lines\n" {
		t.Errorf("clean text changed: %q", got)
	}
}
