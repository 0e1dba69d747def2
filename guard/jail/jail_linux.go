package jail

import (
	"errors"
	"os"
	"runtime"
	"syscall"
	"unsafe"
)

// It imports the standard library's syscall rather than
// golang.org/x/sys/unix, whose init comes late in a large program: the
// constants it would give are here.
const (
	prSetNoNewPrivs   = 38
	oPath             = 0x200000
	prSetSeccomp      = 22
	seccompModeFilter = 2
	seccompRetAllow   = 0x7fff0000
	seccompRetErrno   = 0x00050000
	auditArchX86_64   = 0xc000003e
	auditArchAArch64  = 0xc00000b7

	// The landlock syscalls have the same numbers on every architecture.
	sysLandlockCreateRuleset = 444
	sysLandlockAddRule       = 445
	sysLandlockRestrictSelf  = 446

	landlockCreateRulesetVersion = 1
	landlockRulePathBeneath      = 1

	accessFsWriteFile  = 1 << 1
	accessFsRemoveDir  = 1 << 4
	accessFsRemoveFile = 1 << 5
	accessFsMakeChar   = 1 << 6
	accessFsMakeDir    = 1 << 7
	accessFsMakeReg    = 1 << 8
	accessFsMakeSock   = 1 << 9
	accessFsMakeFifo   = 1 << 10
	accessFsMakeBlock  = 1 << 11
	accessFsMakeSym    = 1 << 12
	accessFsRefer      = 1 << 13
	accessFsTruncate   = 1 << 14

	scopeAbstractUnixSocket = 1 << 0
	scopeSignal             = 1 << 1
)

// landlockRulesetAttr and landlockPathBeneathAttr are the kernel's
// structures (the latter packed: 12 bytes).
type landlockRulesetAttr struct {
	handledAccessFs, handledAccessNet, scoped uint64
}

type landlockPathBeneathAttr struct {
	allowedAccess uint64
	parentFd      int32
}

// A glance's last step into the sandbox is this program's own executable,
// started by bubblewrap as `<exe> Arg <program> <args…>`: before
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
// binary holding the wall can be its own jail; it is a package of its own
// with few imports so that it runs among the first inits, before the
// program's heavier ones.
func init() {
	if len(os.Args) < 3 || os.Args[1] != Arg {
		return
	}
	err := jailSelf()
	if err == nil {
		err = syscall.Exec(os.Args[2], os.Args[2:], os.Environ())
	}
	os.Stderr.WriteString("flower: the glance sandbox cannot start: " + err.Error() + "\n")
	os.Exit(126)
}

// jailSelf restricts this process and its future children as init
// describes. Landlock is skipped where the kernel lacks it (before 5.13 or
// turned off): the read-only mounts still hold every file but a FIFO.
func jailSelf() error {
	if _, _, errno := syscall.RawSyscall6(syscall.SYS_PRCTL, prSetNoNewPrivs, 1, 0, 0, 0, 0); errno != 0 {
		return wrap("no_new_privs", errno)
	}
	if err := restrictWrites(); err != nil {
		return err
	}
	return denyUnixSockets()
}

// restrictWrites is the Landlock half of jailSelf.
func restrictWrites() error {
	abi, _, errno := syscall.RawSyscall(sysLandlockCreateRuleset, 0, 0, landlockCreateRulesetVersion)
	if errno != 0 {
		if errors.Is(errno, syscall.ENOSYS) || errors.Is(errno, syscall.EOPNOTSUPP) {
			return nil
		}
		return wrap("landlock", errno)
	}
	writes := uint64(accessFsWriteFile | accessFsRemoveDir | accessFsRemoveFile | accessFsMakeChar | accessFsMakeDir |
		accessFsMakeReg | accessFsMakeSock | accessFsMakeFifo | accessFsMakeBlock | accessFsMakeSym)
	fileRights := uint64(accessFsWriteFile)
	if abi >= 2 {
		writes |= accessFsRefer
	}
	if abi >= 3 {
		writes |= accessFsTruncate
		fileRights |= accessFsTruncate
	}
	attr := landlockRulesetAttr{handledAccessFs: writes}
	size := unsafe.Sizeof(attr.handledAccessFs) + unsafe.Sizeof(attr.handledAccessNet)
	if abi >= 6 {
		attr.scoped = scopeAbstractUnixSocket | scopeSignal
		size += unsafe.Sizeof(attr.scoped)
	}
	fd, _, errno := syscall.RawSyscall(sysLandlockCreateRuleset, uintptr(unsafe.Pointer(&attr)), size, 0)
	if errno != 0 {
		return wrap("landlock ruleset", errno)
	}
	defer syscall.Close(int(fd))
	for path, rights := range map[string]uint64{"/dev/null": fileRights, Scratch: writes} {
		if err := allowBeneath(int(fd), path, rights); err != nil {
			return err
		}
	}
	if _, _, errno := syscall.RawSyscall(sysLandlockRestrictSelf, fd, 0, 0); errno != 0 {
		return wrap("landlock restrict", errno)
	}
	return nil
}

// allowBeneath lets the ruleset fd grant rights beneath path.
func allowBeneath(ruleset int, path string, rights uint64) error {
	dir, err := syscall.Open(path, oPath|syscall.O_CLOEXEC, 0)
	if err != nil {
		return wrap("landlock: open "+path, err)
	}
	defer syscall.Close(dir)
	rule := landlockPathBeneathAttr{allowedAccess: rights, parentFd: int32(dir)}
	if _, _, errno := syscall.RawSyscall6(sysLandlockAddRule, uintptr(ruleset), landlockRulePathBeneath,
		uintptr(unsafe.Pointer(&rule)), 0, 0, 0); errno != 0 {
		return wrap("landlock rule "+path, errno)
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
	"amd64": {audit: auditArchX86_64, socket: 41, ioUring: 425, hasX32ABI: true},
	"arm64": {audit: auditArchAArch64, socket: 198, ioUring: 425},
}

// denyUnixSockets installs the seccomp half of jailSelf: socket(AF_UNIX,
// …) and io_uring_setup fail with EACCES, and so does every syscall of a
// foreign ABI (x32, 32-bit compat), where the numbers differ.
func denyUnixSockets() error {
	arch, ok := seccompArch[runtime.GOARCH]
	if !ok {
		return errors.New("no seccomp filter for " + runtime.GOARCH)
	}
	const (
		ld   = syscall.BPF_LD | syscall.BPF_W | syscall.BPF_ABS
		jeq  = syscall.BPF_JMP | syscall.BPF_JEQ | syscall.BPF_K
		jset = syscall.BPF_JMP | syscall.BPF_JSET | syscall.BPF_K
		ret  = syscall.BPF_RET | syscall.BPF_K
		// offsets in struct seccomp_data
		nrAt, archAt, arg0At = 0, 4, 16
	)
	x32 := uint32(0)
	if arch.hasX32ABI {
		x32 = 0x40000000
	}
	// Jumps count instructions from the next one: allow is at 8, deny at 9.
	filter := []syscall.SockFilter{
		{Code: ld, K: archAt},
		{Code: jeq, K: arch.audit, Jt: 0, Jf: 7},
		{Code: ld, K: nrAt},
		{Code: jset, K: x32, Jt: 5, Jf: 0},
		{Code: jeq, K: arch.ioUring, Jt: 4, Jf: 0},
		{Code: jeq, K: arch.socket, Jt: 0, Jf: 2},
		{Code: ld, K: arg0At}, // the low half of the family on little-endian
		{Code: jeq, K: syscall.AF_UNIX, Jt: 1, Jf: 0},
		{Code: ret, K: seccompRetAllow},
		{Code: ret, K: seccompRetErrno | uint32(syscall.EACCES)},
	}
	prog := syscall.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if _, _, errno := syscall.RawSyscall6(syscall.SYS_PRCTL, prSetSeccomp, seccompModeFilter, uintptr(unsafe.Pointer(&prog)), 0, 0, 0); errno != 0 {
		return wrap("seccomp", errno)
	}
	return nil
}

// wrap says what failed, keeping err for errors.Is.
func wrap(what string, err error) error {
	return &stepError{what: what, err: err}
}

type stepError struct {
	what string
	err  error
}

func (e *stepError) Error() string { return e.what + ": " + e.err.Error() }
func (e *stepError) Unwrap() error { return e.err }
