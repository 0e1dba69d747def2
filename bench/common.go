package main

// Helpers shared by the driver, store and orchestration benchmarks. Their
// names start with drv so that they never collide with the helpers of the
// other benchmarks of this package.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/flowerrun/flower/claude/claudetest"
)

// moduleRoot is the module root, the folder holding go.mod above the working
// directory: tools/ and bench/ts/ are found from it.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory; run the benchmarks from flower's source tree")
		}
		dir = parent
	}
}

// claudeCLI is the real claude binary the benchmarks drive: $FLOWER_CLAUDE,
// else the pinned one under the module root.
func claudeCLI(root string) (string, error) {
	p := os.Getenv("FLOWER_CLAUDE")
	if p == "" {
		p = filepath.Join(root, claudetest.PinnedCLI)
	}
	fi, err := os.Stat(p)
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return "", fmt.Errorf("no claude CLI at %s; run tools/claude-cli/install.sh or set FLOWER_CLAUDE to a claude binary", p)
	}
	return p, nil
}

// envCount reads a positive count from the environment (BENCH_REPS…),
// def when unset; a value that is no positive number is an error, not a
// silent default.
func envCount(name string, def int) (int, error) {
	v := os.Getenv(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%s=%q: want a positive whole number", name, v)
	}
	return n, nil
}

// drvSpread is the median, minimum and maximum of some durations.
type drvSpread struct{ med, min, max time.Duration }

func drvSpreadOf(ds []time.Duration) drvSpread {
	if len(ds) == 0 {
		return drvSpread{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return drvSpread{med: drvMedian(s), min: s[0], max: s[len(s)-1]}
}

// drvMedian of sorted durations: the mean of the two middle ones for an
// even count.
func drvMedian(sorted []time.Duration) time.Duration {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

// drvPercentile of unsorted durations, nearest rank.
func drvPercentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (len(s)*p + 99) / 100
	return s[min(max(i-1, 0), len(s)-1)]
}

func (s drvSpread) String() string {
	return fmt.Sprintf("%s [%s … %s]", drvDur(s.med), drvDur(s.min), drvDur(s.max))
}

// drvDur prints a duration with three significant figures.
func drvDur(d time.Duration) string {
	switch {
	case d >= time.Second:
		return fmt.Sprintf("%.3gs", d.Seconds())
	case d >= time.Millisecond:
		return fmt.Sprintf("%.3gms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%.3gµs", float64(d)/float64(time.Microsecond))
	}
}

// drvRotate is the order of the variants in repetition rep: rotated by one
// each time, so no variant always runs first (cold caches) or last.
func drvRotate[T any](vs []T, rep int) []T {
	if len(vs) == 0 {
		return nil
	}
	k := rep % len(vs)
	return append(slices.Clone(vs[k:]), vs[:k]...)
}

// drvTable prints rows of cells in aligned columns.
func drvTable(rows [][]string) string {
	width := map[int]int{}
	for _, r := range rows {
		for i, c := range r {
			width[i] = max(width[i], len([]rune(c)))
		}
	}
	var b strings.Builder
	for _, r := range rows {
		for i, c := range r {
			if i > 0 {
				b.WriteString("  ")
			}
			b.WriteString(c)
			if i < len(r)-1 {
				b.WriteString(strings.Repeat(" ", width[i]-len([]rune(c))))
			}
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// drvPeakRSS is this process's peak resident set size in bytes from
// /proc/self/status (Linux), false where there is none.
func drvPeakRSS() (int64, bool) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb * 1024, err == nil
		}
	}
	return 0, false
}
