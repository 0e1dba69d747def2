// Command testtimes reads `go test -json` output and tells where the
// minutes of a test run went: each package's wall time and the slowest
// tests. scripts/test streams every pass through it (-stream) and prints
// the table at the end; scripts/test-times prints it for saved files.
//
//	go test -json ./... > run.json; scripts/test-times run.json
//	go test -json ./... | scripts/test-times -stream -o run.json
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("test-times", flag.ContinueOnError)
	fs.SetOutput(stderr)
	stream := fs.Bool("stream", false, "read go test -json on standard input and print it as go test does (failed tests' output in full), then the table")
	save := fs.String("o", "", "with -stream: also write the JSON read to this file")
	top := fs.Int("n", 10, "how many of the slowest tests to list")
	cpu := fs.Bool("exec-cpu", false, "run the program given after the flags (a test binary: go test -exec 'test-times -exec-cpu') and print the CPU time it and its children used, for the table's cpu column")
	fs.Usage = func() {
		fmt.Fprint(stderr, `Usage: scripts/test-times [-n N] FILE.json...
       go test -json ./... | scripts/test-times -stream [-o FILE.json]
       go test -json -exec 'test-times -exec-cpu' ./... | scripts/test-times -stream

Where the minutes of a test run went: each package's wall time (as go test
measured it) and, when its binary ran under -exec-cpu, the CPU seconds of
the binary and of the processes it waited for, with its count of tests,
then the N slowest tests. Several
files (one per pass of scripts/test) are read as one run. The exit status is
go test's: 1 when a test or a package failed, 2 for bad input.

`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *cpu {
		return execCPU(fs.Args(), stdout, stderr)
	}
	if *top < 0 {
		fmt.Fprintln(stderr, "test-times: -n cannot be negative")
		return 2
	}
	var t table
	if *stream {
		if fs.NArg() > 0 {
			fmt.Fprintln(stderr, "test-times: -stream reads standard input; give no file")
			return 2
		}
		in := stdin
		if *save != "" {
			f, err := os.Create(*save)
			if err != nil {
				fmt.Fprintf(stderr, "test-times: %v\n", err)
				return 2
			}
			defer f.Close()
			in = io.TeeReader(stdin, f)
		}
		if err := t.read(in, stdout); err != nil {
			fmt.Fprintf(stderr, "test-times: standard input: %v\n", err)
			return 2
		}
	} else {
		if fs.NArg() == 0 {
			fs.Usage()
			return 2
		}
		for _, name := range fs.Args() {
			f, err := os.Open(name)
			if err != nil {
				fmt.Fprintf(stderr, "test-times: %v\n", err)
				return 2
			}
			err = t.read(f, nil)
			f.Close()
			if err != nil {
				fmt.Fprintf(stderr, "test-times: %s: %v\n", name, err)
				return 2
			}
		}
	}
	t.print(stdout, *top)
	if t.failed() {
		return 1
	}
	return 0
}

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

// read folds a stream of events into the table; with echo, it prints what
// go test would have printed without -json: each package's result line and
// the whole output of every test that failed (and of a package that failed
// outside its tests: a build error, a panic in TestMain, a timeout).
func (t *table) read(r io.Reader, echo io.Writer) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	held := map[[2]string][]string{} // output of tests still running
	running := map[[2]string]bool{}
	line := 0
	for sc.Scan() {
		line++
		b := sc.Bytes()
		if len(b) == 0 || b[0] != '{' {
			// go test prints build failures as plain text before any event.
			if echo != nil {
				fmt.Fprintln(echo, string(b))
			}
			continue
		}
		var e event
		if err := json.Unmarshal(b, &e); err != nil {
			return fmt.Errorf("line %d is not a go test -json event: %v", line, err)
		}
		key := [2]string{e.Package, e.Test}
		switch e.Action {
		case "run", "start":
			running[key] = true
		case "output":
			if secs, ok := cpuSeconds(e.Output); ok && e.Test == "" {
				t.cpu(e.Package, secs)
			}
			if echo != nil {
				held[key] = append(held[key], e.Output)
			}
		case "pass", "fail", "skip":
			delete(running, key)
			if e.Test == "" {
				t.pkg(e.Package, e.Action, e.Elapsed)
			} else {
				t.test(e.Package, e.Test, e.Action, e.Elapsed)
			}
			if echo == nil {
				continue
			}
			if e.Action == "fail" && e.Test != "" {
				t.noteFailure(e.Package, e.Test, held[key])
			}
			if e.Action == "fail" || e.Test == "" {
				for _, o := range held[key] {
					if e.Test == "" && e.Action != "fail" && !isResultLine(o) {
						continue // a passing package's own lines: go test hides them too
					}
					fmt.Fprint(echo, o)
				}
			}
			delete(held, key)
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	// A stream cut short (a killed go test) leaves tests that never ended:
	// their output is what tells why.
	for key := range running {
		if key[1] == "" || strings.Contains(key[1], "/") {
			continue // a package's or a subtest's: its test is named
		}
		t.unfinished = append(t.unfinished, key[0]+" "+key[1])
		if echo != nil {
			fmt.Fprintf(echo, "--- %s %s never ended:\n", key[0], key[1])
			for _, o := range held[key] {
				fmt.Fprint(echo, o)
			}
		}
	}
	return nil
}

func isResultLine(o string) bool {
	for _, p := range []string{"ok  ", "ok\t", "FAIL", "?   ", "PASS\n"} {
		if len(o) >= len(p) && o[:len(p)] == p {
			return p != "PASS\n"
		}
	}
	return false
}
