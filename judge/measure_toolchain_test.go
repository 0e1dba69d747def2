package judge

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowerrun/flower/internal/testenv"
)

// Honest Go work is measured by the real toolchain from cold caches
// (issue 42, point 1): in the sandbox HOME is read-only, and Go's build
// cache lives under it; every `go test` failed flower's measurement with
// "read-only file system" before. A measurement's caches are its own,
// writable and empty: a package whose test passes measures exit 0, one
// whose test fails exit 1.
func TestAGoProjectIsMeasuredByGoFromColdCaches(t *testing.T) {
	t.Parallel()
	testenv.Sandbox(t)
	if _, err := exec.LookPath("go"); err != nil {
		t.Fatalf("go is not on PATH: %v", err)
	}
	// A HOME of nothing: no build cache, no module cache to lean on.
	home := t.TempDir()
	ws := t.TempDir()
	for name, content := range map[string]string{
		"go.mod":          "module example.com/m\n\ngo 1.22\n",
		"ok/ok.go":        "package ok\n\nfunc Sum(a, b int) int { return a + b }\n",
		"ok/ok_test.go":   "package ok\n\nimport \"testing\"\n\nfunc TestSum(t *testing.T) {\n\tif Sum(2, 2) != 4 {\n\t\tt.Fatal(\"2+2\")\n\t}\n}\n",
		"bad/bad.go":      "package bad\n\nfunc Sum(a, b int) int { return a - b }\n",
		"bad/bad_test.go": "package bad\n\nimport \"testing\"\n\nfunc TestSum(t *testing.T) {\n\tif Sum(2, 2) != 4 {\n\t\tt.Fatal(\"2+2 is not\", Sum(2, 2))\n\t}\n}\n",
	} {
		p := filepath.Join(ws, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	items := []Item{
		{ID: "ok", Text: "the ok package's tests pass", Command: "go test ./ok/"},
		{ID: "bad", Text: "the bad package's tests pass", Command: "go test ./bad/"},
	}
	o := MeasureOptions{Env: []string{"HOME=" + home, "GOTOOLCHAIN=local", "GOFLAGS=-mod=mod", "GOPROXY=off"}}
	ms := Measure(context.Background(), ws, items, o)
	byID := map[string]Measurement{}
	for _, m := range ms {
		byID[m.Item.ID] = m
	}
	if m := byID["ok"]; m.Exit != 0 || m.Err != "" {
		t.Errorf("a passing Go test: exit %d, err %q, output:\n%s%s", m.Exit, m.Err, m.Head, m.Tail)
	}
	if m := byID["bad"]; m.Exit != 1 || !strings.Contains(m.Head+m.Tail, "2+2 is not 0") {
		t.Errorf("a failing Go test: exit %d, err %q, output:\n%s%s", m.Exit, m.Err, m.Head, m.Tail)
	}
	for _, m := range ms {
		if strings.Contains(m.Head+m.Tail, "read-only file system") {
			t.Errorf("%s: the toolchain met a read-only cache:\n%s%s", m.Item.ID, m.Head, m.Tail)
		}
	}
}

// The other toolchains of issue 42 (point 1), each on a small real
// project with one passing and one failing check, measured from the
// sandbox's read-only HOME: npm (its cache and logs), Python's unittest,
// make, and cargo offline. A toolchain this machine lacks fails the test
// under CI, rather than skipping it.
func TestProjectsOfEachToolchainAreMeasured(t *testing.T) {
	t.Parallel()
	testenv.Sandbox(t)
	cases := []struct {
		name, tool string
		files      map[string]string
		pass, fail string // the commands
		failSays   string
	}{
		{"npm", "npm", map[string]string{
			"package.json": `{"name":"m","version":"1.0.0","private":true,"scripts":{"test":"node test.js","test:bad":"node bad.js"}}`,
			"test.js":      "const assert = require('assert'); assert.strictEqual(1 + 1, 2); console.log('ok');\n",
			"bad.js":       "const assert = require('assert'); assert.strictEqual(1 + 1, 3, 'one and one is not three');\n",
		}, "npm test", "npm run test:bad", "one and one is not three"},
		{"python", "python3", map[string]string{
			"test_ok.py":  "import unittest\n\nclass T(unittest.TestCase):\n    def test_sum(self):\n        self.assertEqual(1 + 1, 2)\n",
			"test_bad.py": "import unittest\n\nclass T(unittest.TestCase):\n    def test_sum(self):\n        self.assertEqual(1 + 1, 3, 'one and one is not three')\n",
		}, "python3 -m unittest test_ok", "python3 -m unittest test_bad", "one and one is not three"},
		{"make", "make", map[string]string{
			"Makefile": "check:\n\ttest \"$$(printf 2)\" = 2\n\nbad:\n\t@echo one and one is not three; false\n",
		}, "make check", "make bad", "one and one is not three"},
		{"cargo", "cargo", map[string]string{
			"Cargo.toml": "[package]\nname = \"m\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[features]\nbad = []\n",
			"src/lib.rs": "pub fn sum(a: i32, b: i32) -> i32 { a + b }\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn sum() {\n        let want = if cfg!(feature = \"bad\") { 3 } else { 2 };\n        assert_eq!(super::sum(1, 1), want, \"one and one is not three\");\n    }\n}\n",
		}, "cargo test --offline -q", "cargo test --offline -q --features bad", "one and one is not three"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if _, err := exec.LookPath(c.tool); err != nil {
				if os.Getenv("CI") != "" {
					t.Fatalf("CI: %s is not on PATH, and the judge's measurement of %s projects is not shown: %v", c.tool, c.name, err)
				}
				t.Skipf("%s is not on PATH", c.tool)
			}
			ws := t.TempDir()
			for name, content := range c.files {
				p := filepath.Join(ws, name)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			items := []Item{{ID: "pass", Text: "passes", Command: c.pass}, {ID: "fail", Text: "fails", Command: c.fail}}
			ms := Measure(context.Background(), ws, items, MeasureOptions{})
			if m := ms[0]; m.Exit != 0 || m.Err != "" {
				t.Errorf("%s: exit %d, err %q, want 0:\n%s%s", c.pass, m.Exit, m.Err, m.Head, m.Tail)
			}
			if m := ms[1]; m.Exit <= 0 || !strings.Contains(m.Head+m.Tail, c.failSays) {
				t.Errorf("%s: exit %d, err %q, want a failure saying %q:\n%s%s", c.fail, m.Exit, m.Err, c.failSays, m.Head, m.Tail)
			}
			for _, m := range ms {
				if strings.Contains(strings.ToLower(m.Head+m.Tail), "read-only file system") {
					t.Errorf("%s met a read-only folder:\n%s%s", m.Item.Command, m.Head, m.Tail)
				}
			}
		})
	}
}
