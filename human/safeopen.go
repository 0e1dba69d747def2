package human

import (
	"errors"
	"fmt"
	"io"
	"os"
	"unicode/utf8"

	"golang.org/x/sys/unix"
)

// MaxReplyBytes caps a reply file (and a words journal entry): a reply is
// something a person typed, and a bigger file is refused, never read whole.
const MaxReplyBytes = 256 << 10

// errNotAReply is the class of files the front end refuses unread.
var errNotAReply = errors.New("not a reply")

// readBounded reads a regular file of at most max bytes. It never follows
// a link (O_NOFOLLOW), never waits on a FIFO or a device (O_NONBLOCK, then
// fstat: regular files only), and never reads more than max+1 bytes, so a
// link to /dev/zero, a FIFO nobody writes or a huge file is refused at
// once with a message that says which.
func readBounded(path string, max int64) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ELOOP) {
		return nil, fmt.Errorf("%w: %s is a symbolic link; write the reply itself, not a link", errNotAReply, path)
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %s is not a regular file (%s)", errNotAReply, path, st.Mode().Type())
	}
	if st.Size() > max {
		return nil, fmt.Errorf("%w: %s holds %d bytes, more than the %d a reply may have", errNotAReply, path, st.Size(), max)
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%w: %s grew past the %d bytes a reply may have", errNotAReply, path, max)
	}
	return data, nil
}

// checkText refuses a reply's text that is not text: invalid UTF-8 or a
// NUL byte (a binary file that happens to parse).
func checkText(s string) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("%w: its text is not valid UTF-8", errNotAReply)
	}
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			return fmt.Errorf("%w: its text holds a NUL byte", errNotAReply)
		}
	}
	return nil
}
