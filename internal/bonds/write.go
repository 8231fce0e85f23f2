// SPDX-License-Identifier: Apache-2.0

package bonds

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/liken-sh/operators/internal/bdaddr"
	"github.com/liken-sh/operators/internal/regularfile"
)

// WriteReport says what WriteTree did with each file, by path.
type WriteReport struct {
	// Written are the files created.
	Written []string
	// Unchanged are the files that already held the same bytes.
	Unchanged []string
	// Kept are the files that already held other bytes and were left as
	// they were: the tree is the working copy bluetoothd writes, so what
	// it holds is never older than a Secret.
	Kept []string
}

// WriteTree writes bonds into the BlueZ tree at root: each bond's info to
// <root>/<ADAPTER>/<DEVICE>/info and, when it has one, its cache to
// <root>/<ADAPTER>/cache/<DEVICE>, byte for byte. Directories it creates
// get DirMode (the adapter, device and cache directories are set to it
// even when they exist) and files FileMode; they belong to the caller's
// user, root in bondfetch. Each file appears whole or not at all: it is
// written to a temporary file in the same directory and then linked into
// place, which fails rather than replace a file that exists.
//
// It only adds. An existing file with the same bytes is left alone
// (Unchanged), one with other bytes is left alone too (Kept). Every path
// is built from the parsed addresses, so nothing is written outside
// <root>/<ADAPTER>; a symbolic link or a non-directory where one of its
// directories belongs is an error, never followed. root itself is created
// with DirMode if missing.
//
// A bond of another adapter, or one that fails Bond.Check, is not written;
// its error is joined into the returned error and the other bonds are still
// written.
func WriteTree(root string, adapter bdaddr.Address, bonds []Bond) (WriteReport, error) {
	var report WriteReport
	if adapter.IsZero() {
		return report, errors.New("write bonds: zero adapter address")
	}
	if err := os.MkdirAll(root, DirMode); err != nil {
		return report, fmt.Errorf("write bonds: %w", err)
	}
	adapterDir := AdapterDir(root, adapter)
	if err := ensureDir(adapterDir); err != nil {
		return report, fmt.Errorf("write bonds: %w", err)
	}
	var errs []error
	for _, b := range bonds {
		if b.Adapter != adapter {
			errs = append(errs, fmt.Errorf("bond %s belongs to adapter %s, not %s: not written", b.Device, b.Adapter, adapter))
			continue
		}
		if err := b.Check(); err != nil {
			errs = append(errs, fmt.Errorf("%w: not written", err))
			continue
		}
		deviceDir := filepath.Join(adapterDir, b.Device.String())
		if err := ensureDir(deviceDir); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := addFile(&report, filepath.Join(deviceDir, "info"), b.Info); err != nil {
			errs = append(errs, err)
			continue
		}
		if len(b.Cache) == 0 {
			// No file rather than an empty one: BlueZ reads an empty
			// cache as known-empty and would not look the records up
			// again.
			continue
		}
		cacheDir := filepath.Join(adapterDir, "cache")
		if err := ensureDir(cacheDir); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := addFile(&report, filepath.Join(cacheDir, b.Device.String()), b.Cache); err != nil {
			errs = append(errs, err)
		}
	}
	return report, errors.Join(errs...)
}

// ensureDir makes dir a real directory with DirMode: created if missing,
// refused if a symbolic link or anything else stands there.
func ensureDir(dir string) error {
	err := os.Mkdir(dir, DirMode)
	if err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	st, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return fmt.Errorf("%s is a %s, not a directory: refusing to write through it", dir, regularfile.Kind(st.Mode()))
	}
	// Mkdir's mode passes through the umask; BlueZ wants exactly 0700.
	return os.Chmod(dir, DirMode)
}

// addFile creates path with data unless a file is already there, and
// records what happened in report.
func addFile(report *WriteReport, path string, data []byte) error {
	if same, exists, err := compare(path, data); err != nil {
		return err
	} else if exists {
		if same {
			report.Unchanged = append(report.Unchanged, path)
		} else {
			report.Kept = append(report.Kept, path)
		}
		return nil
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".bond-*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Chmod(FileMode)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	// A link, unlike a rename, never replaces what is there.
	if err := os.Link(tmp.Name(), path); errors.Is(err, fs.ErrExist) {
		report.Kept = append(report.Kept, path)
		return nil
	} else if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	report.Written = append(report.Written, path)
	return nil
}

// compare reports whether path exists and holds exactly data. Anything
// but a regular file there is an error.
func compare(path string, data []byte) (same, exists bool, err error) {
	st, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, false, nil
	}
	if err != nil {
		return false, false, err
	}
	if !st.Mode().IsRegular() {
		return false, true, fmt.Errorf("%s is a %s, not a file: refusing to write through it", path, regularfile.Kind(st.Mode()))
	}
	if st.Size() != int64(len(data)) {
		return false, true, nil
	}
	old, err := readRegular(path, int64(len(data)))
	if err != nil {
		return false, true, err
	}
	return bytes.Equal(old, data), true, nil
}
