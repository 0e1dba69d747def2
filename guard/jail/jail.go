// Package jail is the glance sandbox's last step in: the program that
// holds flower's wall, started by bubblewrap as `<exe> Arg <program>
// <args…>`, restricts itself (on Linux: seccomp and Landlock, see
// jail_linux.go) and executes the program. Importing it is enough.
package jail

// Arg is the argument that makes the executable the jail.
const Arg = "__flower_glance_jail__"

// Scratch is the one folder a glance may write (with /dev/null): the
// sandbox's own /dev/shm, a tmpfs gone with the glance. TMPDIR points
// there, for bash's here-documents and sort.
const Scratch = "/dev/shm"
