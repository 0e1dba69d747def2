package main

import (
	"os/exec"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestTheBinaryLinksNoTestCode keeps test doubles out of the command:
// flower demo's fake API is package fakeapi, which imports no testing code.
func TestTheBinaryLinksNoTestCode(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep == "testing" || strings.HasSuffix(dep, "/claudetest") || strings.Contains(dep, "goleak") {
			t.Errorf("the flower binary links %s", dep)
		}
	}
}
