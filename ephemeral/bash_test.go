package ephemeral

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// bashPrelude makes every command bash would run land in a log instead:
// PATH points nowhere and the builtin verbs are disabled, so each one
// reaches command_not_found_handle, which logs its argv and returns $RC.
// The handler runs apart from the shell, so enabling printf there to log
// leaves it disabled for the command line.
const bashPrelude = `enable -n echo pwd type command jobs test [ kill printf cd
command_not_found_handle() { enable printf; builtin printf '%s\0' "$#" "$@" >> "$LOGFILE"; return "$RC"; }
`

// TestBashRunsOnlyWhatIsSaw runs every accepted table case and fuzz
// corpus entry through a real bash whose commands only log themselves, and
// checks that bash ran nothing but the segments Is checked, with the same
// words, and wrote no file. Each runs twice, with commands succeeding and
// failing, to take both sides of && and ||.
func TestBashRunsOnlyWhatIsSaw(t *testing.T) {
	bash := needBash(t, "run the shell cross-check")
	dir := t.TempDir()
	prelude := filepath.Join(dir, "prelude")
	if err := os.WriteFile(prelude, []byte(bashPrelude), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range acceptedInputs(t) {
		segments, _ := split(strings.Trim(cmd, " \t\n"))
		for _, rc := range []string{"0", "1"} {
			box := filepath.Join(dir, "box"+rc)
			logFile := filepath.Join(dir, "log")
			if err := os.RemoveAll(box); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(box, 0o700); err != nil {
				t.Fatal(err)
			}
			os.Remove(logFile)

			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			run := exec.CommandContext(ctx, bash, "-c", cmd)
			run.Dir = box
			run.Env = []string{"PATH=/nonexistent", "BASH_ENV=" + prelude, "LOGFILE=" + logFile, "RC=" + rc, "HOME=" + box}
			_ = run.Run() // the exit status is the commands' own
			cancel()

			log, _ := os.ReadFile(logFile)
			for _, argv := range parseArgvLog(t, log) {
				if !matchesSegment(argv, segments) {
					t.Errorf("Is(%q) = true, but bash ran %q", cmd, argv)
				}
			}
			if entries, _ := os.ReadDir(box); len(entries) > 0 {
				t.Errorf("Is(%q) = true, but bash created %s", cmd, entries[0].Name())
			}
		}
	}
}

// acceptedInputs are the tables' commands, FuzzIs's corpus, and the
// commands FuzzVerbTable's seeds and corpus generate, that Is accepts.
func acceptedInputs(t *testing.T) []string {
	var all []string
	for _, table := range [][]glanceCase{cases, bypasses, glances} {
		for _, c := range table {
			all = append(all, c.cmd)
		}
	}
	all = append(all, verbTableSeedCommands()...)
	files, _ := filepath.Glob(filepath.Join("testdata", "fuzz", "FuzzIs", "*"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if quoted, ok := strings.CutPrefix(line, "string("); ok {
				if s, err := strconv.Unquote(strings.TrimSuffix(quoted, ")")); err == nil {
					all = append(all, s)
				}
			}
		}
	}
	files, _ = filepath.Glob(filepath.Join("testdata", "fuzz", "FuzzVerbTable", "*"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if quoted, ok := strings.CutPrefix(line, "[]byte("); ok {
				if s, err := strconv.Unquote(strings.TrimSuffix(quoted, ")")); err == nil {
					all = append(all, generateCommand([]byte(s)))
				}
			}
		}
	}
	var accepted []string
	for _, cmd := range all {
		if Is(cmd) {
			accepted = append(accepted, cmd)
		}
	}
	return accepted
}

// parseArgvLog reads records of "argc\0arg\0arg\0…".
func parseArgvLog(t *testing.T, log []byte) [][]string {
	fields := strings.Split(string(log), "\x00")
	var all [][]string
	for i := 0; i+1 < len(fields); {
		n, err := strconv.Atoi(fields[i])
		if err != nil || i+1+n > len(fields) {
			t.Fatalf("unreadable log %q", log)
		}
		all = append(all, fields[i+1:i+1+n])
		i += 1 + n
	}
	return all
}

// matchesSegment reports whether argv is one of the segments: the same
// words, except that a word the shell expands (a glob, $VAR, ~) only needs
// its segment's verb to match.
func matchesSegment(argv []string, segments []segment) bool {
	for _, seg := range segments {
		s := seg.words
		if s[0].text != argv[0] {
			continue
		}
		expanded := false
		for _, w := range s {
			expanded = expanded || w.uncertain() || strings.HasPrefix(w.text, "~")
		}
		if expanded || equalTexts(s, argv) {
			return true
		}
	}
	return false
}

func equalTexts(words []word, argv []string) bool {
	if len(words) != len(argv) {
		return false
	}
	for i, w := range words {
		if w.text != argv[i] {
			return false
		}
	}
	return true
}

// needBash is bash's path. Without bash the test fails under CI and is
// skipped elsewhere, saying how to run it.
func needBash(t *testing.T, to string) string {
	t.Helper()
	bash, err := exec.LookPath("bash")
	if err == nil {
		return bash
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("CI must have bash, to %s", to)
	}
	t.Skipf("no bash on this machine: install bash to %s", to)
	return ""
}
