// SPDX-License-Identifier: Apache-2.0

package ocibuild

import (
	"archive/tar"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"
)

// WriteTar writes the contents as a tar stream: entries in path order,
// names relative to the root, uid and gid 0 with no names, every time
// mtime, PAX format. A file that changed size since it was found fails
// the write rather than producing a layer that lies about it.
func (c *Contents) WriteTar(w io.Writer, mtime time.Time) error {
	tw := tar.NewWriter(w)
	for _, p := range c.Paths() {
		e := c.entries[p]
		hdr := &tar.Header{
			Name:    strings.TrimPrefix(p, "/"),
			Mode:    tarMode(e.mode),
			ModTime: mtime,
			Format:  tar.FormatPAX,
		}
		switch e.kind {
		case kindDir:
			hdr.Typeflag, hdr.Name = tar.TypeDir, hdr.Name+"/"
		case kindSymlink:
			hdr.Typeflag, hdr.Linkname = tar.TypeSymlink, e.target
		case kindFile:
			hdr.Typeflag, hdr.Size = tar.TypeReg, e.size
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		if e.kind == kindFile {
			if err := c.copyContent(tw, p, e); err != nil {
				return err
			}
		}
	}
	// Close writes the end-of-archive blocks; a layer without them
	// passes the library's validation but not GNU tar.
	return tw.Close()
}

// copyContent writes e's bytes, exactly e.size of them.
func (c *Contents) copyContent(w io.Writer, p string, e *entry) error {
	if e.src == "" {
		_, err := w.Write(e.data)
		return err
	}
	f, err := os.Open(e.src)
	if err != nil {
		return err
	}
	defer f.Close()
	n, err := io.Copy(w, f)
	if err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	if n != e.size {
		return fmt.Errorf("%s: %s changed during the build (%d bytes, was %d)", p, e.src, n, e.size)
	}
	return nil
}

// tarMode is the tar header's mode field for m: permission bits and the
// setuid, setgid and sticky bits in their traditional octal places.
func tarMode(m fs.FileMode) int64 {
	mode := int64(m.Perm())
	if m&fs.ModeSetuid != 0 {
		mode |= 0o4000
	}
	if m&fs.ModeSetgid != 0 {
		mode |= 0o2000
	}
	if m&fs.ModeSticky != 0 {
		mode |= 0o1000
	}
	return mode
}
