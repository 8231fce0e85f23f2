package bonds

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"golang.org/x/sys/unix"

	"github.com/liken-sh/operators/internal/bdaddr"
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

// readRegular reads path if it is a regular file of at most limit bytes,
// without following a symbolic link in its last element.
//
// Anything else is refused before it is opened: opening a named pipe for
// reading waits until a writer comes, and opening a device node runs its
// driver. O_NONBLOCK covers a pipe put there between the Lstat and the
// open (the open then returns at once and Fstat refuses it); on a regular
// file it changes nothing.
func readRegular(path string, limit int64) ([]byte, error) {
	st, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %s is a %s, not a regular file", errSkip, path, describe(st.Mode()))
	}
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if errors.Is(err, unix.ELOOP) {
		return nil, fmt.Errorf("%w: %s is a symbolic link, not a regular file", errSkip, path)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err = f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %s is a %s, not a regular file", errSkip, path, describe(st.Mode()))
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%w: %s is larger than %d bytes", errSkip, path, limit)
	}
	return data, nil
}
