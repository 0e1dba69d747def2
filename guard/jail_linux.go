package guard

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A glance's last step into the sandbox is this program's own executable,
// started by bubblewrap as `<exe> glanceJailArg <program> <args…>`: before
// anything else runs it takes, for itself and every child, what bubblewrap
// cannot give (bubblewrap has dropped every capability by then):
//   - no unix socket at all (seccomp): a listener outside, in the
//     workspace or HOME, which the read-only mounts still let a client
//     connect to, is out of reach, and so is io_uring, which could make
//     one behind seccomp's back;
//   - no file opened for writing but /dev/null and the private /dev/shm
//     (Landlock): a FIFO outside, which a read-only mount still lets a
//     writer open, gets no bytes;
//   - no abstract unix socket and no signal outside its own domain
//     (Landlock scopes, where the kernel has them).
//
// Then it executes the program. It runs in init, before main, so that any
// binary holding the wall can be its own jail.
func init() {
	if len(os.Args) < 3 || os.Args[1] != glanceJailArg {
		return
	}
	err := jailSelf()
	if err == nil {
		err = unix.Exec(os.Args[2], os.Args[2:], os.Environ())
	}
	fmt.Fprintf(os.Stderr, "flower: the glance sandbox cannot start: %v\n", err)
	os.Exit(126)
}

// jailSelf restricts this process and its future children as init
// describes. Landlock is skipped where the kernel lacks it (before 5.13 or
// turned off): the read-only mounts still hold every file but a FIFO.
func jailSelf() error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	if err := restrictWrites(); err != nil {
		return err
	}
	return denyUnixSockets()
}

// restrictWrites is the Landlock half of jailSelf.
func restrictWrites() error {
	abi, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		if errors.Is(errno, unix.ENOSYS) || errors.Is(errno, unix.EOPNOTSUPP) {
			return nil
		}
		return fmt.Errorf("landlock: %w", errno)
	}
	const fileWrites = unix.LANDLOCK_ACCESS_FS_WRITE_FILE
	writes := uint64(fileWrites | unix.LANDLOCK_ACCESS_FS_REMOVE_DIR | unix.LANDLOCK_ACCESS_FS_REMOVE_FILE |
		unix.LANDLOCK_ACCESS_FS_MAKE_CHAR | unix.LANDLOCK_ACCESS_FS_MAKE_DIR | unix.LANDLOCK_ACCESS_FS_MAKE_REG |
		unix.LANDLOCK_ACCESS_FS_MAKE_SOCK | unix.LANDLOCK_ACCESS_FS_MAKE_FIFO | unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK |
		unix.LANDLOCK_ACCESS_FS_MAKE_SYM)
	fileRights := uint64(fileWrites)
	if abi >= 2 {
		writes |= unix.LANDLOCK_ACCESS_FS_REFER
	}
	if abi >= 3 {
		writes |= unix.LANDLOCK_ACCESS_FS_TRUNCATE
		fileRights |= unix.LANDLOCK_ACCESS_FS_TRUNCATE
	}
	attr := unix.LandlockRulesetAttr{Handled_access_fs: writes}
	size := unsafe.Sizeof(attr.Handled_access_fs) + unsafe.Sizeof(attr.Handled_access_net)
	if abi >= 6 {
		attr.Scoped = unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | unix.LANDLOCK_SCOPE_SIGNAL
		size += unsafe.Sizeof(attr.Scoped)
	}
	fd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), size, 0)
	if errno != 0 {
		return fmt.Errorf("landlock ruleset: %w", errno)
	}
	defer unix.Close(int(fd))
	for path, rights := range map[string]uint64{"/dev/null": fileRights, glanceScratch: writes} {
		if err := allowBeneath(int(fd), path, rights); err != nil {
			return err
		}
	}
	if _, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, fd, 0, 0); errno != 0 {
		return fmt.Errorf("landlock restrict: %w", errno)
	}
	return nil
}

// allowBeneath lets the ruleset fd grant rights beneath path.
func allowBeneath(ruleset int, path string, rights uint64) error {
	dir, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("landlock: open %s: %w", path, err)
	}
	defer unix.Close(dir)
	rule := unix.LandlockPathBeneathAttr{Allowed_access: rights, Parent_fd: int32(dir)}
	if _, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(ruleset), unix.LANDLOCK_RULE_PATH_BENEATH,
		uintptr(unsafe.Pointer(&rule)), 0, 0, 0); errno != 0 {
		return fmt.Errorf("landlock rule %s: %w", path, errno)
	}
	return nil
}

// seccompArch is the audit architecture and the syscall numbers the
// filter names, per GOARCH; other architectures get no glance sandbox
// (DetectSandbox's probe fails, and says why).
var seccompArch = map[string]struct {
	audit           uint32
	socket, ioUring uint32
	hasX32ABI       bool
}{
	"amd64": {audit: unix.AUDIT_ARCH_X86_64, socket: 41, ioUring: 425, hasX32ABI: true},
	"arm64": {audit: unix.AUDIT_ARCH_AARCH64, socket: 198, ioUring: 425},
}

// denyUnixSockets installs the seccomp half of jailSelf: socket(AF_UNIX,
// …) and io_uring_setup fail with EACCES, and so does every syscall of a
// foreign ABI (x32, 32-bit compat), where the numbers differ.
func denyUnixSockets() error {
	arch, ok := seccompArch[runtime.GOARCH]
	if !ok {
		return fmt.Errorf("no seccomp filter for %s", runtime.GOARCH)
	}
	const (
		ld   = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq  = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		jset = unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K
		ret  = unix.BPF_RET | unix.BPF_K
		// offsets in struct seccomp_data
		nrAt, archAt, arg0At = 0, 4, 16
	)
	x32 := uint32(0)
	if arch.hasX32ABI {
		x32 = 0x40000000
	}
	// Jumps count instructions from the next one: allow is at 8, deny at 9.
	filter := []unix.SockFilter{
		{Code: ld, K: archAt},
		{Code: jeq, K: arch.audit, Jt: 0, Jf: 7},
		{Code: ld, K: nrAt},
		{Code: jset, K: x32, Jt: 5, Jf: 0},
		{Code: jeq, K: arch.ioUring, Jt: 4, Jf: 0},
		{Code: jeq, K: arch.socket, Jt: 0, Jf: 2},
		{Code: ld, K: arg0At}, // the low half of the family on little-endian
		{Code: jeq, K: unix.AF_UNIX, Jt: 1, Jf: 0},
		{Code: ret, K: unix.SECCOMP_RET_ALLOW},
		{Code: ret, K: unix.SECCOMP_RET_ERRNO | uint32(unix.EACCES)},
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if err := unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&prog)), 0, 0); err != nil {
		return fmt.Errorf("seccomp: %w", err)
	}
	return nil
}
