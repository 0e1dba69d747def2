package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// events is a go test -json stream of two packages, one with a failing
// test, as go 1.26 writes it.
const events = `{"Action":"start","Package":"m/a"}
{"Action":"run","Package":"m/a","Test":"TestSlow"}
{"Action":"output","Package":"m/a","Test":"TestSlow","Output":"=== RUN   TestSlow\n"}
{"Action":"output","Package":"m/a","Test":"TestSlow","Output":"--- PASS: TestSlow (30.00s)\n"}
{"Action":"pass","Package":"m/a","Test":"TestSlow","Elapsed":30}
{"Action":"run","Package":"m/a","Test":"TestSub"}
{"Action":"run","Package":"m/a","Test":"TestSub/case"}
{"Action":"pass","Package":"m/a","Test":"TestSub/case","Elapsed":2}
{"Action":"pass","Package":"m/a","Test":"TestSub","Elapsed":2.5}
{"Action":"output","Package":"m/a","Output":"PASS\n"}
{"Action":"output","Package":"m/a","Output":"test-times: cpu 61.25s (user 50.00s, system 11.25s) in the test binary and the processes it waited for\n"}
{"Action":"output","Package":"m/a","Output":"ok  \tm/a\t32.600s\n"}
{"Action":"pass","Package":"m/a","Elapsed":32.6}
{"Action":"start","Package":"m/b"}
{"Action":"run","Package":"m/b","Test":"TestBroken"}
{"Action":"output","Package":"m/b","Test":"TestBroken","Output":"=== RUN   TestBroken\n"}
{"Action":"output","Package":"m/b","Test":"TestBroken","Output":"    b_test.go:9: the reason it broke\n"}
{"Action":"output","Package":"m/b","Test":"TestBroken","Output":"--- FAIL: TestBroken (4.00s)\n"}
{"Action":"fail","Package":"m/b","Test":"TestBroken","Elapsed":4}
{"Action":"run","Package":"m/b","Test":"TestFine"}
{"Action":"output","Package":"m/b","Test":"TestFine","Output":"    quiet line of a passing test\n"}
{"Action":"pass","Package":"m/b","Test":"TestFine","Elapsed":1}
{"Action":"output","Package":"m/b","Output":"FAIL\tm/b\t5.100s\n"}
{"Action":"fail","Package":"m/b","Elapsed":5.1}
`

func TestTheTableListsPackagesByWallTimeAndTheSlowestTests(t *testing.T) {
	f := filepath.Join(t.TempDir(), "run.json")
	if err := os.WriteFile(f, []byte(events), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code := run([]string{"-n", "2", f}, nil, &out, &errb)
	if code != 1 {
		t.Errorf("exit %d for a run with a failed test, want 1 (stderr %q)", code, errb.String())
	}
	got := out.String()
	for _, want := range []string{
		"     32.6      61.2      2  a\n",                        // two top-level tests: the subtest is its parent's
		"      5.1         -      2  b  FAIL (1 tests failed)\n", // its binary ran without -exec-cpu
		"     37.7      61.2      4  all packages",
		"the 2 slowest tests",
		"     30.0  a TestSlow\n",
		"      4.0  b TestBroken  FAIL\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the table lacks %q:\n%s", want, got)
		}
	}
	if strings.Index(got, "  a\n") > strings.Index(got, "  b  FAIL") {
		t.Errorf("packages are not listed slowest first:\n%s", got)
	}
	if strings.Contains(got, "TestSub") {
		t.Errorf("-n 2 listed a third test:\n%s", got)
	}
}

func TestStreamPrintsWhatGoTestWouldAndKeepsTheJSON(t *testing.T) {
	save := filepath.Join(t.TempDir(), "saved.json")
	var out, errb bytes.Buffer
	code := run([]string{"-stream", "-o", save}, strings.NewReader(events), &out, &errb)
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	got := out.String()
	for _, want := range []string{"ok  \tm/a\t32.600s\n", "b_test.go:9: the reason it broke", "--- FAIL: TestBroken", "FAIL\tm/b\t5.100s"} {
		if !strings.Contains(got, want) {
			t.Errorf("the stream lacks %q:\n%s", want, got)
		}
	}
	for _, hidden := range []string{"quiet line of a passing test", "--- PASS: TestSlow", "PASS\n", "test-times: cpu"} {
		if strings.Contains(got, hidden) {
			t.Errorf("the stream shows %q, which go test hides for a passing test:\n%s", hidden, got)
		}
	}
	if saved, err := os.ReadFile(save); err != nil || string(saved) != events {
		t.Errorf("-o kept %d bytes (%v), want the %d read", len(saved), err, len(events))
	}
}

// A long log's tail is what a reader (CI's summary) sees: after the table,
// each failed test is named again with the first line of each message,
// and a parent whose subtest failed is not named for nothing.
func TestTheStreamEndsWithWhyTestsFailed(t *testing.T) {
	long := strings.Repeat("x", 300)
	sub := `{"Action":"run","Package":"m/b","Test":"TestParent"}
{"Action":"run","Package":"m/b","Test":"TestParent/zh"}
{"Action":"output","Package":"m/b","Test":"TestParent/zh","Output":"    p_test.go:21: never saw \"done\" in:\n"}
{"Action":"output","Package":"m/b","Test":"TestParent/zh","Output":"        a screen line\n"}
{"Action":"output","Package":"m/b","Test":"TestParent/zh","Output":"    p_test.go:30: ` + long + `\n"}
{"Action":"fail","Package":"m/b","Test":"TestParent/zh","Elapsed":3}
{"Action":"output","Package":"m/b","Test":"TestParent","Output":"--- FAIL: TestParent (0.00s)\n"}
{"Action":"fail","Package":"m/b","Test":"TestParent","Elapsed":3}
`
	in := strings.Replace(events, `{"Action":"output","Package":"m/b","Output":"FAIL`, sub+`{"Action":"output","Package":"m/b","Output":"FAIL`, 1)
	var out, errb bytes.Buffer
	if code := run([]string{"-stream", "-n", "0"}, strings.NewReader(in), &out, &errb); code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	got := out.String()
	i := strings.Index(got, "all packages, one after another")
	if i < 0 {
		t.Fatalf("no table:\n%s", got)
	}
	want := "\nwhy tests failed (the first line of each message; each in full above):\n" +
		"--- b TestBroken\n    b_test.go:9: the reason it broke\n" +
		"--- b TestParent/zh\n    p_test.go:21: never saw \"done\" in:\n    p_test.go:30: " + long[:240-len("p_test.go:30: ")] + "…\n"
	if !strings.HasSuffix(got, want) {
		t.Errorf("the stream's end is not the recap after the table:\n%s\nwant it to end with:\n%s", got[i:], want)
	}
}

func TestAStreamCutShortNamesTheTestsThatNeverEnded(t *testing.T) {
	cut := events[:strings.Index(events, `{"Action":"fail","Package":"m/b","Test":"TestBroken"`)]
	var out, errb bytes.Buffer
	if code := run([]string{"-stream"}, strings.NewReader(cut), &out, &errb); code != 1 {
		t.Errorf("exit %d for a cut stream, want 1", code)
	}
	got := out.String()
	if !strings.Contains(got, "--- m/b TestBroken never ended:") || !strings.Contains(got, "the reason it broke") ||
		!strings.Contains(got, "1 tests never ended") {
		t.Errorf("the cut test and its output are not named:\n%s", got)
	}
}

func TestBadInputSaysWhereAndExits2(t *testing.T) {
	f := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(f, []byte(`{"Action":"run","Package":"m/a"}`+"\n{not json\n"), 0o644)
	var out, errb bytes.Buffer
	if code := run([]string{f}, nil, &out, &errb); code != 2 || !strings.Contains(errb.String(), "bad.json: line 2") {
		t.Errorf("exit %d, stderr %q: want 2 naming the file and line", code, errb.String())
	}
	errb.Reset()
	if code := run([]string{filepath.Join(t.TempDir(), "missing.json")}, nil, &out, &errb); code != 2 || !strings.Contains(errb.String(), "missing.json") {
		t.Errorf("a missing file: exit %d, stderr %q", code, errb.String())
	}
	errb.Reset()
	if code := run(nil, nil, &out, &errb); code != 2 || !strings.Contains(errb.String(), "Usage: scripts/test-times") {
		t.Errorf("no file: exit %d, stderr %q: want the usage", code, errb.String())
	}
}

// The -exec-cpu wrapper runs the binary with its arguments, keeps its exit
// status, and counts the CPU of the processes the binary waited for: a
// child that spins for about a second of CPU shows in the line it prints.
// The spin is a count, not a clock: a child that spun for two seconds of
// wall time got 0.2 s of CPU on a loaded machine (ci25).
func TestExecCPUCountsTheBinaryAndItsChildrenAndKeepsItsStatus(t *testing.T) {
	spin := `sh -c 'i=0; while [ $i -lt 500000 ]; do i=$((i+1)); done'; exit 3`
	var out, errb bytes.Buffer
	code := run([]string{"-exec-cpu", "/bin/sh", "-c", spin}, nil, &out, &errb)
	if code != 3 {
		t.Errorf("exit %d, want the program's 3 (stderr %q)", code, errb.String())
	}
	secs, ok := cpuSeconds(strings.TrimSuffix(out.String(), "\n"))
	if !ok || secs < 0.5 {
		t.Errorf("the wrapper printed %q: want a cpu line of at least the child's spin (about a second)", out.String())
	}
	if code := run([]string{"-exec-cpu", filepath.Join(t.TempDir(), "missing")}, nil, &out, &errb); code != 2 || !strings.Contains(errb.String(), "missing") {
		t.Errorf("a program that cannot start: exit %d, stderr %q", code, errb.String())
	}
	if code := run([]string{"-exec-cpu"}, nil, &out, &errb); code != 2 || !strings.Contains(errb.String(), "needs the program") {
		t.Errorf("no program: exit %d, stderr %q", code, errb.String())
	}
}

// go test's timeout sends SIGQUIT to the program it started: the binary
// under the wrapper must get it (its goroutine dump says what hung).
func TestExecCPUPassesSignalsToTheBinary(t *testing.T) {
	dir := t.TempDir()
	ready := filepath.Join(dir, "ready")
	script := `trap 'echo got-quit; exit 7' QUIT; : > ` + ready + `; while :; do sleep 0.05; done`
	var out, errb bytes.Buffer
	done := make(chan int, 1)
	go func() { done <- run([]string{"-exec-cpu", "/bin/sh", "-c", script}, nil, &out, &errb) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(ready); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the script never started")
		}
		time.Sleep(20 * time.Millisecond)
	}
	syscall.Kill(os.Getpid(), syscall.SIGQUIT)
	select {
	case code := <-done:
		if code != 7 {
			t.Errorf("exit %d, want the script's 7 after its SIGQUIT trap", code)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the binary never got the SIGQUIT")
	}
}
