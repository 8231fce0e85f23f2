// SPDX-License-Identifier: Apache-2.0

package ocibuild

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// maxLinks bounds the symbolic links one lookup follows, as the kernel's
// own limit does, so a loop in the root is an error rather than a hang.
const maxLinks = 40

type kind int

const (
	kindDir kind = iota
	kindFile
	kindSymlink
)

// entry is one path of the image. A file's content is either src, a file
// on the build machine read when the layer is written, or data.
type entry struct {
	kind   kind
	mode   fs.FileMode // permission bits plus setuid, setgid, sticky
	src    string
	data   []byte
	size   int64
	target string
}

// Contents is an image's file tree as Assemble builds it from a Spec: which
// path is a directory, a file (and where its bytes come from) or a link.
type Contents struct {
	root    string
	arch    Arch
	entries map[string]*entry
	scanned map[string]bool // ELF files whose closure is in
}

func newContents(root string, arch Arch) *Contents {
	return &Contents{root: root, arch: arch, entries: map[string]*entry{"/": {kind: kindDir, mode: 0o755}}, scanned: map[string]bool{}}
}

// host is where the root holds the image path p.
func (c *Contents) host(p string) string { return filepath.Join(c.root, filepath.FromSlash(p)) }

// put records e at p. Adding the same directory, link or file content
// twice is harmless (a directory keeps the mode it was first given);
// anything else at a taken path is an error, so two sources never
// silently replace each other.
func (c *Contents) put(p string, e *entry) error {
	old, ok := c.entries[p]
	if !ok {
		c.entries[p] = e
		return nil
	}
	same := old.kind == e.kind
	switch {
	case !same:
	case e.kind == kindDir:
		return nil
	case e.kind == kindSymlink:
		same = old.target == e.target
	default:
		same = old.src == e.src && string(old.data) == string(e.data) && old.mode == e.mode
	}
	if same {
		return nil
	}
	return fmt.Errorf("%s is added twice with different contents", p)
}

// parents gives every ancestor of p that has no entry a directory 0755;
// an ancestor that is a link or a file is an error, because the build
// writes only through real directories.
func (c *Contents) parents(p string) error {
	dir := path.Dir(p)
	if dir == p {
		return nil
	}
	if err := c.parents(dir); err != nil {
		return err
	}
	if e, ok := c.entries[dir]; ok {
		if e.kind != kindDir {
			return fmt.Errorf("%s: its parent %s is not a directory in the image", p, dir)
		}
		return nil
	}
	return c.put(dir, &entry{kind: kindDir, mode: 0o755})
}

// walk looks p up in the root component by component. With add it records
// every directory, link and file it passes, so a path through a link
// brings the link and the link's target; a regular file brings its ELF
// closure. It returns p's real path, free of links.
func (c *Contents) walk(p string, add bool, links int) (string, error) {
	if !path.IsAbs(p) {
		return "", fmt.Errorf("%q is not an absolute path", p)
	}
	p = path.Clean(p)
	if p == "/" {
		return p, nil
	}
	parts := strings.Split(p[1:], "/")
	cur := "/"
	for i, name := range parts {
		next := path.Join(cur, name)
		fi, err := os.Lstat(c.host(next))
		if err != nil {
			return "", fmt.Errorf("%s: %w", p, err)
		}
		switch mode := fi.Mode(); {
		case mode&fs.ModeSymlink != 0:
			if links >= maxLinks {
				return "", fmt.Errorf("%s: more than %d symbolic links", p, maxLinks)
			}
			target, err := os.Readlink(c.host(next))
			if err != nil {
				return "", err
			}
			if add {
				if err := c.put(next, &entry{kind: kindSymlink, mode: 0o777, target: target}); err != nil {
					return "", err
				}
			}
			if !path.IsAbs(target) {
				target = path.Join(cur, target)
			}
			if cur, err = c.walk(target, add, links+1); err != nil {
				return "", err
			}
		case mode.IsDir():
			if add {
				if err := c.put(next, &entry{kind: kindDir, mode: mode & (fs.ModePerm | fs.ModeSticky | fs.ModeSetgid)}); err != nil {
					return "", err
				}
			}
			cur = next
		case mode.IsRegular():
			if i != len(parts)-1 {
				return "", fmt.Errorf("%s: %s is not a directory", p, next)
			}
			cur = next
			if !add {
				continue
			}
			e := &entry{kind: kindFile, mode: mode & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid), src: c.host(next), size: fi.Size()}
			if err := c.put(next, e); err != nil {
				return "", err
			}
			if err := c.closure(next, e.src); err != nil {
				return "", err
			}
		default:
			return "", fmt.Errorf("%s: %s is a %v, which an image does not carry", p, next, mode.Type())
		}
	}
	return cur, nil
}

// addTree adds the directory t.Path, or the parts of it t.Only names.
// Every pattern of Only must match something, so a spec that names a
// plugin the root lacks fails instead of building an image without it.
func (c *Contents) addTree(t Tree) error {
	real, err := c.walk(t.Path, true, 0)
	if err != nil {
		return err
	}
	matched := make([]bool, len(t.Only))
	err = filepath.WalkDir(c.host(real), func(hostPath string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(c.host(real), hostPath)
		if err != nil || rel == "." {
			return err
		}
		rel = filepath.ToSlash(rel)
		if len(t.Only) > 0 && !matchAny(t.Only, rel, matched) {
			return nil
		}
		_, err = c.walk(path.Join(real, rel), true, 0)
		return err
	})
	if err != nil {
		return fmt.Errorf("tree %s: %w", t.Path, err)
	}
	for i, ok := range matched {
		if !ok {
			return fmt.Errorf("tree %s: nothing matches %q", t.Path, t.Only[i])
		}
	}
	return nil
}

// matchAny reports whether rel, or a directory above it, matches one of
// patterns, marking the patterns that did.
func matchAny(patterns []string, rel string, matched []bool) bool {
	parts := strings.Split(rel, "/")
	hit := false
	for i, pattern := range patterns {
		for k := 1; k <= len(parts); k++ {
			if ok, _ := path.Match(pattern, strings.Join(parts[:k], "/")); ok {
				matched[i], hit = true, true
				break
			}
		}
	}
	return hit
}

// lookup finds p in the image, following the image's own links, and
// returns its real path and entry.
func (c *Contents) lookup(p string, links int) (string, *entry, error) {
	p = path.Clean(p)
	if p == "/" {
		return p, c.entries[p], nil
	}
	cur := "/"
	parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for i, name := range parts {
		next := path.Join(cur, name)
		e, ok := c.entries[next]
		if !ok {
			return "", nil, fmt.Errorf("%s: %w in the image", p, fs.ErrNotExist)
		}
		if e.kind == kindSymlink {
			if links >= maxLinks {
				return "", nil, fmt.Errorf("%s: more than %d symbolic links", p, maxLinks)
			}
			target := e.target
			if !path.IsAbs(target) {
				target = path.Join(cur, target)
			}
			real, te, err := c.lookup(target, links+1)
			if err != nil {
				return "", nil, err
			}
			if i == len(parts)-1 {
				return real, te, nil
			}
			cur = real
			continue
		}
		if e.kind == kindFile && i != len(parts)-1 {
			return "", nil, fmt.Errorf("%s: %s is not a directory", p, next)
		}
		cur = next
	}
	return cur, c.entries[cur], nil
}

// Has reports whether p exists in the image (links followed).
func (c *Contents) Has(p string) bool {
	_, _, err := c.lookup(p, 0)
	return err == nil
}

// ReadFile returns the content the image holds at p (links followed).
func (c *Contents) ReadFile(p string) ([]byte, error) {
	_, e, err := c.lookup(p, 0)
	if err != nil {
		return nil, err
	}
	if e.kind != kindFile {
		return nil, fmt.Errorf("%s is not a file in the image", p)
	}
	if e.src == "" {
		return slices.Clone(e.data), nil
	}
	return os.ReadFile(e.src)
}

// ReadDir returns the sorted names in the image directory p (links
// followed); a missing directory has none.
func (c *Contents) ReadDir(p string) ([]string, error) {
	real, e, err := c.lookup(p, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if e.kind != kindDir {
		return nil, fmt.Errorf("%s is not a directory in the image", p)
	}
	var names []string
	for q := range c.entries {
		if q != "/" && path.Dir(q) == real {
			names = append(names, path.Base(q))
		}
	}
	slices.Sort(names)
	return names, nil
}

// Paths returns every path of the image, sorted, without "/".
func (c *Contents) Paths() []string {
	paths := make([]string, 0, len(c.entries))
	for p := range c.entries {
		if p != "/" {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)
	return paths
}

// FileBytes is the sum of the sizes of the image's files.
func (c *Contents) FileBytes() int64 {
	var n int64
	for _, e := range c.entries {
		if e.kind == kindFile {
			n += e.size
		}
	}
	return n
}

// Arch is the platform the contents are for.
func (c *Contents) Arch() Arch { return c.arch }

// RootFiles returns the image paths of the regular files taken from the
// root filesystem, sorted: not the generated ones, nor those Add copied
// from elsewhere. On a root unpacked from packages these are the files
// some package installed.
func (c *Contents) RootFiles() []string {
	var paths []string
	for _, p := range c.Paths() {
		if e := c.entries[p]; e.kind == kindFile && e.src == c.host(p) {
			paths = append(paths, p)
		}
	}
	return paths
}
