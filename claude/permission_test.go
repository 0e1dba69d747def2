package claude_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/flowerrun/flower/claude"
)

func TestPermissionAnswersOnTheWire(t *testing.T) {
	orig := []byte(`{"command":"ls","n":12345678901234567890}`)
	tests := []struct {
		name string
		res  claude.PermissionResult
		want string
	}{
		{"allow echoes the original input", claude.Allow(), `{"behavior":"allow","updatedInput":{"command":"ls","n":12345678901234567890}}`},
		{"allow with a new input", claude.AllowInput(json.RawMessage(`{"command":"ls -la"}`)), `{"behavior":"allow","updatedInput":{"command":"ls -la"}}`},
		{"deny carries the message", claude.DenyTool("not here", false), `{"behavior":"deny","message":"not here"}`},
		{"deny can interrupt", claude.DenyTool("stop", true), `{"behavior":"deny","message":"stop","interrupt":true}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := json.Marshal(tt.res.Wire(orig))
			if err != nil {
				t.Fatal(err)
			}
			var a, b any
			json.Unmarshal(got, &a)
			json.Unmarshal([]byte(tt.want), &b)
			if !reflect.DeepEqual(a, b) || !json.Valid(got) {
				t.Errorf("wire = %s, want %s", got, tt.want)
			}
			if tt.name == "allow echoes the original input" && !strings.Contains(string(got), "12345678901234567890") {
				t.Errorf("big numbers must survive the echo: %s", got)
			}
		})
	}
}

func TestFindCLI(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "claude")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got, err := claude.FindCLI(exe); err != nil || got != exe {
		t.Errorf("explicit path: %q, %v", got, err)
	}
	var nf *claude.CLINotFoundError
	if _, err := claude.FindCLI(filepath.Join(dir, "missing")); !errors.As(err, &nf) || nf.Path == "" {
		t.Errorf("a wrong explicit path must be reported, got %v", err)
	}
	t.Setenv("PATH", dir)
	if got, err := claude.FindCLI(""); err != nil || got != exe {
		t.Errorf("PATH: %q, %v", got, err)
	}
	t.Setenv("PATH", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	// The driver knows nothing of flower: flower's variable is flower's to
	// read and pass as Options.CLIPath.
	t.Setenv("FLOWER_CLAUDE", exe)
	if got, err := claude.FindCLI(""); got == exe {
		t.Errorf("FindCLI read FLOWER_CLAUDE: %q, %v", got, err)
	}
	if _, err := claude.FindCLI(""); !errors.As(err, &nf) {
		// /usr/local/bin/claude may exist on a developer's machine.
		if _, statErr := os.Stat("/usr/local/bin/claude"); statErr != nil {
			t.Errorf("nothing anywhere: %v", err)
		}
	}
}
