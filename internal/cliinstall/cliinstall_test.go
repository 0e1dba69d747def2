package cliinstall

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeNpm writes an npm into a new directory and returns a PATH that
// finds it first; the npm does what npm
// install does to flower's temporary package directory: it puts a claude
// reporting version (after sleeping FAKE_NPM_SLEEP seconds), or fails
// with FAKE_NPM_FAIL's text. Each run appends a line to log.
func fakeNpm(t *testing.T, version, log string) string {
	t.Helper()
	dir := t.TempDir()
	bin, err := binaryIn(".")
	if err != nil {
		// A platform the CLI has no build for; CI's has one.
		if os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	script := `#!/bin/sh
echo "$PWD" >> "` + log + `"
if [ -n "$FAKE_NPM_SLEEP" ]; then sleep "$FAKE_NPM_SLEEP"; fi
if [ -n "$FAKE_NPM_FAIL" ]; then echo "npm error code ENOTFOUND" >&2; echo "$FAKE_NPM_FAIL" >&2; exit 1; fi
grep -q '"@anthropic-ai/claude-code":"` + Version + `"' package.json || { echo "wrong package.json" >&2; exit 3; }
mkdir -p "$(dirname "` + bin + `")"
printf '#!/bin/sh\necho "` + version + ` (Claude Code)"\n' > "` + bin + `"
chmod +x "` + bin + `"
`
	if err := os.WriteFile(filepath.Join(dir, "npm"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir + string(os.PathListSeparator) + "/usr/bin:/bin" // the fake first, then sh's tools
}

// envOf is an Env over a map.
func envOf(m map[string]string) Env { return Env{Getenv: func(k string) string { return m[k] }} }

func writeExe(t *testing.T, path, version string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("#!/bin/sh\necho '"+version+" (Claude Code)'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}

func TestFindLooksAtFlowerClaudeThenTheCacheThenPATH(t *testing.T) {
	ctx := context.Background()
	cache, pathDir := t.TempDir(), t.TempDir()
	env := map[string]string{"XDG_CACHE_HOME": cache, "PATH": pathDir, "HOME": t.TempDir()}

	_, err := envOf(env).Find(ctx)
	var none *NotFoundError
	if !errors.As(err, &none) || none.Dir != filepath.Join(cache, "flower", "claude-cli", Version) {
		t.Fatalf("nothing anywhere: %v", err)
	}

	writeExe(t, filepath.Join(pathDir, "claude"), "2.0.1")
	f, err := envOf(env).Find(ctx)
	if err != nil || f.From != FromPATH || f.Version != "2.0.1" || !f.Untested {
		t.Errorf("PATH's old claude: %+v, %v", f, err)
	}
	writeExe(t, filepath.Join(pathDir, "claude"), Version)
	if f, _ := envOf(env).Find(ctx); f.Untested {
		t.Errorf("the pinned version on PATH is tested: %+v", f)
	}

	bin, _ := binaryIn(filepath.Join(cache, "flower", "claude-cli", Version))
	writeExe(t, bin, Version)
	if f, err := envOf(env).Find(ctx); err != nil || f.From != FromCache || f.Path != bin {
		t.Errorf("the cache comes before PATH: %+v, %v", f, err)
	}

	own := filepath.Join(t.TempDir(), "my-claude")
	writeExe(t, own, "2.1.320")
	env["FLOWER_CLAUDE"] = own
	if f, err := envOf(env).Find(ctx); err != nil || f.From != FromEnv || f.Path != own || f.Untested {
		t.Errorf("FLOWER_CLAUDE comes first: %+v, %v", f, err)
	}
	env["FLOWER_CLAUDE"] = filepath.Join(t.TempDir(), "missing")
	if _, err := envOf(env).Find(ctx); err == nil || !strings.Contains(err.Error(), "FLOWER_CLAUDE="+env["FLOWER_CLAUDE"]) || !strings.Contains(err.Error(), "not an executable") {
		t.Errorf("a FLOWER_CLAUDE that is no binary: %v", err)
	}
}

// A CLI the system refuses to start (text without #!, a binary of another
// machine) fails the lookup with the system's reason: a run that used it
// retried five attempts for two minutes as "unknown". One that starts
// and fails is found, its version unknown.
func TestACLIThatCannotStartIsRefusedAtOnce(t *testing.T) {
	ctx := context.Background()
	pathDir := t.TempDir()
	env := map[string]string{"XDG_CACHE_HOME": t.TempDir(), "PATH": pathDir, "HOME": t.TempDir()}
	junk := func(path string) {
		if err := os.WriteFile(path, []byte("this is not a program\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	junk(filepath.Join(pathDir, "claude"))
	_, err := envOf(env).Find(ctx)
	if err == nil || !strings.Contains(err.Error(), "the claude on PATH, "+filepath.Join(pathDir, "claude")+", cannot be run (exec format error)") ||
		!strings.Contains(err.Error(), "FLOWER_CLAUDE=/path/to/claude") {
		t.Errorf("a claude on PATH that cannot start: %v", err)
	}
	own := filepath.Join(t.TempDir(), "my-claude")
	junk(own)
	env["FLOWER_CLAUDE"] = own
	_, err = envOf(env).Find(ctx)
	if err == nil || !strings.Contains(err.Error(), "FLOWER_CLAUDE="+own+" cannot be run (exec format error): point it at the claude binary") {
		t.Errorf("a FLOWER_CLAUDE that cannot start: %v", err)
	}
	if err := os.WriteFile(own, []byte("#!/bin/sh\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if f, err := envOf(env).Find(ctx); err != nil || f.Path != own || f.Version != "" {
		t.Errorf("a FLOWER_CLAUDE that starts and fails is found, version unknown: %+v, %v", f, err)
	}
}

func TestInstallPutsThePinnedCLIIntoTheCacheWithNpm(t *testing.T) {
	cache, log := t.TempDir(), filepath.Join(t.TempDir(), "npm.log")
	env := envOf(map[string]string{"XDG_CACHE_HOME": cache, "PATH": fakeNpm(t, Version, log)})
	var lines []string
	f, err := env.Install(context.Background(), func(s string) { lines = append(lines, s) })
	if err != nil {
		t.Fatal(err)
	}
	dir, _ := env.Dir()
	if bin, _ := binaryIn(dir); f.Path != bin || f.From != FromCache || f.Version != Version {
		t.Errorf("installed %+v, want %s", f, bin)
	}
	if len(lines) != 2 || !strings.Contains(lines[0], "installing the Claude Code CLI "+Version) || !strings.Contains(lines[1], "installed") {
		t.Errorf("progress %q", lines)
	}
	if again, err := env.Find(context.Background()); err != nil || again.Path != f.Path {
		t.Errorf("Find after the install: %+v, %v", again, err)
	}
	assertNoLeftovers(t, filepath.Dir(dir))
}

// assertNoLeftovers fails when a temporary install directory remains.
func assertNoLeftovers(t *testing.T, root string) {
	t.Helper()
	entries, _ := os.ReadDir(root)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".install-") {
			t.Errorf("a half-installed tree was left: %s", e.Name())
		}
	}
}

func TestInstallFailuresSayTheFixAndLeaveNoHalfInstalledCLI(t *testing.T) {
	t.Run("npm missing", func(t *testing.T) {
		cache := t.TempDir()
		_, err := envOf(map[string]string{"XDG_CACHE_HOME": cache, "PATH": t.TempDir()}).Install(context.Background(), nil)
		if err == nil || !strings.Contains(err.Error(), "npm is not on PATH") || !strings.Contains(err.Error(), "FLOWER_CLAUDE=") {
			t.Errorf("err = %v", err)
		}
		if entries, _ := os.ReadDir(cache); len(entries) != 0 {
			t.Errorf("without npm something was written: %v", entries)
		}
	})
	t.Run("npm failing offline", func(t *testing.T) {
		t.Setenv("FAKE_NPM_FAIL", "getaddrinfo ENOTFOUND registry.npmjs.org")
		cache := t.TempDir()
		env := envOf(map[string]string{"XDG_CACHE_HOME": cache, "PATH": fakeNpm(t, Version, filepath.Join(t.TempDir(), "log"))})
		_, err := env.Install(context.Background(), nil)
		if err == nil || !strings.Contains(err.Error(), "ENOTFOUND registry.npmjs.org") || !strings.Contains(err.Error(), "check the network") {
			t.Errorf("err = %v", err)
		}
		dir, _ := env.Dir()
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("a failed install left %s", dir)
		}
		assertNoLeftovers(t, filepath.Dir(dir))
		if _, err := env.Find(context.Background()); err == nil {
			t.Error("Find found a CLI after a failed install")
		}
	})
	t.Run("a binary of another version", func(t *testing.T) {
		env := envOf(map[string]string{"XDG_CACHE_HOME": t.TempDir(), "PATH": fakeNpm(t, "9.9.9", filepath.Join(t.TempDir(), "log"))})
		_, err := env.Install(context.Background(), nil)
		if err == nil || !strings.Contains(err.Error(), `"9.9.9"`) {
			t.Errorf("err = %v", err)
		}
		dir, _ := env.Dir()
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("a wrong binary was put in place at %s", dir)
		}
	})
	t.Run("cache directory not writable", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "a-file")
		os.WriteFile(file, nil, 0o644)
		_, err := envOf(map[string]string{"XDG_CACHE_HOME": file, "PATH": fakeNpm(t, Version, filepath.Join(t.TempDir(), "log"))}).Install(context.Background(), nil)
		if err == nil || !strings.Contains(err.Error(), "XDG_CACHE_HOME") || !strings.Contains(err.Error(), "FLOWER_CLAUDE") {
			t.Errorf("err = %v", err)
		}
	})
}

func TestTwoInstallsAtOnceRunNpmOnce(t *testing.T) {
	t.Setenv("FAKE_NPM_SLEEP", "1")
	cache, log := t.TempDir(), filepath.Join(t.TempDir(), "npm.log")
	env := envOf(map[string]string{"XDG_CACHE_HOME": cache, "PATH": fakeNpm(t, Version, log)})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var paths, lines []string
	var errs []error
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			f, err := env.Install(ctx, func(s string) { mu.Lock(); lines = append(lines, s); mu.Unlock() })
			mu.Lock()
			paths, errs = append(paths, f.Path), append(errs, err)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if errs[0] != nil || errs[1] != nil || paths[0] == "" || paths[0] != paths[1] {
		t.Fatalf("paths %q, errors %v", paths, errs)
	}
	data, _ := os.ReadFile(log)
	if n := strings.Count(string(data), "\n"); n != 1 {
		t.Errorf("npm ran %d times, want once", n)
	}
	if !strings.Contains(strings.Join(lines, "\n"), "waiting for another flower") {
		t.Errorf("the second install did not say it waits: %q", lines)
	}
	assertNoLeftovers(t, filepath.Join(cache, "flower", "claude-cli"))
}
