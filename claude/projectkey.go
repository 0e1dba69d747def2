package claude

import (
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/text/unicode/norm"
)

// maxProjectKeyLen is where the CLI cuts long project keys and appends a
// hash of the whole path.
const maxProjectKeyLen = 200

// ProjectKey is the name of the CLI's project folder for cwd (under
// ~/.claude/projects): the real path, NFC-normalized, with every character
// outside [A-Za-z0-9] replaced by '-'. Keys longer than 200 characters keep
// their first 200 and get '-' plus a base-36 hash of the path.
//
// A cwd that does not exist is used as given (cleaned and made absolute).
func ProjectKey(cwd string) string {
	p, err := filepath.Abs(cwd)
	if err != nil {
		p = cwd
	}
	if real, err := filepath.EvalSymlinks(p); err == nil {
		p = real
	}
	p = norm.NFC.String(p)
	var b strings.Builder
	for _, r := range p {
		if r < 128 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	key := b.String()
	if len(key) <= maxProjectKeyLen {
		return key
	}
	return key[:maxProjectKeyLen] + "-" + strconv.FormatInt(abs64(int64(javaHash(p))), 36)
}

// javaHash is the 32-bit h = h*31 + c string hash over code points (UTF-16
// units in the original; code points agree for the BMP).
func javaHash(s string) int32 {
	var h int32
	for _, r := range s {
		if r > 0xFFFF {
			// A UTF-16 surrogate pair contributes two units.
			r -= 0x10000
			h = h*31 + int32(0xD800+(r>>10))
			h = h*31 + int32(0xDC00+(r&0x3FF))
			continue
		}
		h = h*31 + int32(r)
	}
	return h
}

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}
