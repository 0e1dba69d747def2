package faults

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/flowerrun/flower/internal/pgtest"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(runHelper(mode))
	}
	code := pgtest.Run(m)
	removeBin()
	if teamflowPath != "" {
		os.RemoveAll(filepath.Dir(teamflowPath))
	}
	line := suite.summary()
	fmt.Fprintln(os.Stderr, line)
	if p := os.Getenv("FLOWER_FAULT_SUMMARY"); p != "" {
		if err := os.WriteFile(p, []byte(line+"\n"), 0o644); err != nil {
			fmt.Fprintf(os.Stderr, "faults: write the summary to %s: %v\n", p, err)
			code = 1
		}
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// suite counts the cases' outcomes for the summary line.
var suite tally

type tally struct {
	mu                     sync.Mutex
	passed, failed, notRun []string
}

// fault starts a case: it logs what must hold and counts the case's
// outcome when it ends.
func fault(t *testing.T, mustHold string) {
	t.Helper()
	t.Logf("must hold: %s", mustHold)
	t.Cleanup(func() {
		suite.mu.Lock()
		defer suite.mu.Unlock()
		switch {
		case t.Failed():
			suite.failed = append(suite.failed, t.Name())
		case notRunReason(t) != "":
			suite.notRun = append(suite.notRun, t.Name()+": "+notRunReason(t))
		case t.Skipped(): // no real CLI outside CI (claudetest.CLIPath)
			suite.notRun = append(suite.notRun, t.Name()+": skipped")
		default:
			suite.passed = append(suite.passed, t.Name())
		}
	})
}

var notRunReasons sync.Map // test name -> reason

func notRunReason(t *testing.T) string {
	v, _ := notRunReasons.Load(t.Name())
	s, _ := v.(string)
	return s
}

// notRun reports that the machine cannot simulate the case. Under $CI every
// case must run, so there it is a failure.
func notRun(t *testing.T, reason string) {
	t.Helper()
	notRunReasons.Store(t.Name(), reason)
	if os.Getenv("CI") != "" {
		t.Errorf("not run: %s (every fault case must run in CI)", reason)
		return
	}
	t.Logf("not run: %s", reason)
}

func (s *tally) summary() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	line := fmt.Sprintf("fault suite: %d passed, %d failed", len(s.passed), len(s.failed))
	if len(s.notRun) > 0 {
		sort.Strings(s.notRun)
		line += fmt.Sprintf(", %d not run (%s)", len(s.notRun), strings.Join(s.notRun, "; "))
	}
	if len(s.failed) > 0 {
		sort.Strings(s.failed)
		line += "\nfailed: " + strings.Join(s.failed, ", ")
	}
	return line
}
