//go:build !linux

package runstate

import "io/fs"

// statOf is the local file's identity as one lstat gives it: here size
// and modification time only (a tool that restores modification times
// is caught by the full comparison of the last write-back; see scan).
func statOf(fi fs.FileInfo) statID {
	return statID{size: fi.Size(), mtime: fi.ModTime().UnixNano()}
}
