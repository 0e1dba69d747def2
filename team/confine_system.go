package team

import (
	"os"
	"path/filepath"
	"strings"
)

// The machine's folders a run sees, read-only: an allow-list, so that what
// an operator keeps elsewhere (a database file under /var/lib, a password
// file under /etc or /srv, a token under /opt) is not there. What a run
// needs beyond it (a toolchain under /opt) the operator names with
// --readable.
var (
	// systemFolders hold the programs and libraries (and /sys, which
	// toolchains read for the machine's limits).
	systemFolders = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/sys"}
	// systemEtc is what programs read of /etc: names and lookups, the
	// dynamic linker, time, certificates (not ssl/private), the
	// alternatives Debian's programs are links into, shells' and git's
	// system settings.
	systemEtc = []string{
		"passwd", "group", "nsswitch.conf", "hosts", "host.conf", "hostname", "resolv.conf", "gai.conf",
		"services", "protocols", "networks", "ld.so.cache", "ld.so.conf", "ld.so.conf.d",
		"localtime", "timezone", "mime.types", "magic", "magic.mime", "os-release", "lsb-release",
		"debian_version", "alpine-release", "redhat-release", "mtab",
		"ssl/certs", "ssl/openssl.cnf", "ca-certificates", "ca-certificates.conf", "pki/tls/certs", "pki/ca-trust",
		"alternatives", "terminfo", "gitconfig", "bash.bashrc", "profile", "profile.d", "inputrc", "shells",
		"locale.alias", "locale.conf", "python3", "python3.*",
	}
)

// mountPlan builds bubblewrap's mount arguments over the empty root it
// starts from. Each folder that leads to a mount and is not there yet is
// made open to all (0755): bubblewrap makes the ones it needs 0700, which
// a root worker's run (another user) cannot pass.
type mountPlan struct {
	args  []string
	made  map[string]bool // folders made or mounted in the confinement
	bound []string        // folders of the machine bound whole
}

func newMountPlan() *mountPlan { return &mountPlan{made: map[string]bool{"/": true}} }

// there reports whether folder d exists in the confinement: made or
// mounted, or in a folder of the machine bound whole (where the folders
// that lead to what is bound again exist already: they are the machine's).
func (m *mountPlan) there(d string) bool {
	if m.made[d] {
		return true
	}
	for _, f := range m.bound {
		if strings.HasPrefix(d, f+"/") {
			return true
		}
	}
	return false
}

// lead makes the folders that lead to p.
func (m *mountPlan) lead(p string) {
	var missing []string
	for d := filepath.Dir(p); !m.there(d); d = filepath.Dir(d) {
		missing = append(missing, d)
	}
	for i := len(missing) - 1; i >= 0; i-- {
		m.args = append(m.args, "--perms", "0755", "--dir", missing[i])
		m.made[missing[i]] = true
	}
}

// mount adds one mount at dest (kind: --ro-bind, --bind, --tmpfs,
// --symlink…), made there first.
func (m *mountPlan) mount(kind string, args ...string) {
	dest := args[len(args)-1]
	m.lead(dest)
	m.args = append(m.args, kind)
	m.args = append(m.args, args...)
	m.made[dest] = true
	if kind == "--bind" || kind == "--ro-bind" {
		m.bound = append(m.bound, dest)
	}
}

// system mounts the listed folders of the machine whose root is root
// ("/"; tests give another), read-only. A link among them stays a link
// when what it leads to is listed too (merged /usr's /bin,
// /etc/os-release), and is bound as the file or folder it leads to
// otherwise (/etc/resolv.conf into /run).
func (m *mountPlan) system(root string) {
	add := func(p string) {
		host := filepath.Join(root, p)
		fi, err := os.Lstat(host)
		if err != nil {
			return
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			if to, err := os.Readlink(host); err == nil && listed(filepath.Join(filepath.Dir(p), to), to) {
				m.mount("--symlink", to, p)
				return
			}
			if _, err := os.Stat(host); err != nil {
				return // leads nowhere
			}
		}
		m.mount("--ro-bind", host, p)
	}
	for _, p := range systemFolders {
		add(p)
	}
	for _, pattern := range systemEtc {
		matches, _ := filepath.Glob(filepath.Join(root, "etc", pattern))
		for _, match := range matches {
			if rel, err := filepath.Rel(root, match); err == nil {
				add("/" + rel)
			}
		}
	}
}

// listed reports whether a link's target (to, as written; abs when made
// absolute from the link's folder) lies in what a run sees anyway.
func listed(abs, to string) bool {
	if filepath.IsAbs(to) {
		abs = to
	}
	abs = filepath.Clean(abs)
	if abs == "/proc" || strings.HasPrefix(abs, "/proc/") {
		return true
	}
	for _, f := range systemFolders {
		if abs == f || strings.HasPrefix(abs, f+"/") {
			return true
		}
	}
	return false
}
