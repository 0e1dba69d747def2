package faults

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flowerrun/flower"
	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/claude/claudetest"
	"github.com/flowerrun/flower/internal/transcripttest"
	"github.com/flowerrun/flower/store/sqlite"
	"github.com/flowerrun/flower/workbench"
)

// diskConfig is what the disk-full helper runs: one Runtime step with the
// given directories, after filling the disk of Full (a tiny tmpfs mounted
// there for the helper alone) to its last Leave bytes.
type diskConfig struct {
	WS, RunDir, Workbench, Full string
	Leave                       int
	Env                         map[string]string
	CLI                         string
	Prompt                      string
	Spill                       int
	Out                         string
}

// diskResult is what the helper saw, written to Out (outside the tmpfs,
// which goes with the helper).
type diskResult struct {
	NewErr    string
	OK        bool
	Error     string
	Errors    []string
	Events    []string
	SessionID string
	Stored    []string
	StoreErr  string
	Manifest  string
	Leftovers []string
}

// diskFull runs the helper under `unshare -m` with a tmpfs of size at
// cfg.Full, or reports why it cannot.
func diskFull(t *testing.T, cfg diskConfig, size string) (diskResult, bool) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		notRun(t, "no unshare to mount a tiny tmpfs: "+err.Error())
		return diskResult{}, false
	}
	probe := exec.Command("unshare", "-m", "sh", "-c", `mount -t tmpfs -o size=16k tmpfs "$1"`, "_", t.TempDir())
	if out, err := probe.CombinedOutput(); err != nil {
		notRun(t, fmt.Sprintf("cannot mount a tmpfs in a mount namespace (unshare -m, needs root or user namespaces): %v %s", err, out))
		return diskResult{}, false
	}
	cfg.Out = filepath.Join(t.TempDir(), "result.json")
	raw, _ := json.Marshal(cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "unshare", "-m", "sh", "-c",
		`mount -t tmpfs -o size="$1" tmpfs "$2" && shift 2 && exec "$@"`, "_", size, cfg.Full, exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=disk-full", "FAULT_DISK_CONFIG="+string(raw))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the disk-full helper: %v\n%s", err, out)
	} else {
		t.Logf("helper output:\n%s", out)
	}
	var res diskResult
	data, err := os.ReadFile(cfg.Out)
	if err != nil || json.Unmarshal(data, &res) != nil {
		t.Fatalf("the helper's result: %v %s", err, data)
	}
	return res, true
}

// diskFullHelper is the helper process: fill, then run one step.
func diskFullHelper() int {
	var cfg diskConfig
	if err := json.Unmarshal([]byte(os.Getenv("FAULT_DISK_CONFIG")), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	var res diskResult
	defer func() {
		raw, _ := json.Marshal(res)
		os.WriteFile(cfg.Out, raw, 0o644)
	}()
	opts := []flower.Option{flower.WithRunDir(cfg.RunDir), flower.WithEnv(cfg.Env), flower.WithResilience(fastResilience()),
		flower.WithLanguage(flower.English), flower.WithSpillThreshold(cfg.Spill),
		flower.WithSessionOptions(func(o *claude.Options) { o.CLIPath, o.BaseEnv = cfg.CLI, claudetest.BaseEnv() })}
	if cfg.Workbench != "" {
		wb := workbench.New(cfg.WS)
		wb.Home = cfg.Workbench
		opts = append(opts, flower.WithWorkbench(wb))
	}
	rt, err := flower.New(cfg.WS, opts...)
	if err != nil {
		res.NewErr = err.Error()
		return 0
	}
	fill(cfg.Full, cfg.Leave)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	r, _ := rt.Run(ctx, spec(), cfg.Prompt, flower.RunOptions{OnEvent: func(e flower.Event) {
		res.Events = append(res.Events, string(e.Kind)+": "+e.Text)
	}})
	rt.Close()
	res.OK, res.Error, res.Errors, res.SessionID = r.OK, r.Error, r.Errors, r.SessionID
	if data, err := os.ReadFile(filepath.Join(cfg.RunDir, flower.ManifestName)); err == nil {
		res.Manifest = string(data)
	}
	if db, err := sqlite.Open(filepath.Join(cfg.RunDir, "sessions.db")); err != nil {
		res.StoreErr = err.Error()
	} else {
		entries, err := db.Load(ctx, claude.SessionKey{ProjectKey: claude.ProjectKey(cfg.WS), SessionID: r.SessionID})
		if err != nil {
			res.StoreErr = err.Error()
		}
		for _, e := range entries {
			var head struct{ UUID, Type string }
			json.Unmarshal(e, &head)
			id := head.UUID
			if id == "" {
				id = "type:" + head.Type
			}
			if id != "type:agent_metadata" {
				res.Stored = append(res.Stored, id)
			}
		}
		db.Close()
	}
	filepath.WalkDir(filepath.Join(cfg.Full, "spill"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			res.Leftovers = append(res.Leftovers, p)
		}
		return nil
	})
	return 0
}

// fill writes dir/filler until the disk is full, then gives back leave
// bytes.
func fill(dir string, leave int) {
	f, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		return
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				fmt.Fprintln(os.Stderr, "fill:", err)
			}
			break
		}
	}
	if st, err := f.Stat(); err == nil && leave > 0 {
		f.Truncate(max(st.Size()-int64(leave), 0))
	}
}

// bigOutput is a Bash call printing n characters.
func bigOutput(n int) claudetest.Reply {
	return claudetest.NewReply(claudetest.ToolUse("", "Bash", map[string]any{
		"command": fmt.Sprintf("head -c %d /dev/zero | tr '\\0' a", n), "description": "print"}))
}

func TestFaultDiskFullForSpillFiles(t *testing.T) {
	t.Parallel()
	fault(t, "a workbench whose disk is full cannot take a spill file: the tool's output reaches the model unspilled, no partial spill file is left, and the step succeeds")
	var seen string
	h := func(ctx context.Context, r *claudetest.Request) claudetest.Reply {
		if !r.HasText("FAULT:spill") || len(r.Tools) == 0 {
			return claudetest.Say("ok")
		}
		if res, ok := r.LastToolResult(); ok {
			seen = res.Content
			return claudetest.Say("done")
		}
		return bigOutput(20000)
	}
	srv := claudetest.NewServer(t, h)
	env := claudetest.Env(t, srv)
	full := t.TempDir()
	res, ok := diskFull(t, diskConfig{WS: t.TempDir(), RunDir: t.TempDir(), Workbench: full, Full: full, Env: env,
		CLI: claudetest.CLIPath(t), Prompt: "FAULT:spill", Spill: 1000}, "64k")
	if !ok {
		return
	}
	if res.NewErr != "" || !res.OK {
		t.Fatalf("step: %+v", res)
	}
	if !strings.Contains(seen, strings.Repeat("a", 1000)) {
		t.Errorf("the model did not get the output unspilled: %.200q", seen)
	}
	if len(res.Leftovers) != 0 {
		t.Errorf("files left in the spill folder of the full disk: %v", res.Leftovers)
	}
}

func TestFaultDiskFullForTheStore(t *testing.T) {
	t.Parallel()
	fault(t, "a run directory whose disk fills during a step (the SQLite store): the step's work stands, its errors say the store is short of space and what to do, no half-written manifest is left, and the store holds a prefix of the CLI's JSONL, which keeps the rest")
	h := func(ctx context.Context, r *claudetest.Request) claudetest.Reply {
		if !r.HasText("FAULT:dbfull") || len(r.Tools) == 0 {
			return claudetest.Say("ok")
		}
		if len(r.ToolResults()) < 3 {
			return bigOutput(20000)
		}
		return claudetest.Say("done")
	}
	srv := claudetest.NewServer(t, h)
	env := claudetest.Env(t, srv)
	ws, runDir := t.TempDir(), t.TempDir()
	res, ok := diskFull(t, diskConfig{WS: ws, RunDir: runDir, Full: runDir, Leave: 8 << 10, Env: env,
		CLI: claudetest.CLIPath(t), Prompt: "FAULT:dbfull"}, "1m")
	if !ok {
		return
	}
	t.Logf("result: ok %v error %q errors %q session %s stored %d store error %q", res.OK, res.Error, res.Errors, res.SessionID, len(res.Stored), res.StoreErr)
	if res.NewErr != "" || res.SessionID == "" {
		t.Fatalf("the step did not run: %+v", res)
	}
	said := false
	for _, e := range res.Errors {
		said = said || (strings.Contains(e, "session store lost") && strings.Contains(e, "free some space") && strings.Contains(e, "still holds them"))
	}
	if !said {
		t.Errorf("no error of the step said the store lost entries, that the disk is full and where they still are: %q", res.Errors)
	}
	if res.Manifest != "" && !json.Valid([]byte(res.Manifest)) {
		t.Errorf("a manifest was left half-written on the full disk: %q", res.Manifest)
	}
	// Nothing the store kept is out of order, and the rest is in the CLI's
	// own transcript (its HOME is on another disk), which a resume uses.
	local := transcripttest.FileIDs(t, filepath.Join(env["CLAUDE_CONFIG_DIR"], "projects", claude.ProjectKey(ws), res.SessionID+".jsonl"))
	if len(res.Stored) > len(local) || strings.Join(res.Stored, ",") != strings.Join(local[:len(res.Stored)], ",") {
		t.Errorf("the store's %d rows are not a prefix of the CLI's JSONL (%d lines)", len(res.Stored), len(local))
	}
}
