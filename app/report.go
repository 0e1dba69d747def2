package app

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"github.com/flowerrun/flower/internal/screen"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/flowerrun/flower"
	"github.com/flowerrun/flower/internal/atomicfile"
	"github.com/flowerrun/flower/report"
)

// runReport is `flower report [run_dir]`: one self-contained HTML page
// of a run directory (or its data as JSON), written outside it.
func (m *Command) runReport(ctx context.Context, args []string) error {
	var g globals
	fs := newFlagSet("report")
	g.register(fs)
	var out string
	var open, asJSON bool
	fs.StringVar(&out, "o", "", "")
	fs.StringVar(&out, "output", "", "")
	fs.BoolVar(&open, "open", false, "")
	fs.BoolVar(&asJSON, "json", false, "")
	var db dbFlags
	db.register(fs)
	pos, err := m.parse(fs, m.reportUsage(m.argLang(args)), args)
	if err != nil {
		return err
	}
	if m.teamRun(fs, pos) {
		if asJSON && (open || out != "") {
			return usageErrorf(text(m.argLang(args), "reportJSONPage"), m.name())
		}
		url, err := m.teamDB(db, "report", m.language(&g, ""))
		if err != nil {
			return err
		}
		return m.reportTeam(ctx, url, pos, m.language(&g, ""), out, open, asJSON)
	}
	if len(pos) > 1 {
		return usageErrorf(text(m.argLang(args), "reportArgs"), m.name(), len(pos), strings.Join(pos, " "), m.name())
	}
	if asJSON && (open || out != "") {
		return usageErrorf(text(m.argLang(args), "reportJSONPage"), m.name())
	}
	// Resolved by hand, not by globals.resolve: a report creates nothing,
	// not even a missing workspace.
	ws := ""
	if isSet(fs, "w") || isSet(fs, "workspace") {
		if ws, err = filepath.Abs(g.workspace); err != nil {
			return fmt.Errorf("flower report: workspace %s: %w", g.workspace, err)
		}
	}
	runDir := flower.DefaultRunDir(g.workspace)
	switch {
	case len(pos) == 1:
		runDir = pos[0]
	case g.runDir != "":
		runDir = g.runDir
	}
	return m.renderReport(ctx, runDir, ws, out, open, asJSON, nil)
}

// renderReport writes the page of runDir (or prints its data as JSON);
// name, when set, names the run and its workspace for the page instead of
// the folders it was gathered from.
func (m *Command) renderReport(ctx context.Context, runDir, ws, out string, open, asJSON bool, name func(*report.Report)) error {
	rep, err := report.Gather(ctx, runDir, ws)
	if err != nil {
		return fmt.Errorf("flower report: %w", err)
	}
	if name != nil {
		name(rep)
	}
	for _, p := range rep.Problems {
		fmt.Fprintln(m.Stderr, screen.SanitizeLines("flower report: "+p))
	}
	if asJSON {
		enc := json.NewEncoder(m.Stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(rep); err != nil {
			return fmt.Errorf("flower report: %w", err)
		}
		return nil
	}
	if out == "" {
		sum := sha256.Sum256([]byte(rep.RunDir))
		out = filepath.Join(os.TempDir(), "flower-report-"+hex.EncodeToString(sum[:4])+".html")
	}
	if out, err = filepath.Abs(out); err != nil {
		return fmt.Errorf("flower report: %w", err)
	}
	var page bytes.Buffer
	if err := report.Render(&page, rep, filepath.Dir(out)); err != nil {
		return fmt.Errorf("flower report: %w", err)
	}
	if err := atomicfile.Write(out, page.Bytes(), 0o600); err != nil {
		return fmt.Errorf("flower report: write the page: %w; choose a writable file with -o FILE", err)
	}
	fmt.Fprintln(m.Stdout, out)
	if open {
		m.openPage(ctx, out)
	}
	return nil
}

// openWait bounds the opener (xdg-open, open), which returns once it has
// handed the page on.
const openWait = 30 * time.Second

// openPage hands the page to the desktop's opener, where there is one; a
// missing opener is said, not an error: the page is written.
func (m *Command) openPage(ctx context.Context, path string) {
	names := []string{"xdg-open", "open"}
	if runtime.GOOS == "darwin" {
		names = []string{"open", "xdg-open"}
	}
	for _, n := range names {
		bin := m.lookPath(n)
		if bin == "" {
			continue
		}
		// The opener hands the page to a browser and exits at once; the
		// bound is for one that hangs.
		octx, cancel := context.WithTimeout(ctx, openWait)
		defer cancel()
		if err := exec.CommandContext(octx, bin, path).Run(); err != nil {
			fmt.Fprintf(m.Stderr, "flower report: %s %s: %v; open the page in a browser yourself\n", n, path, err)
		}
		return
	}
	fmt.Fprintf(m.Stderr, "flower report: no xdg-open or open here to show the page; open %s in a browser\n", path)
}

// lookPath finds an executable on the command's PATH; "" when none.
func (m *Command) lookPath(name string) string {
	for _, dir := range filepath.SplitList(m.getenv("PATH")) {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}
