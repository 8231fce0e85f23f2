// SPDX-License-Identifier: Apache-2.0

package bonds

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/liken-sh/operators/internal/bdaddr"
	"github.com/liken-sh/operators/internal/regularfile"
)

// Repair is one mode CheckTree set back to BlueZ's.
type Repair struct {
	// Path is the file or directory.
	Path string
	// Was is the permission bits it had (with setuid, setgid, sticky).
	Was fs.FileMode
	// Now is DirMode or FileMode.
	Now fs.FileMode
}

// String says "<path>: mode 0644, now 0600".
func (r Repair) String() string {
	return fmt.Sprintf("%s: mode %#o, now %#o", r.Path, unixMode(r.Was), unixMode(r.Now))
}

// unixMode is m's permission bits as chmod(1) spells them (setuid 04000,
// setgid 02000, sticky 01000), which Go's FileMode keeps elsewhere.
func unixMode(m fs.FileMode) uint32 {
	u := uint32(m.Perm())
	if m&fs.ModeSetuid != 0 {
		u |= 0o4000
	}
	if m&fs.ModeSetgid != 0 {
		u |= 0o2000
	}
	if m&fs.ModeSticky != 0 {
		u |= 0o1000
	}
	return u
}

// CheckTree makes the adapter's part of BlueZ's tree at root,
// <root>/<ADAPTER> and everything under it, what bluetoothd expects
// before it starts: every directory DirMode (0700) and every file
// FileMode (0600), as BlueZ creates them (src/textfile.c create_dirs and
// create_file, called with 0600 throughout src/adapter.c and
// src/device.c), owned by owner (the user bluetoothd runs as: root).
//
// A wrong mode on something owner holds is set back and returned in
// repaired: a file bluetoothd cannot write (0400) loses the keys of the
// next pairing, and one others can read (0644) hands them the link keys.
// Anything it cannot repair is refused, every case joined into err with
// its path: an entry of another owner (bluetoothd, root without
// CAP_DAC_OVERRIDE, cannot read or replace it, and bondfetch holds no
// CAP_CHOWN to give it back), a symbolic link (bluetoothd would follow
// it wherever it leads) or anything else that is not a file or a
// directory. A missing adapter directory (or a root that is no
// directory) is a tree with nothing to check.
// Symbolic links are never followed.
func CheckTree(root string, adapter bdaddr.Address, owner int) (repaired []Repair, err error) {
	var problems []error
	walkErr := filepath.WalkDir(AdapterDir(root, adapter), func(path string, d fs.DirEntry, err error) error {
		if path == AdapterDir(root, adapter) && (errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)) {
			// No tree yet; what stands in its way is WriteTree's to report.
			return fs.SkipDir
		}
		if err != nil {
			return err
		}
		st, err := os.Lstat(path)
		if err != nil {
			return err
		}
		want := FileMode
		switch {
		case st.IsDir():
			want = DirMode
		case !st.Mode().IsRegular():
			problems = append(problems, fmt.Errorf("%s is a %s, which BlueZ never writes into its tree: remove it", path, regularfile.Kind(st.Mode())))
			return nil
		}
		if sys, ok := st.Sys().(*syscall.Stat_t); ok && int(sys.Uid) != owner {
			problems = append(problems, fmt.Errorf("%s is owned by uid %d, not %d: bluetoothd (root without CAP_DAC_OVERRIDE) cannot use it, and bondfetch holds no CAP_CHOWN; "+
				"delete the pod so that its volume starts empty, or chown -R %d:%d the volume on the node", path, sys.Uid, owner, owner, owner))
			if st.IsDir() {
				return fs.SkipDir // its entries may be unreadable, and are reported by this one
			}
			return nil
		}
		was := st.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)
		if was == want {
			return nil
		}
		if err := os.Chmod(path, want); err != nil {
			problems = append(problems, fmt.Errorf("%s has mode %#o, not %#o, and cannot be set: %w", path, unixMode(was), unixMode(want), err))
			return nil
		}
		repaired = append(repaired, Repair{Path: path, Was: was, Now: want})
		return nil
	})
	if walkErr != nil {
		problems = append(problems, fmt.Errorf("check the tree of %s: %w", adapter, walkErr))
	}
	return repaired, errors.Join(problems...)
}
