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
	"time"
)

// manifestWriter plays one Runtime: after each step it appends the result
// and writes the manifest, as Runtime.Run does.
func manifestWriter(path, run string, steps int) error {
	var results []StepResult
	for i := range steps {
		now := time.Now()
		results = append(results, StepResult{
			Step: fmt.Sprintf("%s/step-%02d", run, i), SessionID: fmt.Sprintf("%s-s%d", run, i),
			OK: true, CostUSD: 0.01, NumTurns: 1, StartedAt: now, EndedAt: now, Attempts: 1,
		})
		if _, err := WriteManifest(path, run, results); err != nil {
			return err
		}
	}
	return nil
}

// checkAllRows checks that the manifest holds, for each run, exactly its
// steps' rows, in order.
func checkAllRows(t *testing.T, path string, runs map[string]int) {
	t.Helper()
	rows, err := ReadManifest(path)
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, n := range runs {
		total += n
	}
	if len(rows) != total {
		t.Errorf("%d rows, want %d", len(rows), total)
	}
	for run, steps := range runs {
		var mine []string
		for _, r := range rows {
			if r.Run == run {
				mine = append(mine, r.Step)
			}
		}
		if len(mine) != steps {
			t.Errorf("run %s has %d rows, want %d", run, len(mine), steps)
			continue
		}
		for i, s := range mine {
			if want := fmt.Sprintf("%s/step-%02d", run, i); s != want {
				t.Errorf("run %s row %d is %s, want %s (a run's rows stay in order)", run, i, s, want)
			}
		}
	}
}

func TestTwoRuntimesWritingOneManifestLoseNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runs", ManifestName)
	runs := []string{"20261130-120000-aaaaaa", "20261130-120000-bbbbbb"}
	// A row of an earlier run must survive too.
	if _, err := WriteManifest(path, "earlier", []StepResult{{Step: "earlier/step-00"}}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, len(runs))
	for i, run := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = manifestWriter(path, run, 50)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	checkAllRows(t, path, map[string]int{runs[0]: 50, runs[1]: 50, "earlier": 1})
}

// manifestHelper is the child process of the two-process test: TestMain
// runs it, as a Runtime writing the manifest, when
// FLOWER_TEST_MANIFEST_WRITER is "path|run|count".
func manifestHelper(spec string) error {
	parts := strings.SplitN(spec, "|", 3)
	if len(parts) != 3 {
		return fmt.Errorf("bad FLOWER_TEST_MANIFEST_WRITER %q", spec)
	}
	n, err := strconv.Atoi(parts[2])
	if err != nil {
		return err
	}
	return manifestWriter(parts[0], parts[1], n)
}

func TestTwoProcessesWritingOneManifestLoseNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), ManifestName)
	// A row of an earlier run must survive too.
	if _, err := WriteManifest(path, "earlier", []StepResult{{Step: "earlier/step-00"}}); err != nil {
		t.Fatal(err)
	}
	runs := []string{"proc-a", "proc-b"}
	cmds := make([]*exec.Cmd, len(runs))
	outs := make([]strings.Builder, len(runs))
	for i, run := range runs {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), "FLOWER_TEST_MANIFEST_WRITER="+path+"|"+run+"|50")
		cmd.Stdout, cmd.Stderr = &outs[i], &outs[i]
		cmds[i] = cmd
	}
	for _, c := range cmds {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
	}
	for i, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatalf("writer %s: %v\n%s", runs[i], err, outs[i].String())
		}
	}
	checkAllRows(t, path, map[string]int{"proc-a": 50, "proc-b": 50, "earlier": 1})
}

func TestRewritingReplacesOnlyThisRunsRows(t *testing.T) {
	path := filepath.Join(t.TempDir(), ManifestName)
	// Another process's row, with a field this version does not know.
	foreign := `[{"step":"old","run":"other","future_field":{"x":1},"ok":true}]`
	if err := os.WriteFile(path, []byte(foreign), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := WriteManifest(path, "me", []StepResult{{Step: "a"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := WriteManifest(path, "me", []StepResult{{Step: "a", OK: true}, {Step: "b"}}); err != nil {
		t.Fatal(err)
	}
	var raw []map[string]any
	b, _ := os.ReadFile(path)
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	if len(raw) != 3 || raw[0]["future_field"] == nil || raw[1]["step"] != "a" || raw[1]["ok"] != true || raw[2]["step"] != "b" {
		t.Errorf("manifest = %s", b)
	}
	if raw[1]["run"] != "me" || raw[1]["duration_s"] == nil || raw[1]["session_id"] != nil {
		t.Errorf("row fields: %v", raw[1])
	}
	if !strings.Contains(string(b), "\n  {") {
		t.Errorf("manifest is not indented:\n%s", b)
	}
}

func TestACorruptManifestIsKeptAsideAndRebuilt(t *testing.T) {
	for _, content := range []string{"{not json", `{"an":"object"}`, "[{\"step\":\"x\"},"} {
		t.Run(content, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, ManifestName)
			if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := ReadManifest(path); !errors.Is(err, ErrManifestCorrupt) || !strings.Contains(err.Error(), path) {
				t.Errorf("ReadManifest = %v, want ErrManifestCorrupt naming the file", err)
			}
			rec, err := WriteManifest(path, "r1", []StepResult{{Step: "s"}})
			if err != nil {
				t.Fatal(err)
			}
			if rec == nil || rec.Path != path || !strings.HasPrefix(rec.Aside, path+".corrupt-") {
				t.Fatalf("recovery = %+v", rec)
			}
			if kept, err := os.ReadFile(rec.Aside); err != nil || string(kept) != content {
				t.Errorf("the old content was not kept: %q, %v", kept, err)
			}
			if !strings.Contains(rec.String(), rec.Aside) || !strings.Contains(rec.String(), "not a JSON array") {
				t.Errorf("notice = %q", rec.String())
			}
			rows, err := ReadManifest(path)
			if err != nil || len(rows) != 1 || rows[0].Step != "s" || rows[0].Run != "r1" {
				t.Errorf("rebuilt manifest: %+v, %v", rows, err)
			}
			// A second corruption in the same second gets its own name.
			os.WriteFile(path, []byte("garbage"), 0o644)
			rec2, err := WriteManifest(path, "r1", nil)
			if err != nil || rec2 == nil || rec2.Aside == rec.Aside {
				t.Errorf("second recovery = %+v, %v", rec2, err)
			}
			if _, err := WriteManifest(path, "r1", nil); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestManifestEdgeCases(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, ManifestName)
	if rows, err := ReadManifest(path); err != nil || len(rows) != 0 {
		t.Errorf("missing manifest: %v, %v", rows, err)
	}
	if err := os.WriteFile(path, []byte("  \n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if rec, err := WriteManifest(path, "r", []StepResult{{Step: "x"}}); err != nil || rec != nil {
		t.Errorf("an empty file is an empty manifest, not a corrupt one: %+v, %v", rec, err)
	}
	if _, err := WriteManifest(path, "", nil); err == nil {
		t.Error("an empty run id was accepted")
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp") {
			t.Errorf("a temporary file was left: %s", e.Name())
		}
	}
	// Elements that are not rows are kept on disk and skipped on read.
	os.WriteFile(path, []byte(`[1, "two", {"step":"ok","run":"z"}]`), 0o644)
	rows, err := ReadManifest(path)
	if err != nil || len(rows) != 1 || rows[0].Step != "ok" {
		t.Errorf("rows = %+v, %v", rows, err)
	}
	WriteManifest(path, "r", nil)
	if b, _ := os.ReadFile(path); !strings.Contains(string(b), `"two"`) {
		t.Errorf("a foreign element was dropped: %s", b)
	}
}
