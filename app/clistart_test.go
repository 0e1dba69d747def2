package app

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A FLOWER_CLAUDE the system refuses to start (text without #!, a binary
// of another machine) stopped nothing: every attempt failed "(unknown)"
// and was retried, five of them over two minutes, before the run failed.
// Now the run says so before anything is written, in the person's
// language, and `flower version` says the same. Through the built binary
// on a pty, English and Chinese, 80 and 160 columns.
func TestACLIThatCannotStartStopsTheRunAtOnce(t *testing.T) {
	t.Parallel()
	junk := filepath.Join(t.TempDir(), "claude")
	if err := os.WriteFile(junk, []byte("not a program\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, l := range locales {
		for _, cols := range []uint16{80, 160} {
			t.Run(fmt.Sprintf("%s-%d", l.name, cols), func(t *testing.T) {
				t.Parallel()
				ws := t.TempDir()
				env := hermeticEnv(t, l.locale, "FLOWER_CLAUDE="+junk, "ANTHROPIC_API_KEY=sk-test", "ANTHROPIC_BASE_URL=http://127.0.0.1:1")
				want := map[string]string{
					"en": "FLOWER_CLAUDE=" + junk + " cannot be run (not a program for this machine: exec format error): point it at the claude binary",
					"zh": "FLOWER_CLAUDE=" + junk + " 启动不了(不是这台机器能运行的程序:exec format error):让它指向 claude 程序",
				}[l.name]
				p := startPTYCols(t, cols, env, "-w", ws, "write hello.txt")
				// The bound only stops a hang; before, the run retried for
				// two minutes.
				if code := p.exitWithin(t, time.Minute); code != ExitFailure {
					t.Errorf("exit %d, want %d", code, ExitFailure)
				}
				s := p.screen()
				if !strings.Contains(flat(s), flat(want)) {
					t.Errorf("the screen lacks %q:\n%s", want, s)
				}
				for _, retry := range []string{"attempt 1 failed", "第 1 次失败"} {
					if strings.Contains(s, retry) {
						t.Errorf("the screen shows a retry (%q):\n%s", retry, s)
					}
				}
				checkLanguage(t, l.english, s)
				if entries, _ := os.ReadDir(ws); len(entries) > 0 {
					t.Errorf("the workspace holds %d entries (%s…), want nothing written", len(entries), entries[0].Name())
				}
				v := startPTYCols(t, cols, env, "version")
				if code := v.exitWithin(t, time.Minute); code != 0 {
					t.Errorf("flower version: exit %d, want 0", code)
				}
				if vs := v.screen(); !strings.Contains(flat(vs), flat(want)) {
					t.Errorf("flower version lacks %q:\n%s", want, vs)
				}
			})
		}
	}
}
