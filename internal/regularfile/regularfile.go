// SPDX-License-Identifier: Apache-2.0

// Package regularfile reads files from trees this project does not trust
// (BlueZ's storage tree, sysfs under a configurable root) without being
// stalled or led astray by what stands where a file should: a named pipe
// blocks an open for reading until a writer comes, a device node's open
// runs its driver, and a symbolic link points anywhere.
package regularfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// ErrNotRegular is wrapped by Read's error for anything that is not a
// regular file, and ErrTooLarge for one over the limit.
var (
	ErrNotRegular = errors.New("not a regular file")
	ErrTooLarge   = errors.New("larger than allowed")
)

// Read returns the content of path if it is a regular file of at most
// limit bytes. The last element is never followed if it is a symbolic
// link. Anything else is refused before it is opened; O_NONBLOCK covers a
// named pipe put there between the Lstat and the open (the open returns at
// once and the Fstat refuses it); on a regular file it changes nothing.
// Errors name the path and what stands there.
func Read(path string, limit int64) ([]byte, error) {
	st, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, notRegular(path, st.Mode())
	}
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if errors.Is(err, unix.ELOOP) {
		return nil, notRegular(path, fs.ModeSymlink)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err = f.Stat(); err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, notRegular(path, st.Mode())
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s: %w: over %d bytes", path, ErrTooLarge, limit)
	}
	return data, nil
}

func notRegular(path string, m fs.FileMode) error {
	return fmt.Errorf("%s is a %s, %w", path, Kind(m), ErrNotRegular)
}

// Kind names the kind of file m is, for error messages: "regular file",
// "directory", "symbolic link", "named pipe (FIFO)", "socket",
// "character device", "block device", else "special file (<mode>)".
func Kind(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "regular file"
	case m.IsDir():
		return "directory"
	case m&fs.ModeSymlink != 0:
		return "symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeCharDevice != 0:
		return "character device"
	case m&fs.ModeDevice != 0:
		return "block device"
	}
	return "special file (" + m.Type().String() + ")"
}
