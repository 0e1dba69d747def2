package runstate

import (
	"io/fs"
	"syscall"
)

// statOf is the local file's identity as one lstat gives it. The change
// time is what makes it trustworthy: no tool can set it, and every write,
// every chmod and every time a tool restores the modification time moves
// it; the inode tells a file replaced by a rename.
func statOf(fi fs.FileInfo) statID {
	id := statID{size: fi.Size(), mtime: fi.ModTime().UnixNano()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		id.ctime = st.Ctim.Nano()
		id.ino, id.dev = st.Ino, uint64(st.Dev)
	}
	return id
}
