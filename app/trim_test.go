package app

import (
	"fmt"
	"strings"
	"testing"

	"github.com/creack/pty"
	"github.com/flowerrun/flower"
)

// The Runtime Drive makes trims exactly when the command line says so:
// --no-trim (and a workflow program's default) must reach the Runtime,
// not only the parsed flag.
func TestTheRuntimeTrimsOnlyWhenTheCommandLineSaysSo(t *testing.T) {
	for _, trim := range []bool{false, true} {
		ws := t.TempDir()
		cfg := Config{Workspace: ws, RunDir: t.TempDir(), Trim: trim}
		t.Setenv("ANTHROPIC_API_KEY", "sk-fake")
		rt, err := flower.New(ws, cfg.RuntimeOptions(nil)...)
		if err != nil {
			t.Fatal(err)
		}
		if rt.Trimming() != trim {
			t.Errorf("Config.Trim %v: the Runtime trims %v", trim, rt.Trimming())
		}
		rt.Close()
	}
}

// Through the built binary on a terminal, English and Chinese, 80 and 160
// columns: -v says what the Runtime will do with resumed sessions.
func TestNoTrimReachesTheRuntimeThroughTheBinary(t *testing.T) {
	t.Parallel()
	srv := ownflowServer(t)
	env := binEnv(t, srv)
	says := map[string][2]string{
		"en": {"resumed sessions are not trimmed", "resumed sessions are trimmed of bulky old tool results"},
		"zh": {"续接会话时不修剪", "续接会话时修剪旧的大块工具结果"},
	}
	for _, lang := range []string{"en", "zh"} {
		for _, cols := range []uint16{80, 160} {
			for _, tc := range []struct {
				name string
				bin  string
				args []string
				trim bool
			}{
				{"flower --no-trim", flowerBin, []string{"--no-trim"}, false},
				{"flower (go trims by default)", flowerBin, nil, true},
				{"a workflow program (trim off by default)", ownflowBin, nil, false},
				{"a workflow program -T", ownflowBin, []string{"-T"}, true},
			} {
				t.Run(fmt.Sprintf("%s/%d/%s", lang, cols, tc.name), func(t *testing.T) {
					args := append([]string{"-v", "-w", t.TempDir(), "--lang", lang, "--timeout", "0"}, tc.args...)
					p := startPTYSize(t, tc.bin, env, &pty.Winsize{Rows: 40, Cols: cols}, append(args, "say hello")...)
					want, not := says[lang][0], says[lang][1]
					if tc.trim {
						want, not = not, want
					}
					p.expect(t, want)
					if s := p.screen(); strings.Contains(s, not) {
						t.Errorf("the screen says both:\n%s", s)
					}
				})
			}
		}
	}
}
