// SPDX-License-Identifier: Apache-2.0

package bonds

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/liken-sh/operators/internal/bdaddr"
	"github.com/liken-sh/operators/internal/regularfile"
)

// Modes BlueZ gives its storage tree, and which bondfetch reproduces:
// bluetoothd runs as root without CAP_DAC_OVERRIDE and obeys them.
const (
	DirMode  fs.FileMode = 0o700
	FileMode fs.FileMode = 0o600
)

// AdapterDir returns <root>/<ADAPTER>, the adapter's directory in BlueZ's
// tree.
func AdapterDir(root string, adapter bdaddr.Address) string {
	return filepath.Join(root, adapter.String())
}

// ReadTree reads the bonds of adapter from the BlueZ tree at root (normally
// /var/lib/bluetooth), sorted by device address.
//
// A bond is a directory <ADAPTER>/<DEVICE> named by an address in BlueZ's
// spelling and holding a non-empty info file, plus <ADAPTER>/cache/<DEVICE>
// when that exists. Left out without a word, as they are not bonds: other
// names (cache, settings, identity), a missing or empty info (a pairing
// BlueZ has not finished writing), cache entries of devices without a
// directory (neighbours BlueZ merely saw), and attributes and ccc files.
//
// A bond whose info is oversized, not a BlueZ key file, or holds no link
// key or long term key (a device BlueZ trusts without a bond, or a re-pair
// that failed) is left out and reported in skipped, as is the cache alone when it is; a symbolic link
// where a file or directory belongs is reported the same way and never
// followed. Any other error reading an info or cache fails the whole read,
// so that a partial tree is never taken for the whole. A missing adapter
// directory is an empty tree.
func ReadTree(root string, adapter bdaddr.Address) (bonds []Bond, skipped []error, err error) {
	dir := AdapterDir(root, adapter)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read bonds of %s: %w", adapter, err)
	}
	for _, e := range entries {
		device, perr := bdaddr.Parse(e.Name())
		if perr != nil || e.Name() != device.String() || device.IsZero() {
			continue
		}
		if !e.IsDir() {
			if e.Type()&fs.ModeSymlink != 0 {
				skipped = append(skipped, fmt.Errorf("%s: a symbolic link, not a device directory", filepath.Join(dir, e.Name())))
			}
			continue
		}
		infoPath := filepath.Join(dir, e.Name(), "info")
		info, err := readRegular(infoPath, MaxInfoSize)
		switch {
		case errors.Is(err, fs.ErrNotExist) || (err == nil && len(info) == 0):
			continue
		case errors.Is(err, errSkip):
			skipped = append(skipped, err)
			continue
		case err != nil:
			return nil, nil, fmt.Errorf("read bonds of %s: %w", adapter, err)
		}
		if err := CheckInfo(info); err != nil {
			skipped = append(skipped, fmt.Errorf("%s: %w", infoPath, err))
			continue
		}
		if err := checkBonded(info); err != nil {
			skipped = append(skipped, fmt.Errorf("%s: %w", infoPath, err))
			continue
		}
		b := Bond{Adapter: adapter, Device: device, Info: info}
		cachePath := filepath.Join(dir, "cache", e.Name())
		cache, err := readRegular(cachePath, MaxCacheSize)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case errors.Is(err, errSkip):
			skipped = append(skipped, err)
		case err != nil:
			return nil, nil, fmt.Errorf("read bonds of %s: %w", adapter, err)
		default:
			if err := CheckCache(cache); err != nil {
				skipped = append(skipped, fmt.Errorf("%s: %w", cachePath, err))
			} else if len(cache) > 0 {
				b.Cache = cache
			}
		}
		bonds = append(bonds, b)
	}
	sort.Slice(bonds, func(i, j int) bool { return bytes.Compare(bonds[i].Device[:], bonds[j].Device[:]) < 0 })
	return bonds, skipped, nil
}

// errSkip marks a file that is there but must not be read: not a regular
// file, or over its size limit.
var errSkip = errors.New("skipped")

// readRegular reads path if it is a regular file of at most limit bytes
// (regularfile.Read: never a symbolic link, a named pipe or a device); a
// file that is not one, or too large, is an errSkip.
func readRegular(path string, limit int64) ([]byte, error) {
	data, err := regularfile.Read(path, limit)
	if errors.Is(err, regularfile.ErrNotRegular) || errors.Is(err, regularfile.ErrTooLarge) {
		return nil, fmt.Errorf("%w: %v", errSkip, err)
	}
	return data, err
}
