// SPDX-License-Identifier: Apache-2.0

// Package atomicfile replaces a file's content so that a reader sees the
// old content or the new, never part of either, and a crash leaves one
// of the two: the data goes to a temporary file in the same directory,
// which is synced, renamed over the file, and the directory synced.
package atomicfile

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// WriteFile replaces path with data, with mode perm, creating its
// directory (0755) when missing. On error the old file is untouched and
// the temporary one removed; the error names the step and the path.
func WriteFile(path string, data []byte, perm fs.FileMode) (err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	// CreateTemp makes the file 0600.
	if err = f.Chmod(perm); err != nil {
		return fmt.Errorf("chmod %s: %w", tmp, err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", tmp, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", tmp, err)
	}
	if err = os.Rename(tmp, path); err != nil {
		return fmt.Errorf("rename %s to %s: %w", tmp, path, err)
	}
	if d, derr := os.Open(dir); derr == nil {
		// The rename is durable once the directory is synced; a failure
		// here leaves the new file in place, so it is not reported.
		_ = d.Sync()
		d.Close()
	}
	return nil
}
