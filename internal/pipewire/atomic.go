// SPDX-License-Identifier: Apache-2.0

package pipewire

import (
	"fmt"
	"os"
	"path/filepath"
)

// writeFileAtomic replaces path with data, mode 0644: it writes a
// temporary file in the same directory (creating the directory 0755),
// syncs it, renames it over path and syncs the directory, so a reader
// sees the old content or the new, and a crash leaves one of the two. On
// error the old file is untouched and the temporary one is removed.
func writeFileAtomic(path string, data []byte) (err error) {
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
	// CreateTemp makes the file 0600; PipeWire and WirePlumber run as
	// whichever user the image gives them, so the file is world-readable.
	if err = f.Chmod(0o644); err != nil {
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
