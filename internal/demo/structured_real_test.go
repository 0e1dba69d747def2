package demo

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/flowerrun/flower/claude/claudetest"
	"github.com/flowerrun/flower/internal/lang"
)

// The shapes of the goal step's and the round judge's answers that the
// demo is written for, as strict JSON Schemas: the real CLI checks the
// demo's answers against them.
const (
	goalSchema = `{"type":"object","additionalProperties":false,"required":["statement","checklist"],"properties":{` +
		`"statement":{"type":"string","minLength":1},` +
		`"checklist":{"type":"array","minItems":1,"items":{"type":"object","additionalProperties":false,"required":["id","text","command"],"properties":{` +
		`"id":{"type":"string","minLength":1},"text":{"type":"string","minLength":1},"command":{"type":"string"}}}}}}`
	verdictSchema = `{"type":"object","additionalProperties":false,"required":["items","conclusion","reason","missing","why_no_work"],"properties":{` +
		`"items":{"type":"array","items":{"type":"object","additionalProperties":false,"required":["id","status","evidence","reason"],"properties":{` +
		`"id":{"type":"string","minLength":1},"status":{"enum":["passed","failed","not_run"]},"evidence":{"type":"string"},"reason":{"type":"string"}}}},` +
		`"conclusion":{"enum":["achieved","not_yet","unreachable"]},"reason":{"type":"string"},"missing":{"type":"string"},"why_no_work":{"type":"string"}}}`
)

// structuredResult runs the real CLI in ws on prompt with --json-schema
// schema against the demo's model and returns the result's
// structured_output; it fails the test when there is none.
func structuredResult(t *testing.T, tag lang.Lang, ws, prompt, schema string) json.RawMessage {
	t.Helper()
	srv := claudetest.NewServer(t, Handler(tag, ws))
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, claudetest.CLIPath(t), "-p", prompt, "--output-format", "stream-json", "--verbose",
		"--permission-mode", "acceptEdits", "--json-schema", schema)
	cmd.Dir = ws
	cmd.Env = claudetest.BaseEnv()
	for k, v := range claudetest.Env(t, srv) {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var result struct {
		Subtype          string          `json:"subtype"`
		Result           string          `json:"result"`
		Errors           []string        `json:"errors"`
		StructuredOutput json.RawMessage `json:"structured_output"`
	}
	sc := bufio.NewScanner(bytes.NewReader(stdout.Bytes()))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var line struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.Type == "result" {
			json.Unmarshal(sc.Bytes(), &result)
		}
	}
	if err != nil || len(result.StructuredOutput) == 0 {
		t.Fatalf("claude: %v; result %s %q %q, no structured output\nstderr: %s", err, result.Subtype, result.Result, result.Errors, stderr.String())
	}
	return result.StructuredOutput
}

// decodeAs decodes raw into a new T.
func decodeAs[T any](t *testing.T, raw json.RawMessage) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	return v
}

func TestRealCLIAcceptsTheDemosStructuredAnswers(t *testing.T) {
	t.Parallel()
	for _, tag := range []lang.Lang{"en", "zh"} {
		t.Run(string(tag), func(t *testing.T) {
			t.Parallel()
			tx, m := TextsFor(tag), markersFor(tag)
			t.Run("goal", func(t *testing.T) {
				t.Parallel()
				prompt := m.setGoal + "\n\n## Goal\nA small tool that " + m.briefLine + "hello, world\n"
				got := decodeAs[goalAnswer](t, structuredResult(t, tag, t.TempDir(), prompt, goalSchema))
				want := decodeAs[goalAnswer](t, mustMarshal(t, Script(tag, t.TempDir()).Reply(structuredConversation(prompt)).Blocks[0].Input))
				if !reflect.DeepEqual(got, want) || len(got.Checklist) != 2 {
					t.Errorf("structured_output = %+v, want the demo's goal %+v", got, want)
				}
			})
			t.Run("judge", func(t *testing.T) {
				t.Parallel()
				ws := t.TempDir()
				if err := os.WriteFile(filepath.Join(ws, tx.File), []byte("hello, world\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				prompt := m.verify + "\n\n# Goal\n\n" + m.goalLine + "hello, world\n- " + m.lsText + "\n\n# reply\n\n" + tx.Round2
				got := decodeAs[verdictAnswer](t, structuredResult(t, tag, ws, prompt, verdictSchema))
				if got.Conclusion != "achieved" || got.Reason != tx.Passed || len(got.Items) != 2 || got.Items[0].Status != "passed" || got.Items[1].Status != "passed" {
					t.Errorf("structured_output = %+v; want both items passed, achieved", got)
				}
			})
		})
	}
}

func mustMarshal(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
