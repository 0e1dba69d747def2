package app

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/flowerrun/flower"
	"github.com/flowerrun/flower/guard"
	"github.com/flowerrun/flower/internal/atomicfile"
	"github.com/flowerrun/flower/internal/screen"
)

// loadEnv loads the .env chain into the process's environment, first of
// all: the per-user file may name the CLI (FLOWER_CLAUDE) findCLI looks
// for. It says what it ignored and whether glances have a sandbox.
func loadEnv(ui *UI) {
	env := flower.Environment{Lang: ui.Lang}
	rep, _ := env.LoadDotenv()
	for _, w := range rep.Warnings {
		ui.Screen.Line(screen.Yellow, "! "+w)
	}
	workspaceEnvLine(ui, rep)
	if s := guard.DetectSandbox(); !s.Active() {
		ui.Screen.Line(screen.Yellow, noSandboxLine(ui, s))
	}
}

// ensureCredentials is the gate go, run and once pass before any work,
// after loadEnv: with no key, configure on a terminal or stop with what
// to set; then one probe request, and one reconfiguration at most when
// the gateway rejects the credentials.
func (m *Command) ensureCredentials(ctx context.Context, ui *UI) error {
	env := flower.Environment{Lang: ui.Lang}
	if err := env.CheckCredentials(); err != nil {
		if !ui.Interactive {
			return err
		}
		if err := wizard(ctx, ui, ui.T("firstRun"), false); err != nil {
			return err
		}
	}
	v := probeEnv(ctx, nil)
	switch v.Verdict {
	case VerdictAuth, VerdictConfig:
		key, noTTY := "probeAuth", "authNoTTY"
		if v.Verdict == VerdictConfig {
			key, noTTY = "probeConfig", "configNoTTY"
		}
		ui.Screen.Line(screen.Yellow, fmt.Sprintf(ui.T(key), clipRunes(v.Detail, 160)))
		if !ui.Interactive {
			return errorText(ui.Lang, noTTY)
		}
		if err := wizard(ctx, ui, ui.T("reconfigure"), false); err != nil {
			return err
		}
		if v = probeEnv(ctx, nil); v.Verdict == VerdictAuth || v.Verdict == VerdictConfig {
			return fmt.Errorf("%s\n%s", fmt.Sprintf(ui.T(key), clipRunes(v.Detail, 160)), ui.T(noTTY))
		}
	case VerdictNet:
		ui.Screen.Line(screen.Dim, fmt.Sprintf(ui.T("probeNet"), clipRunes(v.Detail, 80)))
	}
	return nil
}

// workspaceEnvLine says at start what the workspace .env gave, or what of
// it was ignored (see flower.WorkspaceEnvKeys).
func workspaceEnvLine(ui *UI, rep flower.DotenvReport) {
	switch {
	case rep.Workspace == "":
	case len(rep.WorkspaceIgnored) > 0:
		ui.Screen.Line(screen.Yellow, fmt.Sprintf(ui.T("envIgnored"), strings.Join(rep.WorkspaceIgnored, ", "), flower.UserEnvPath()))
	case len(rep.WorkspaceUsed) > 0:
		ui.Screen.Line(screen.Dim, fmt.Sprintf(ui.T("envUsed"), strings.Join(rep.WorkspaceUsed, ", ")))
	}
}

// noSandboxLine is the start's line when glances run on the parser alone,
// with the fix.
func noSandboxLine(ui *UI, s guard.Sandbox) string {
	if s.Reason == guard.SandboxUnsupported {
		return fmt.Sprintf(ui.T("noSandboxOS"), runtime.GOOS)
	}
	return fmt.Sprintf(ui.T("noSandbox"), sandboxWhy(ui, s), s.Fix)
}

func sandboxWhy(ui *UI, s guard.Sandbox) string {
	if s.Reason == guard.SandboxRefused {
		return ui.T("sandboxRefused")
	}
	return ui.T("sandboxMissing")
}

// protectionLine says which protection holds the main thread's glances:
// `flower setup` and `flower demo` show it.
func protectionLine(ui *UI) string {
	s := guard.DetectSandbox()
	switch {
	case s.Active():
		return fmt.Sprintf(ui.T("protection"), ui.T("protSandbox"))
	case s.Reason == guard.SandboxUnsupported:
		return fmt.Sprintf(ui.T("protection"), fmt.Sprintf(ui.T("protParser"), runtime.GOOS))
	}
	return fmt.Sprintf(ui.T("protection"), fmt.Sprintf(ui.T("protParser"), sandboxWhy(ui, s))) + "\n  " + fmt.Sprintf(ui.T("fixLine"), s.Fix)
}

// Verdict is what the probe request found.
type Verdict string

// The probe's verdicts.
const (
	VerdictOK     Verdict = "ok"     // < 400, or nothing decidable
	VerdictAuth   Verdict = "auth"   // 401/403: the key or token is wrong
	VerdictConfig Verdict = "config" // 404, or a 400 about the model: the address or model is wrong
	VerdictNet    Verdict = "net"    // no answer, or 5xx: run anyway
)

// ProbeResult is a verdict and a short reason.
type ProbeResult struct {
	Verdict Verdict
	Detail  string
}

// probeEnv probes with the process environment, or with vals laid over it.
func probeEnv(ctx context.Context, vals map[string]string) ProbeResult {
	get := func(k string) string {
		if v, ok := vals[k]; ok {
			return v
		}
		return os.Getenv(k)
	}
	key, token := get("ANTHROPIC_API_KEY"), get("ANTHROPIC_AUTH_TOKEN")
	model := firstNonEmpty(get("ANTHROPIC_DEFAULT_HAIKU_MODEL"), get("ANTHROPIC_MODEL"), "claude-3-5-haiku-20241022")
	return Probe(ctx, get("ANTHROPIC_BASE_URL"), key, token, model)
}

// Probe sends one minimal Messages API request (16 tokens: models that
// always think need more than one) and classifies the answer.
func Probe(ctx context.Context, baseURL, apiKey, token, model string) ProbeResult {
	if apiKey == "" && token == "" {
		return ProbeResult{VerdictAuth, "no ANTHROPIC_API_KEY or ANTHROPIC_AUTH_TOKEN"}
	}
	base := strings.TrimRight(firstNonEmpty(baseURL, "https://api.anthropic.com"), "/")
	base = strings.TrimSuffix(base, "/v1")
	body, _ := json.Marshal(map[string]any{"model": model, "max_tokens": 16,
		"messages": []map[string]string{{"role": "user", "content": "hi"}}})
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/messages", bytes.NewReader(body))
	if err != nil {
		return ProbeResult{VerdictConfig, err.Error()}
	}
	req.Header.Set("content-type", "application/json")
	req.Header.Set("anthropic-version", "2023-06-01")
	if apiKey != "" {
		req.Header.Set("x-api-key", apiKey)
	} else {
		req.Header.Set("authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return ProbeResult{VerdictNet, err.Error()}
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	detail := fmt.Sprintf("%d %s", resp.StatusCode, strings.TrimSpace(string(data)))
	switch {
	case resp.StatusCode < 400:
		return ProbeResult{VerdictOK, ""}
	case resp.StatusCode == 401 || resp.StatusCode == 403:
		return ProbeResult{VerdictAuth, detail}
	case resp.StatusCode == 404, resp.StatusCode == 400 && modelMissing.Match(data):
		return ProbeResult{VerdictConfig, detail}
	case resp.StatusCode >= 500:
		return ProbeResult{VerdictNet, detail}
	}
	return ProbeResult{VerdictOK, detail}
}

var modelMissing = regexp.MustCompile(`(?i)model`)

// wizard asks for key, gateway and model on the terminal and writes them
// to the per-user .env (0600). It first shows what the file holds now,
// masked; the key is read without echo. Ctrl-C (ctx ending) or Ctrl-D at
// any prompt, or during the probe, leaves at once and writes nothing. With
// check, the values are probed before anything is written: rejected ones
// leave the file as it was, and a probe that could not decide (no answer)
// saves only when the person says so after being told why.
func wizard(ctx context.Context, ui *UI, reason string, check bool) error {
	path := flower.UserEnvPath()
	unchanged := func() error {
		return &exitError{code: ExitInterrupted, err: fmt.Errorf(ui.T("setupLeft")+"%w", path, silentWrap{errCancelled})}
	}
	ui.Screen.Line(screen.Cyan, screen.Cut(ui.T("wizardHead")+strings.Repeat("=", 60), max(40, ui.Screen.Width())))
	ui.Printf("%s", reason)
	ui.languageHint()
	ui.Printf(ui.T("wizardWhere"), path)
	if now := configuredNow(ui.Lang, path); len(now) > 0 {
		ui.Printf("%s", ui.T("setupNow"))
		for _, l := range now {
			ui.Printf("   %s", l)
		}
	}
	var vals [3]string
	for i, q := range []string{"wizardKey", "wizardBase", "wizardModel"} {
		ui.Printf("%s", ui.T(q))
		var line string
		var err error
		if i == 0 {
			line, err = ui.readSecret(ctx, "   > ")
		} else {
			line, err = ui.readLinePrompt(ctx, "   > ")
		}
		if ctx.Err() != nil {
			return unchanged()
		}
		if err != nil {
			return &exitError{code: ExitFailure, err: fmt.Errorf(ui.T("setupLeft")+"%w", path, silentWrap{errCancelled})}
		}
		vals[i] = strings.TrimSpace(line)
		if i == 0 && vals[0] == "" {
			return fmt.Errorf("%s %s", ui.T("noToken"), fmt.Sprintf(ui.T("setupUnchanged"), path))
		}
		if i == 0 {
			ui.Screen.Line(screen.Dim, "   "+flower.MaskSecret(ui.Lang, vals[0]))
		}
	}
	kv := map[string]string{}
	if strings.HasPrefix(vals[0], "sk-ant-") {
		kv["ANTHROPIC_API_KEY"] = vals[0]
	} else {
		kv["ANTHROPIC_AUTH_TOKEN"] = vals[0]
	}
	if vals[1] != "" {
		kv["ANTHROPIC_BASE_URL"] = vals[1]
	}
	if vals[2] != "" {
		for _, k := range []string{"ANTHROPIC_MODEL", "ANTHROPIC_DEFAULT_OPUS_MODEL", "ANTHROPIC_DEFAULT_SONNET_MODEL"} {
			kv[k] = vals[2]
		}
	}
	if check {
		ui.Printf("%s", ui.T("probing"))
		// The probe sees only what was typed, never an old key from the
		// environment: the old one is what setup replaces.
		probe := map[string]string{"ANTHROPIC_API_KEY": kv["ANTHROPIC_API_KEY"], "ANTHROPIC_AUTH_TOKEN": kv["ANTHROPIC_AUTH_TOKEN"],
			"ANTHROPIC_BASE_URL": kv["ANTHROPIC_BASE_URL"], "ANTHROPIC_MODEL": kv["ANTHROPIC_MODEL"]}
		v := probeEnv(ctx, probe)
		if ctx.Err() != nil {
			return unchanged() // a cancelled probe is no network failure
		}
		switch v.Verdict {
		case VerdictAuth, VerdictConfig:
			key := map[Verdict]string{VerdictAuth: "probeAuth", VerdictConfig: "probeConfig"}[v.Verdict]
			return fmt.Errorf("%s\n%s", fmt.Sprintf(ui.T(key), clipRunes(v.Detail, 160)), fmt.Sprintf(ui.T("notSaved"), path))
		case VerdictNet:
			ui.Screen.Line(screen.Yellow, fmt.Sprintf(ui.T("probeUnsure"), clipRunes(v.Detail, 160)))
			line, err := ui.readLinePrompt(ctx, ui.T("saveAnyway"))
			if ctx.Err() != nil {
				return unchanged()
			}
			if err != nil || !isExplicitYes(line) {
				return &exitError{code: ExitFailure, err: fmt.Errorf(ui.T("setupUnchanged"), path)}
			}
		}
	}
	if err := writeUserEnv(path, ui.T("envHeader"), kv); err != nil {
		return fmt.Errorf("cannot write %s: %w\nmake its directory writable, or set ANTHROPIC_API_KEY in the environment", path, err)
	}
	// Reloaded at once: typed values win over what the chain had.
	for k, v := range kv {
		os.Setenv(k, v)
	}
	ui.Screen.Line(screen.Green, fmt.Sprintf(ui.T("saved"), path))
	return nil
}

// configuredNow describes what the per-user .env at path holds, secrets
// masked; nothing when there is no such file.
func configuredNow(l flower.Lang, path string) []string {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	entries, _ := flower.ParseDotenv(path, data)
	vals := map[string]string{}
	for _, e := range entries {
		vals[e.Key] = e.Value
	}
	env := flower.Environment{Lang: l, LookupEnv: func(k string) (string, bool) { v, ok := vals[k]; return v, ok }}
	var out []string
	for _, line := range env.DescribeCredentials() {
		if k, _, _ := strings.Cut(line, " "); vals[k] != "" {
			out = append(out, line)
		}
	}
	return out
}

// writeUserEnv writes the credentials into the per-user .env, readable by
// its owner only. Every other line of the file stays as the person wrote
// it (FLOWER_CLAUDE, FLOWER_NOTIFY, comments): setup replaces only the
// credentials and its own header.
func writeUserEnv(path, header string, kv map[string]string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString(header + "\n")
	for _, k := range flower.CredentialKeys() {
		if v := kv[k]; v != "" {
			fmt.Fprintf(&b, "%s=%s\n", k, v)
		}
	}
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	for _, line := range keptEnvLines(old) {
		b.WriteString(line + "\n")
	}
	return atomicfile.Write(path, []byte(b.String()), 0o600)
}

// keptEnvLines are the lines of an old per-user .env that setup does not
// write: every line but a credential's and setup's header (in either
// language), and no trailing blank ones.
func keptEnvLines(old []byte) []string {
	drop := map[int]bool{}
	entries, _ := flower.ParseDotenv("", old)
	for _, e := range entries {
		if slices.Contains(flower.CredentialKeys(), e.Key) {
			drop[e.Line] = true
		}
	}
	headers := texts["envHeader"]
	var kept []string
	for i, line := range strings.Split(strings.TrimPrefix(string(old), "\ufeff"), "\n") {
		if drop[i+1] || slices.Contains(headers[:], strings.TrimSpace(line)) {
			continue
		}
		kept = append(kept, line)
	}
	for len(kept) > 0 && strings.TrimSpace(kept[len(kept)-1]) == "" {
		kept = kept[:len(kept)-1]
	}
	return kept
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

func clipRunes(s string, n int) string {
	r := []rune(strings.Join(strings.Fields(s), " "))
	if len(r) <= n {
		return string(r)
	}
	return string(r[:n]) + "…"
}
