package team

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

// The handler itself masks and folds: whatever a caller (River, pgx's
// errors, the worker) hands it, in the message, a string, an error, a
// group or attributes given ahead with With.
func TestTheLogHandlerMasksSecretsAndFoldsLinesInEveryAttribute(t *testing.T) {
	var out bytes.Buffer
	h, err := NewLogHandler(&out, "json")
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(withSecrets(h, []string{"own-gateway-token-77", "pw"})).With("db", "postgres://flower:dbsecret1@db:5432/team")
	multi := errors.New("failed connecting to user=flower database=team:\n\t127.0.0.1:5432: password=dbsecret1 refused\n\t127.0.0.1:5432: password=dbsecret1 refused")
	log.Warn("call with Bearer abc.def-123 and sk-ant-api03-XyZ_0-9 then\nsecond line own-gateway-token-77",
		"err", multi, "repo", "https://ghp_repotoken99@github.com/o/r.git",
		slog.Group("req", "header", "x-api-key: sk-other-key-1", "url", "http://u:p4ss@h/x?password=qs1"))
	_, err = NewLogHandler(&out, "yaml")
	if err == nil || !strings.Contains(err.Error(), "text or json") {
		t.Errorf("an unknown format: %v, want an error naming text or json", err)
	}

	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("one record wrote %d lines:\n%s", len(lines), out.String())
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, lines[0])
	}
	for _, secret := range []string{"dbsecret1", "abc.def-123", "XyZ_0-9", "own-gateway-token-77", "ghp_repotoken99", "sk-other-key-1", "p4ss", "qs1"} {
		if strings.Contains(lines[0], secret) {
			t.Errorf("the line shows %q: %s", secret, lines[0])
		}
	}
	if e, _ := rec["err"].(string); strings.Count(e, "refused") != 1 || !strings.Contains(e, "team: | 127.0.0.1:5432") {
		t.Errorf("the error is not folded on one line with its repeats dropped: %q", e)
	}
	if rec["db"] != "postgres://flower:xxxxx@db:5432/team" || !strings.Contains(rec["msg"].(string), "then | second line xxxxx") {
		t.Errorf("what the reader needs is gone: db %v, msg %v", rec["db"], rec["msg"])
	}

	// The text format: one line too, as masked.
	var text bytes.Buffer
	th, err := NewLogHandler(&text, "text")
	if err != nil {
		t.Fatal(err)
	}
	slog.New(th).Error("River said:\n  dial postgres://u:dbsecret1@h/db\n  again", "err", multi)
	if got := text.String(); strings.Count(got, "\n") != 1 || strings.Contains(got, "dbsecret1") || !strings.Contains(got, "River said: | dial postgres://u:xxxxx@h/db | again") {
		t.Errorf("the text line is not one masked line:\n%s", got)
	}
}
