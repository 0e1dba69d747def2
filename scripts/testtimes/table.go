package main

import (
	"cmp"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
)

// table is what a run's events say of its time.
type table struct {
	packages map[string]*pkgTime
	tests    []testTime
	// unfinished are the tests that started and never ended (the stream
	// was cut: a timeout, a killed go test).
	unfinished []string
	// why are the failed tests' messages, first lines only, in the order
	// they failed: said again after the table, the last thing a reader
	// of a long log's tail sees.
	why []failure
}

// failure is a failed test and the first line of each of its messages.
type failure struct {
	pkg, test string
	lines     []string
}

// maxWhy bounds the recap: tests named, and lines per test, each cut at
// maxWhyWidth bytes.
const (
	maxWhy      = 10
	maxWhyLines = 4
	maxWhyWidth = 240
)

// maxUnfinished is how many of the tests that never ended are named.
const maxUnfinished = 20

type pkgTime struct {
	name   string
	result string  // pass, fail, skip (no test files)
	wall   float64 // seconds, as go test measured the package's binary
	cpuSec float64 // CPU seconds of the binary and its children (-exec-cpu)
	hasCPU bool
	tests  int // top-level tests that ran
	failed int
	runs   int // a package run in several passes is added up
}

type testTime struct {
	pkg, name, result string
	secs              float64
}

func (t *table) entry(pkg string) *pkgTime {
	if t.packages == nil {
		t.packages = map[string]*pkgTime{}
	}
	p := t.packages[pkg]
	if p == nil {
		p = &pkgTime{name: pkg}
		t.packages[pkg] = p
	}
	return p
}

func (t *table) pkg(name, result string, secs float64) {
	p := t.entry(name)
	p.wall += secs
	p.runs++
	if p.result != "fail" {
		p.result = result
	}
}

func (t *table) cpu(name string, secs float64) {
	p := t.entry(name)
	p.cpuSec += secs
	p.hasCPU = true
}

func (t *table) test(pkg, name, result string, secs float64) {
	if strings.Contains(name, "/") {
		return // a subtest's time is its parent's
	}
	p := t.entry(pkg)
	p.tests++
	if result == "fail" {
		p.failed++
	}
	t.tests = append(t.tests, testTime{pkg: pkg, name: name, result: result, secs: secs})
}

func (t *table) failed() bool {
	if len(t.unfinished) > 0 {
		return true
	}
	for _, p := range t.packages {
		if p.result == "fail" {
			return true
		}
	}
	return false
}

// print writes the packages by wall time, then the slowest tests. A
// parallel test's time counts its waits for the others (go test's
// Elapsed), so the tests of a package may add up to more than its wall.
func (t *table) print(w io.Writer, top int) {
	pkgs := make([]*pkgTime, 0, len(t.packages))
	var total, totalCPU float64
	for _, p := range t.packages {
		if p.result == "skip" && p.tests == 0 {
			continue // no test files
		}
		pkgs = append(pkgs, p)
		total += p.wall
		totalCPU += p.cpuSec
	}
	slices.SortFunc(pkgs, func(a, b *pkgTime) int {
		return cmp.Or(cmp.Compare(b.wall, a.wall), strings.Compare(a.name, b.name))
	})
	prefix := commonPrefix(pkgs)
	fmt.Fprintf(w, "\n%-9s %9s %6s  %s\n", "seconds", "cpu s", "tests", "package (go test's wall time; packages run side by side; cpu: the binary's and its children's)")
	for _, p := range pkgs {
		mark := ""
		switch {
		case p.result == "fail":
			mark = fmt.Sprintf("  FAIL (%d tests failed)", p.failed)
		case p.runs > 1:
			mark = fmt.Sprintf("  (%d passes)", p.runs)
		}
		fmt.Fprintf(w, "%9.1f %9s %6d  %s%s\n", p.wall, cpuColumn(p.cpuSec, p.hasCPU), p.tests, shortName(p.name, prefix), mark)
	}
	fmt.Fprintf(w, "%9.1f %9s %6d  all packages, one after another\n", total, cpuColumn(totalCPU, totalCPU > 0), len(t.tests))
	if top > 0 && len(t.tests) > 0 {
		tests := slices.Clone(t.tests)
		slices.SortStableFunc(tests, func(a, b testTime) int { return cmp.Compare(b.secs, a.secs) })
		fmt.Fprintf(w, "\nthe %d slowest tests (seconds, from its start to its end, waits for parallel ones included)\n", min(top, len(tests)))
		for _, x := range tests[:min(top, len(tests))] {
			mark := ""
			if x.result != "pass" {
				mark = "  " + strings.ToUpper(x.result)
			}
			fmt.Fprintf(w, "%9.1f  %s %s%s\n", x.secs, shortName(x.pkg, prefix), x.name, mark)
		}
	}
	if len(t.unfinished) > 0 {
		slices.Sort(t.unfinished)
		fmt.Fprintf(w, "\n%d tests never ended (the run was cut):\n", len(t.unfinished))
		for i, n := range t.unfinished {
			if i == maxUnfinished {
				fmt.Fprintf(w, "  and %d more\n", len(t.unfinished)-i)
				break
			}
			fmt.Fprintf(w, "  %s\n", n)
		}
	}
	if len(t.why) > 0 {
		fmt.Fprintf(w, "\nwhy tests failed (the first line of each message; each in full above):\n")
		for i, f := range t.why {
			if i == maxWhy {
				fmt.Fprintf(w, "  and %d more failed tests\n", len(t.why)-i)
				break
			}
			fmt.Fprintf(w, "--- %s %s\n", shortName(f.pkg, prefix), f.test)
			for j, l := range f.lines {
				if j == maxWhyLines {
					fmt.Fprintf(w, "    and %d more messages\n", len(f.lines)-j)
					break
				}
				if len(l) > maxWhyWidth {
					l = strings.ToValidUTF8(l[:maxWhyWidth], "") + "…"
				}
				fmt.Fprintf(w, "    %s\n", l)
			}
		}
	}
}

// messageLine matches the first line of a test's message as the testing
// package prints it ("    name_test.go:12: text"), or a panic's.
var messageLine = regexp.MustCompile(`^\s*(\S+_test\.go:\d+: .*|panic: .*)$`)

// noteFailure keeps a failed test's messages from its output.
func (t *table) noteFailure(pkg, test string, output []string) {
	f := failure{pkg: pkg, test: test}
	for _, o := range output {
		if m := messageLine.FindStringSubmatch(strings.TrimRight(o, "\n")); m != nil {
			f.lines = append(f.lines, m[1])
		}
	}
	if len(f.lines) > 0 { // a parent whose subtests failed says nothing itself
		t.why = append(t.why, f)
	}
}

// cpuColumn is a package's CPU seconds, or "-" when its binary did not run
// under -exec-cpu.
func cpuColumn(secs float64, measured bool) string {
	if !measured {
		return "-"
	}
	return fmt.Sprintf("%.1f", secs)
}

// commonPrefix is the module path the packages share ("" for one package),
// which the table leaves out.
func commonPrefix(pkgs []*pkgTime) string {
	if len(pkgs) < 2 {
		return ""
	}
	p := pkgs[0].name
	for _, q := range pkgs[1:] {
		for !strings.HasPrefix(q.name, p) {
			p = p[:len(p)-1]
		}
	}
	if i := strings.LastIndex(p, "/"); i >= 0 {
		return p[:i+1]
	}
	return ""
}

func shortName(name, prefix string) string {
	if s := strings.TrimPrefix(name, prefix); s != name && s != "" {
		return s
	}
	return name
}
