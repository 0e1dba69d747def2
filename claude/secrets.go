package claude

import (
	"bytes"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// SecretEnv are the variables whose values are the user's credentials:
// should a tool print one (a worker's full Bash can read its environment,
// a repository can hold a key), every line the driver reads from the CLI
// and every file the CLI wrote for the session has the value masked.
//
// The CLI's own CLAUDE_CODE_SUBPROCESS_ENV_SCRUB would keep them from its
// tools, but it also requires the CLI's sandbox for every Bash call
// (2.1.332: "Sandbox is required but failed to initialize" without
// socat), which a worker that builds and tests cannot live in.
var SecretEnv = []string{"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"}

// minSecretLen keeps a placeholder value ("test", "x") from being masked
// all over the text: real keys and tokens are far longer.
const minSecretLen = 12

// secrets masks the exact credential values of one child environment.
// A mask has the value's length, so a file is masked in place: nothing
// moves under a process that appends to it.
type secrets struct{ values [][]byte }

func secretsOf(env []string) *secrets {
	s := &secrets{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		for _, name := range SecretEnv {
			if k == name && len(v) >= minSecretLen && !s.has(v) {
				s.values = append(s.values, []byte(v))
			}
		}
	}
	return s
}

func (s *secrets) has(v string) bool {
	for _, x := range s.values {
		if string(x) == v {
			return true
		}
	}
	return false
}

// maskOf is what stands for a value of n bytes: "[masked]" then stars, n
// bytes in all, safe inside JSON strings.
func maskOf(n int) []byte {
	const label = "[masked]"
	if n <= len(label) {
		return bytes.Repeat([]byte("*"), n)
	}
	return append([]byte(label), bytes.Repeat([]byte("*"), n-len(label))...)
}

// mask overwrites every secret in b and reports whether it found one.
func (s *secrets) mask(b []byte) bool {
	if s == nil {
		return false
	}
	found := false
	for _, v := range s.values {
		for off := 0; ; {
			i := bytes.Index(b[off:], v)
			if i < 0 {
				break
			}
			copy(b[off+i:], maskOf(len(v)))
			off += i + len(v)
			found = true
		}
	}
	return found
}

// Mask returns b with every secret masked (b itself when there is none).
func (s *secrets) Mask(b []byte) []byte {
	if s == nil || len(s.values) == 0 {
		return b
	}
	c := bytes.Clone(b)
	if s.mask(c) {
		return c
	}
	return b
}

// maskFiles masks the secrets in place in every regular file under dir
// changed since since. It runs when the CLI has exited; another CLI
// appending to a file of the same folder loses nothing: no byte moves.
func (s *secrets) maskFiles(dir string, since time.Time) {
	if s == nil || len(s.values) == 0 || dir == "" {
		return
	}
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		if fi, err := d.Info(); err != nil || fi.ModTime().Before(since) || !ownedByMe(fi) {
			return nil
		}
		s.maskFile(p)
		return nil
	})
}

func (s *secrets) maskFile(path string) {
	f, err := os.OpenFile(path, os.O_RDWR|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		return
	}
	orig := bytes.Clone(data)
	if !s.mask(data) {
		return
	}
	// Only the changed spans are written back.
	for i := 0; i < len(data); {
		if data[i] == orig[i] {
			i++
			continue
		}
		j := i
		for j < len(data) && data[j] != orig[j] {
			j++
		}
		f.WriteAt(data[i:j], int64(i))
		i = j
	}
}

// MaskSecrets returns b with the session's credential values masked, as
// the hook's input already is: a hook that reads a file the CLI wrote (a
// tool's persisted output) masks what it read with it.
func (in *HookInput) MaskSecrets(b []byte) []byte { return in.secrets.Mask(b) }
