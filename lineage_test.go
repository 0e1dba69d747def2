package flower

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

func TestLineageRemembersAtOnceAndBumpCounts(t *testing.T) {
	t.Parallel()
	dir, ws := t.TempDir(), t.TempDir()
	l := OpenLineage(dir, ws)
	if l.Ignored() != nil || l.Woke() != 0 || len(l.Steps()) != 0 {
		t.Fatalf("a missing file is not an empty lineage: %v %d %v", l.Ignored(), l.Woke(), l.Steps())
	}
	if n, err := l.Bump(); err != nil || n != 1 {
		t.Fatalf("first Bump = %d, %v; want 1", n, err)
	}
	if err := l.Remember("work", "s1"); err != nil {
		t.Fatal(err)
	}
	if err := l.Remember("", "s"); err != nil {
		t.Fatal(err)
	}
	if err := l.Remember("work", ""); err != nil {
		t.Fatal(err)
	}
	var f struct {
		Workspace string            `json:"workspace"`
		Woke      int               `json:"woke"`
		Steps     map[string]string `json:"steps"`
	}
	b, err := os.ReadFile(filepath.Join(dir, LineageName))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	if f.Workspace != ws || f.Woke != 1 || len(f.Steps) != 1 || f.Steps["work"] != "s1" {
		t.Errorf("file = %s", b)
	}
	if err := l.Remember("work", "s2"); err != nil { // a handoff's successor
		t.Fatal(err)
	}
	again := OpenLineage(dir, ws)
	if sid, _ := again.Session("work"); sid != "s2" || again.Woke() != 1 {
		t.Errorf("reopened: %v woke %d", again.Steps(), again.Woke())
	}
	if n, _ := again.Bump(); n != 2 {
		t.Errorf("second Bump = %d", n)
	}
	if fi, err := os.Stat(filepath.Join(dir, LineageName)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("lineage mode = %v, %v", fi.Mode(), err)
	}
}

func TestLineageOfAnotherWorkspaceOrUnreadableIsAbsent(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	for name, content := range map[string]string{
		"other workspace": `{"workspace":"/somewhere/else","woke":4,"steps":{"work":"s1"}}`,
		"not json":        `{"workspace":`,
		"not an object":   `["work"]`,
		"wrong types":     `{"workspace":7,"steps":"x"}`,
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, LineageName)
			if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			l := OpenLineage(dir, ws)
			if !errors.Is(l.Ignored(), ErrLineageIgnored) || !strings.Contains(l.Ignored().Error(), path) {
				t.Errorf("Ignored = %v", l.Ignored())
			}
			if l.Woke() != 0 || len(l.Steps()) != 0 {
				t.Errorf("used an unusable lineage: %d %v", l.Woke(), l.Steps())
			}
			if n, err := l.Bump(); err != nil || n != 1 {
				t.Errorf("Bump = %d, %v", n, err)
			}
			if got := OpenLineage(dir, ws); got.Ignored() != nil || got.Woke() != 1 {
				t.Errorf("the write did not replace it: %v %d", got.Ignored(), got.Woke())
			}
		})
	}
	t.Run("unreadable", func(t *testing.T) {
		if os.Geteuid() == 0 {
			t.Log("root reads any file: the unreadable case is the directory one below")
		}
		dir := t.TempDir()
		if err := os.Mkdir(filepath.Join(dir, LineageName), 0o700); err != nil { // a folder cannot be read as a file, even by root
			t.Fatal(err)
		}
		l := OpenLineage(dir, ws)
		if !errors.Is(l.Ignored(), ErrLineageIgnored) || len(l.Steps()) != 0 {
			t.Errorf("Ignored = %v", l.Ignored())
		}
		if err := l.Remember("work", "s1"); err == nil {
			t.Error("a write over a folder reported no error")
		}
		if sid, _ := l.Session("work"); sid != "s1" {
			t.Error("a failed write lost the session in memory")
		}
	})
}

func TestLineageDropsEmptyEntries(t *testing.T) {
	t.Parallel()
	dir, ws := t.TempDir(), t.TempDir()
	content := fmt.Sprintf(`{"workspace":%q,"woke":2,"steps":{"work":"s1","empty":"","":"s2"}}`, ws)
	if err := os.WriteFile(filepath.Join(dir, LineageName), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	l := OpenLineage(dir, ws)
	if got := l.Steps(); len(got) != 1 || got["work"] != "s1" || l.Woke() != 2 {
		t.Errorf("steps = %v woke %d", got, l.Woke())
	}
}

func TestLineageConcurrentRemembersLoseNothing(t *testing.T) {
	t.Parallel()
	dir, ws := t.TempDir(), t.TempDir()
	// Two goroutines on one Lineage, two on Lineages of their own (two
	// processes' worth of state), and two real processes.
	shared := OpenLineage(dir, ws)
	var wg sync.WaitGroup
	for g := range 4 {
		l := shared
		if g >= 2 {
			l = OpenLineage(dir, ws)
		}
		wg.Go(func() {
			for i := range 20 {
				if err := l.Remember(fmt.Sprintf("g%d-%d", g, i), "sid"); err != nil {
					t.Error(err)
				}
			}
		})
	}
	var cmds []*exec.Cmd
	var outs [2]strings.Builder
	for p := range 2 {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), "FLOWER_TEST_LINEAGE_HELPER="+dir+"|"+ws+"|p"+strconv.Itoa(p)+"|20")
		cmd.Stdout, cmd.Stderr = &outs[p], &outs[p]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	wg.Wait()
	for p, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("helper %d: %v\n%s", p, err, outs[p].String())
		}
	}
	got := OpenLineage(dir, ws).Steps()
	if len(got) != 6*20 {
		t.Errorf("%d steps survived of %d", len(got), 6*20)
	}
	for _, prefix := range []string{"g0", "g1", "g2", "g3", "p0", "p1"} {
		if _, ok := got[prefix+"-19"]; !ok {
			t.Errorf("%s's last step was lost", prefix)
		}
	}
}

// lineageHelper remembers n steps named <prefix>-<i> from its own process.
func lineageHelper(spec string) error {
	parts := strings.Split(spec, "|")
	if len(parts) != 4 {
		return fmt.Errorf("bad FLOWER_TEST_LINEAGE_HELPER %q", spec)
	}
	n, err := strconv.Atoi(parts[3])
	if err != nil {
		return err
	}
	for i := range n {
		l := OpenLineage(parts[0], parts[1])
		if err := l.Remember(fmt.Sprintf("%s-%d", parts[2], i), "sid"); err != nil {
			return err
		}
	}
	return nil
}

func TestLineageArchiveMovesAndNeverDeletes(t *testing.T) {
	t.Parallel()
	dir, ws := t.TempDir(), t.TempDir()
	l := OpenLineage(dir, ws)
	if _, err := l.Bump(); err != nil {
		t.Fatal(err)
	}
	if err := l.Remember("work", "s1"); err != nil {
		t.Fatal(err)
	}
	brief := filepath.Join(ws, "brief.md")
	if err := os.WriteFile(brief, []byte("# brief\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	into := filepath.Join(ws, "notes", "archive")
	first, err := l.Archive(into, brief, filepath.Join(ws, "goal.md")) // no goal: skipped
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(first) != into || len(filepath.Base(first)) != len("20060102-150405") {
		t.Errorf("archive folder = %s", first)
	}
	if b, err := os.ReadFile(filepath.Join(first, "brief.md")); err != nil || string(b) != "# brief\n" {
		t.Errorf("the brief was not moved whole: %q, %v", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(first, LineageName)); err != nil || !strings.Contains(string(b), `"s1"`) {
		t.Errorf("the lineage was not moved whole: %s, %v", b, err)
	}
	for _, gone := range []string{brief, filepath.Join(dir, LineageName)} {
		if _, err := os.Stat(gone); !os.IsNotExist(err) {
			t.Errorf("%s is still in place: %v", gone, err)
		}
	}
	if l.Woke() != 0 || len(l.Steps()) != 0 {
		t.Errorf("after Archive: woke %d steps %v", l.Woke(), l.Steps())
	}
	if n, _ := l.Bump(); n != 1 {
		t.Errorf("Bump after Archive = %d, want 1 (a fresh start)", n)
	}
	// A second archive in the same second gets a folder of its own.
	second, err := l.Archive(into)
	if err != nil || second == first {
		t.Fatalf("second archive %s, %v (first %s)", second, err, first)
	}
	if _, err := os.Stat(filepath.Join(first, LineageName)); err != nil {
		t.Errorf("the first archive lost its lineage: %v", err)
	}
}
