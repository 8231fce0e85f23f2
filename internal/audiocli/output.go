// SPDX-License-Identifier: Apache-2.0

package audiocli

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// maxSymlinks bounds how many symbolic links a dangling -o path is
// followed through, as the kernel's own bound does (MAXSYMLINKS, 40, in
// include/linux/namei.h).
const maxSymlinks = 40

// output is where -o writes: either the node at the path itself (a
// character device, a FIFO), written in place, or a temporary file beside
// the final name that commit renames over it, so a capture cut short
// never leaves a partial file under the name.
//
// github.com/google/renameio does the temporary file and rename, but
// neither follows a dangling symlink to the name it points at nor writes
// into a device or FIFO, which -o has to; the rest is a few calls.
type output struct {
	// path is the -o path as given, for errors.
	path string
	// final is the name the temporary file is renamed to: path with its
	// symbolic links followed. Empty when f is the node itself.
	final string
	// f is the open file the stream is written to.
	f *os.File
}

// openOutput opens the -o path for a capture, before anything is
// dialled so a path that cannot be written fails at once:
//
//   - a directory (after following symlinks) is refused;
//   - an existing node that is not a regular file (a character device
//     such as /dev/null, a FIFO) is opened for writing and written in
//     place, never replaced;
//   - a regular file, or a name nothing is at, gets a temporary file
//     beside it, renamed over it by commit: a new file has the mode an
//     ordinary create gives (0666 less the umask, or the directory's
//     default ACL), a replaced one keeps its mode and, where the caller
//     may set them, its owner and group;
//   - a symbolic link is followed, and the rules apply to what it points
//     at; a dangling one is followed to the name it points at, which is
//     created (as a shell's > or curl -o creates it).
//
// Errors name the path as given ("-o PATH: is a directory", "-o PATH: no
// such file or directory").
func openOutput(path string) (*output, error) {
	o := &output{path: path}
	fi, err := os.Stat(path)
	switch {
	case err == nil && fi.IsDir():
		return nil, o.error(syscall.EISDIR)
	case err == nil && !fi.Mode().IsRegular():
		// O_TRUNC would mean nothing to a device or FIFO; a FIFO's
		// open waits for its reader, as a shell's > does.
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return nil, o.error(err)
		}
		o.f = f
		return o, nil
	case err == nil:
		final, err := filepath.EvalSymlinks(path)
		if err != nil {
			return nil, o.error(err)
		}
		if rfi, err := os.Stat(final); err != nil || !os.SameFile(fi, rfi) {
			// Reached through a link that names no path (a
			// /proc/self/fd/N of a deleted file): write it in place.
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
			if err != nil {
				return nil, o.error(err)
			}
			o.f = f
			return o, nil
		}
		o.final = final
		if o.f, err = createTemp(final, 0o600); err != nil {
			return nil, o.error(err)
		}
		// The replacement looks as the file it replaces did: its
		// permission bits, and its owner where we may give it.
		if err := o.f.Chmod(fi.Mode().Perm()); err != nil {
			o.abort()
			return nil, o.error(err)
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && (int(st.Uid) != os.Geteuid() || int(st.Gid) != os.Getegid()) {
			_ = o.f.Chown(int(st.Uid), int(st.Gid))
		}
		return o, nil
	case errors.Is(err, fs.ErrNotExist):
		final, err := danglingTarget(path)
		if err != nil {
			return nil, o.error(err)
		}
		o.final = final
		if o.f, err = createTemp(final, 0o666); err != nil {
			return nil, o.error(err)
		}
		return o, nil
	default:
		return nil, o.error(err)
	}
}

// inPlace reports whether the stream goes straight into the node at the
// path (a device, a FIFO), which cannot be read back or renamed.
func (o *output) inPlace() bool { return o.final == "" }

// commit closes the file and, for a temporary one, renames it over the
// final name.
func (o *output) commit() error {
	if err := o.f.Close(); err != nil {
		o.abort()
		return o.error(err)
	}
	if o.inPlace() {
		return nil
	}
	if err := os.Rename(o.f.Name(), o.final); err != nil {
		o.abort()
		return o.error(err)
	}
	return nil
}

// abort closes the file and removes a temporary one, leaving whatever was
// at the final name as it was. It may follow commit, and does nothing
// then.
func (o *output) abort() {
	_ = o.f.Close()
	if !o.inPlace() {
		_ = os.Remove(o.f.Name())
	}
}

// error names the -o path the user gave in err, a file-system error that
// may be about the hidden temporary file (*fs.PathError, *os.LinkError):
// the temporary name means nothing to the user, the cause (ENOENT,
// EACCES, ENOSPC ...) does.
func (o *output) error(err error) error {
	var pe *fs.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &pe):
		err = pe.Err
	case errors.As(err, &le):
		err = le.Err
	}
	return fmt.Errorf("-o %s: %w", o.path, err)
}

// danglingTarget follows the symbolic links at path, which os.Stat found
// missing, to the name that does not exist: path itself when it is no
// link. It fails with ELOOP past maxSymlinks links, as open(2) does.
func danglingTarget(path string) (string, error) {
	for range maxSymlinks {
		fi, err := os.Lstat(path)
		if errors.Is(err, fs.ErrNotExist) {
			return path, nil
		}
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			// Stat said missing, Lstat says present: it appeared
			// in between. The rename replaces it, as for any file.
			return path, nil
		}
		link, err := os.Readlink(path)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(link) {
			link = filepath.Join(filepath.Dir(path), link)
		}
		path = link
	}
	return "", syscall.ELOOP
}

// createTemp creates a new file beside final named "."+base(final)+
// ".RANDOM", with mode perm less the umask (the kernel's, in open(2)).
// os.CreateTemp fixes the mode at 0600, and chmod after it would have to
// read the umask, which only the process-wide umask(2) call can.
func createTemp(final string, perm fs.FileMode) (*os.File, error) {
	dir, base := filepath.Dir(final), filepath.Base(final)
	for {
		name := filepath.Join(dir, "."+base+"."+strconv.FormatUint(rand.Uint64(), 36))
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, perm)
		if !errors.Is(err, fs.ErrExist) {
			return f, err
		}
	}
}
