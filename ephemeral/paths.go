package ephemeral

import (
	"path"
	"strings"
)

// Device files never end (/dev/zero, /dev/urandom), wait for input
// (/dev/stdin, /dev/tty, /proc/self/fd/0) or block (/proc/kmsg), so a verb
// that reads its arguments' content must not be given one. Is cannot stat
// the files (the trimmer decides long after the command ran), so it reads
// each argument as a path and refuses what may land in /dev (except
// /dev/null), in /sys, or in /proc outside a short list of small files.
// A symlink or a FIFO inside the working directory, or a directory left by
// an earlier cd, can still point there: the guard's time limit is the
// backstop for those.

// base is the directory relative paths start from: after cd DIR it is DIR;
// empty, it is the working directory the command starts in, of unknown
// place but not / itself (a coordinator runs in its workspace).
type base struct {
	dir string
}

// procReadable are the /proc files a glance may read: small, finite,
// each read once. Under /proc/PID, /proc/self and /proc/thread-self too.
var procReadable = map[string]bool{
	"cpuinfo": true, "meminfo": true, "loadavg": true, "uptime": true, "version": true,
	"stat": true, "statm": true, "status": true, "cmdline": true, "mounts": true,
	"limits": true, "swaps": true, "partitions": true, "filesystems": true, "diskstats": true,
}

// reachesDevice reports whether the word, read as a path from b, may name
// a device or another endless file. A word that is an option also has its
// value checked: --file=/dev/zero, -f/dev/zero.
func (b base) reachesDevice(w word) bool {
	if w.expands {
		// "$PWD/../dev/zero": the value is unknown, so it may be anything.
		return true
	}
	t := w.text
	if !strings.HasPrefix(t, "-") && !strings.HasPrefix(t, "+") {
		if b.special(t, w.globs) {
			return true
		}
		// bash expands a tilde after the first = (x=~/f), and awk reads
		// x=VALUE operands; either may hold a path.
		_, v, ok := strings.Cut(t, "=")
		return ok && b.inside(v, w.globs)
	}
	// An option's value: --file=/dev/zero, -f/dev/zero.
	if _, v, ok := strings.Cut(t, "="); ok && b.inside(v, w.globs) {
		return true
	}
	i := strings.IndexAny(t, "/.~")
	return i >= 0 && b.inside(t[i:], w.globs)
}

// inside is special for a path found inside a word (an option's value),
// where a lone / is a separator (cut -d/, awk -F/) rather than the root.
func (b base) inside(p string, globs bool) bool {
	return path.Clean(p) != "/" && b.special(p, globs)
}

// special reports whether p, a path as written, may resolve to an endless
// file. A pattern (globs) counts if any file it may match could be one.
func (b base) special(p string, globs bool) bool {
	if p == "" || p == "-" {
		return false
	}
	abs, ok := b.resolve(p)
	if !ok {
		return false // inside the working directory
	}
	if abs == "/" {
		// grep -r x / would descend into /proc (kcore alone is 128 TB). A
		// .. that may climb to / only in resolve's worst case passes, so
		// that grep -r x .. stays a glance.
		return strings.HasPrefix(p, "/")
	}
	parts := strings.Split(strings.TrimPrefix(abs, "/"), "/")
	if globs && strings.ContainsAny(parts[0], "*?[") {
		return true // /d*/zero
	}
	switch parts[0] {
	case "dev":
		return len(parts) > 1 && !(len(parts) == 2 && parts[1] == "null" && !globs)
	case "sys":
		return true
	case "proc":
		return !procFileIsReadable(parts[1:], globs)
	}
	return false
}

// procFileIsReadable accepts /proc/NAME and /proc/(PID|self|
// thread-self)/NAME for a NAME in procReadable, and the process
// directories (a recursive grep of /proc itself would read kcore).
func procFileIsReadable(parts []string, globs bool) bool {
	if globs {
		return false
	}
	switch len(parts) {
	case 1:
		return procReadable[parts[0]] || isProcess(parts[0])
	case 2:
		return isProcess(parts[0]) && procReadable[parts[1]]
	}
	return false
}

func isProcess(s string) bool {
	return isDigits(s) || s == "self" || s == "thread-self"
}

// unknown names a directory whose place is not known: the working
// directory, or a home. It stands one level below /, the worst case, so
// the first .. beyond it reaches /; the NUL keeps it from naming any real
// directory.
const unknown = "/\x00"

// resolve makes p absolute where it may leave the directory it starts in
// and reports ok; a path that stays below it gives !ok.
func (b base) resolve(p string) (string, bool) {
	full := anchor(p)
	if !strings.HasPrefix(p, "/") && !strings.HasPrefix(p, "~") {
		full = anchor(b.dir) + "/" + p
	}
	full = path.Clean(full)
	if full == unknown || strings.HasPrefix(full, unknown+"/") {
		return "", false
	}
	return full, true
}

// anchor roots p: an absolute path stays, ~ and ~user become a home of
// unknown place, and a relative path starts in the working directory.
func anchor(p string) string {
	switch {
	case strings.HasPrefix(p, "/"):
		return p
	case strings.HasPrefix(p, "~"):
		_, rest, _ := strings.Cut(p, "/")
		return unknown + "/" + rest
	}
	return unknown + "/" + p
}
