package ephemeral

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

const prelude = `enable -n echo pwd type command jobs test [ kill
command_not_found_handle() { builtin printf '%s\0' "$#" "$@" >> "$LOGFILE"; return $RC; }
`

func loadInputs(t *testing.T) []string {
	var in []string
	for _, c := range cases {
		in = append(in, c.cmd)
	}
	dirs := []string{os.Getenv("CORPUS"), "testdata/fuzz/FuzzIs"}
	for _, d := range dirs {
		if d == "" {
			continue
		}
		files, _ := filepath.Glob(filepath.Join(d, "*"))
		for _, f := range files {
			b, _ := os.ReadFile(f)
			for _, line := range strings.Split(string(b), "\n") {
				if strings.HasPrefix(line, "string(") {
					s, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(line, "string("), ")"))
					if err == nil {
						in = append(in, s)
					}
				}
			}
		}
	}
	if f := os.Getenv("EXTRA"); f != "" {
		b, _ := os.ReadFile(f)
		for _, line := range strings.Split(string(b), "\n") {
			if s, err := strconv.Unquote(line); err == nil {
				in = append(in, s)
			}
		}
	}
	return in
}

func TestBashAgrees(t *testing.T) {
	if os.Getenv("BASHDIFF") == "" {
		t.Skip()
	}
	tmp := t.TempDir()
	pre := filepath.Join(tmp, "prelude")
	os.WriteFile(pre, []byte(prelude), 0o644)
	n := 0
	for _, cmd := range loadInputs(t) {
		if !Is(cmd) {
			continue
		}
		n++
		segs, _ := split(strings.Trim(cmd, " \t\n"))
		want := map[string]int{}
		verbOnly := map[string]int{}
		for _, s := range segs {
			uncertain := false
			var texts []string
			for _, w := range s {
				texts = append(texts, w.text)
				if w.uncertain() {
					uncertain = true
				}
			}
			if uncertain {
				verbOnly[s[0].text]++
			} else {
				want[strings.Join(texts, "\x00")]++
			}
		}
		for _, rc := range []string{"0", "1"} {
			sandbox := filepath.Join(tmp, "box"+rc)
			os.RemoveAll(sandbox)
			os.Mkdir(sandbox, 0o755)
			logf := filepath.Join(tmp, "log")
			os.Remove(logf)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			c := exec.CommandContext(ctx, "bash", "-c", cmd)
			c.Dir = sandbox
			c.Env = []string{"PATH=/nonexistent", "BASH_ENV=" + pre, "LOGFILE=" + logf, "RC=" + rc, "HOME=" + sandbox}
			var stderr bytes.Buffer
			c.Stderr = &stderr
			c.Run()
			cancel()
			b, _ := os.ReadFile(logf)
			fields := strings.Split(string(b), "\x00")
			var got []string
			for i := 0; i+1 < len(fields); {
				k, err := strconv.Atoi(fields[i])
				if err != nil || i+1+k > len(fields) {
					t.Errorf("%q: bad log %q", cmd, b)
					break
				}
				got = append(got, strings.Join(fields[i+1:i+1+k], "\x00"))
				i += 1 + k
			}
			left := map[string]int{}
			for k, v := range want {
				left[k] = v
			}
			lv := map[string]int{}
			for k, v := range verbOnly {
				lv[k] = v
			}
			for _, g := range got {
				if left[g] > 0 {
					left[g]--
					continue
				}
				verb := strings.SplitN(g, "\x00", 2)[0]
				if lv[verb] > 0 {
					lv[verb]--
					continue
				}
				t.Errorf("%q (rc %s): bash ran %q, not among Is segments %v %v", cmd, rc, strings.ReplaceAll(g, "\x00", " "), want, verbOnly)
			}
			entries, _ := os.ReadDir(sandbox)
			if len(entries) > 0 {
				var names []string
				for _, e := range entries {
					names = append(names, e.Name())
				}
				sort.Strings(names)
				t.Errorf("%q: created %v", cmd, names)
			}
		}
	}
	t.Logf("%d accepted inputs run", n)
}
