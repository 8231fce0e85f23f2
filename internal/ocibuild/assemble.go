// SPDX-License-Identifier: Apache-2.0

package ocibuild

import (
	"fmt"
	"io/fs"
	"os"
	"path"
)

// Assemble collects the contents spec declares, reading the root
// filesystem at root ("/" for the build machine's), and runs the spec's
// checks on them. The generated and added entries go in first, so their
// modes hold where the root has the same directory.
func Assemble(spec Spec, root string) (*Contents, error) {
	c := newContents(root, spec.arch())
	for _, d := range spec.Dirs {
		if d.Mode&^(fs.ModePerm|fs.ModeSticky) != 0 {
			return nil, fmt.Errorf("directory %s: mode %v has bits other than permissions and sticky (write fs.ModeSticky, not 0o1000)", d.Path, d.Mode)
		}
		if err := c.putGenerated(d.Path, &entry{kind: kindDir, mode: d.Mode}); err != nil {
			return nil, err
		}
	}
	for _, f := range spec.Files {
		if f.Mode&^fs.ModePerm != 0 {
			return nil, fmt.Errorf("file %s: mode %v has bits other than permissions", f.Path, f.Mode)
		}
		e := &entry{kind: kindFile, mode: f.Mode, data: f.Content, size: int64(len(f.Content))}
		if err := c.putGenerated(f.Path, e); err != nil {
			return nil, err
		}
	}
	for _, l := range spec.Symlinks {
		if err := c.putGenerated(l.Path, &entry{kind: kindSymlink, mode: 0o777, target: l.Target}); err != nil {
			return nil, err
		}
	}
	for _, a := range spec.Add {
		if a.Mode&^fs.ModePerm != 0 {
			return nil, fmt.Errorf("add %s: mode %v has bits other than permissions", a.Path, a.Mode)
		}
		fi, err := os.Stat(a.Src)
		if err != nil {
			return nil, fmt.Errorf("add %s: %w", a.Path, err)
		}
		if !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("add %s: %s is not a regular file", a.Path, a.Src)
		}
		e := &entry{kind: kindFile, mode: a.Mode, src: a.Src, size: fi.Size()}
		if err := c.putGenerated(a.Path, e); err != nil {
			return nil, err
		}
		if err := c.closure(a.Path, a.Src); err != nil {
			return nil, err
		}
	}
	for _, b := range spec.Paths {
		if _, err := c.walk(b, true, 0); err != nil {
			return nil, err
		}
	}
	for _, t := range spec.Trees {
		if err := c.addTree(t); err != nil {
			return nil, err
		}
	}
	for _, check := range spec.Checks {
		if err := check.Func(c); err != nil {
			return nil, fmt.Errorf("check %q: %w", check.Name, err)
		}
	}
	return c, nil
}

// putGenerated records an entry the spec itself declares, at a clean
// absolute path, with its parents.
func (c *Contents) putGenerated(p string, e *entry) error {
	if !path.IsAbs(p) || path.Clean(p) != p || p == "/" {
		return fmt.Errorf("%q is not a clean absolute path below /", p)
	}
	if err := c.parents(p); err != nil {
		return err
	}
	return c.put(p, e)
}
