// SPDX-License-Identifier: Apache-2.0

package node

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Created is one path a node run made on the host: a directory, or a
// character device node with its number. Each is recorded in the [Host]
// before it is made, so that [Host.Restore] (or [Recover] after a killed
// run) removes it and [Host.Diff] reports it while it is there.
type Created struct {
	Path string `json:"path"`
	Dir  bool   `json:"dir,omitempty"`
	// Dev is a device node's number (unix.Mkdev of its major and minor).
	Dev uint64 `json:"dev,omitempty"`
}

// CreateCharDevice makes a character device node major:minor at path
// (mode 0660, owned by root) and every missing directory above it, each
// recorded in h and h saved to record before it is made. A path that
// exists already is refused, never used or changed, with an error naming
// it: a node there may be a real device of this host. path must be
// absolute, and its nearest existing parent a directory.
func (h *Host) CreateCharDevice(record, path string, major, minor uint32) error {
	if !filepath.IsAbs(path) {
		return fmt.Errorf("node: device node path %q is not absolute", path)
	}
	path = filepath.Clean(path)
	if _, err := os.Lstat(path); err == nil {
		return fmt.Errorf("node: %s exists on this host already; a node run never uses or changes a path that was there before it", path)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("node: %w", err)
	}
	// The directories to make, outermost first.
	var dirs []string
	for d := filepath.Dir(path); ; d = filepath.Dir(d) {
		fi, err := os.Lstat(d)
		if err == nil {
			if !fi.IsDir() {
				return fmt.Errorf("node: %s is not a directory, so %s cannot be made below it", d, path)
			}
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("node: %w", err)
		}
		dirs = append([]string{d}, dirs...)
	}
	dev := unix.Mkdev(major, minor)
	for _, d := range dirs {
		h.Created = append(h.Created, Created{Path: d, Dir: true})
	}
	h.Created = append(h.Created, Created{Path: path, Dev: dev})
	if err := h.Save(record); err != nil {
		return err
	}
	for _, d := range dirs {
		if err := os.Mkdir(d, 0o755); err != nil {
			return fmt.Errorf("node: %w", err)
		}
	}
	// Mknod fails with EEXIST rather than replace a node made meanwhile.
	if err := unix.Mknod(path, unix.S_IFCHR|0o660, int(dev)); err != nil {
		return fmt.Errorf("node: mknod %s: %w", path, err)
	}
	return nil
}

// removeCreated removes what h.Created records, newest first: a device
// node only while it is still a character device of the recorded number
// (anything else at its path is left alone and reported), a directory
// only once it is empty. A path already gone is no error.
func (h *Host) removeCreated() error {
	var errs []error
	for i := len(h.Created) - 1; i >= 0; i-- {
		c := h.Created[i]
		var st unix.Stat_t
		if err := unix.Lstat(c.Path, &st); err != nil {
			if !errors.Is(err, unix.ENOENT) {
				errs = append(errs, fmt.Errorf("node: %s: %w", c.Path, err))
			}
			continue
		}
		if !c.Dir && (st.Mode&unix.S_IFMT != unix.S_IFCHR || st.Rdev != c.Dev) {
			errs = append(errs, fmt.Errorf("node: %s is no longer the device node %d:%d the run made; left alone", c.Path, unix.Major(c.Dev), unix.Minor(c.Dev)))
			continue
		}
		if err := os.Remove(c.Path); err != nil {
			errs = append(errs, fmt.Errorf("node: remove %s: %w", c.Path, err))
		}
	}
	return errors.Join(errs...)
}

// createdLeft lists, one line each, what h.Created records that is still
// there.
func (h *Host) createdLeft() []string {
	var left []string
	for _, c := range h.Created {
		if _, err := os.Lstat(c.Path); err != nil {
			continue
		}
		if c.Dir {
			left = append(left, "directory left: "+c.Path)
		} else {
			left = append(left, "device node left: "+c.Path)
		}
	}
	return left
}
