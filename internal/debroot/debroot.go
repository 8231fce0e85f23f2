// SPDX-License-Identifier: Apache-2.0

// Package debroot makes the root filesystem of another Debian architecture
// that matches files of this machine's: for each file, the package that
// installed it here (dpkg-query --search), at the version installed here,
// is downloaded for the other architecture (apt-get download, from the
// machine's own APT sources) and unpacked (dpkg-deb --fsys-tarfile) into
// one directory, laid out as this machine's root is (merged /usr: the
// root's links to usr/ are made first and kept, GNU tar's
// --keep-directory-symlink). No package's maintainer scripts run; the
// root is files to copy, not a system to boot.
//
// APT runs with its own state under the cache directory
// (APT::Architectures set to the other architecture alone, its own
// package lists, an empty dpkg status), so the machine's own APT and dpkg
// configuration are left as they are: no dpkg --add-architecture, and
// the machine's apt-get update fetches no foreign index.
//
// Roots are cached by the list of packages and versions they hold (the
// three most recently used, and the packages they are made of); a second
// call for the same files reads nothing but dpkg's database.
package debroot

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Options say which architecture to build for and where to keep the work.
type Options struct {
	// Arch is the Debian architecture of the root, e.g. "arm64".
	Arch string
	// Cache is the directory holding APT's state, the downloaded
	// packages and the roots (created if missing).
	Cache string
	// Logf, when set, is told what is downloaded and unpacked.
	Logf func(format string, args ...any)
}

// Package is one Debian binary package at one version: Name without an
// architecture qualifier, Arch "all" or a real architecture.
type Package struct {
	Name, Arch, Version string
}

// Root returns a directory holding, for opts.Arch, every package that owns
// one of files on this machine (absolute paths as this machine's root has
// them, links resolved or not), at the version installed here where the
// APT sources offer it, and the packages it holds (their opts.Arch
// versions), sorted. A file no package owns, or a package the APT sources
// offer no build of for opts.Arch at or after the installed version, is
// an error naming it. Concurrent calls with the same cache wait for each other.
func Root(ctx context.Context, files []string, opts Options) (string, []Package, error) {
	if opts.Arch == "" || opts.Cache == "" {
		return "", nil, errors.New("debroot: Arch and Cache are required")
	}
	logf := opts.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	owners, err := owningPackages(ctx, "/", files)
	if err != nil {
		return "", nil, err
	}
	pkgs, err := installed(ctx, owners)
	if err != nil {
		return "", nil, err
	}

	if err := os.MkdirAll(opts.Cache, 0o755); err != nil {
		return "", nil, err
	}
	unlock, err := lock(filepath.Join(opts.Cache, "lock"))
	if err != nil {
		return "", nil, err
	}
	defer unlock()
	roots := filepath.Join(opts.Cache, "roots")
	root := filepath.Join(roots, key(opts.Arch, pkgs))
	if chosen, err := readPackages(root + ".packages"); err == nil {
		if _, err := os.Stat(root); err == nil {
			now := time.Now()
			_ = os.Chtimes(root+".packages", now, now) // recently used: kept by pruneRoots; a failure only prunes it sooner
			return root, chosen, nil
		}
	}

	a := apt{dir: filepath.Join(opts.Cache, "apt"), arch: opts.Arch, logf: logf}
	debs, chosen, err := a.download(ctx, pkgs)
	if err != nil {
		return "", nil, err
	}
	if err := os.MkdirAll(roots, 0o755); err != nil {
		return "", nil, err
	}
	tmp, err := os.MkdirTemp(roots, ".unpacking-")
	if err != nil {
		return "", nil, err
	}
	defer os.RemoveAll(tmp)
	if err := mirrorRootLinks("/", tmp); err != nil {
		return "", nil, err
	}
	logf("debroot: unpacking %d %s packages", len(debs), opts.Arch)
	for _, deb := range debs {
		if err := unpack(ctx, deb, tmp); err != nil {
			return "", nil, err
		}
	}
	os.RemoveAll(root)
	if err := os.Rename(tmp, root); err != nil {
		return "", nil, err
	}
	if err := writePackages(root+".packages", chosen); err != nil {
		return "", nil, err
	}
	pruneRoots(roots, filepath.Join(a.dir, "debs"), a)
	return root, chosen, nil
}

// writePackages records the packages a root holds, one "name arch
// version" line each.
func writePackages(file string, pkgs []Package) error {
	var b strings.Builder
	for _, p := range pkgs {
		fmt.Fprintf(&b, "%s %s %s\n", p.Name, p.Arch, p.Version)
	}
	return os.WriteFile(file, []byte(b.String()), 0o644)
}

// readPackages reads what writePackages wrote.
func readPackages(file string) ([]Package, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var pkgs []Package
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			return nil, fmt.Errorf("%s: bad line %q", file, line)
		}
		pkgs = append(pkgs, Package{Name: f[0], Arch: f[1], Version: f[2]})
	}
	return pkgs, nil
}

// keptRoots is how many roots the cache keeps: the full image set's and a
// build of a few images have different package sets, and a person
// alternating between them should not download again; an older root is
// a package set no build asks for any more.
const keptRoots = 3

// pruneRoots keeps the keptRoots most recently used roots and removes
// the others, and every downloaded package no kept root holds.
func pruneRoots(roots, debs string, a apt) {
	records, _ := filepath.Glob(filepath.Join(roots, "*.packages"))
	slices.SortFunc(records, func(x, y string) int { return modTime(y).Compare(modTime(x)) })
	keep := map[string]bool{}
	for i, rec := range records {
		root := strings.TrimSuffix(rec, ".packages")
		pkgs, err := readPackages(rec)
		if i >= keptRoots || err != nil {
			continue
		}
		keep[root], keep[rec] = true, true
		for _, p := range pkgs {
			keep[filepath.Join(debs, a.debName(p))] = true
		}
	}
	for _, dir := range []string{roots, debs} {
		entries, _ := filepath.Glob(filepath.Join(dir, "*"))
		for _, e := range entries {
			if !keep[e] {
				os.RemoveAll(e)
			}
		}
	}
}

func modTime(path string) time.Time {
	fi, err := os.Stat(path)
	if err != nil {
		return time.Time{}
	}
	return fi.ModTime()
}

// key names the root of pkgs for arch: a digest of the list, which is
// sorted.
func key(arch string, pkgs []Package) string {
	h := sha256.New()
	fmt.Fprintf(h, "debroot 1 %s\n", arch)
	for _, p := range pkgs {
		fmt.Fprintf(h, "%s %s %s\n", p.Name, p.Arch, p.Version)
	}
	return arch + "-" + hex.EncodeToString(h.Sum(nil))[:20]
}

// lock takes an exclusive flock(2) on path until the returned function
// is called.
func lock(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}

// rootLinks are the links at the top of root, by name, with their
// targets: bin -> usr/bin and the like on a merged-/usr system.
func rootLinks(root string) (map[string]string, error) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, err
	}
	links := map[string]string{}
	for _, e := range entries {
		if e.Type()&os.ModeSymlink == 0 {
			continue
		}
		target, err := os.Readlink(filepath.Join(root, e.Name()))
		if err != nil {
			return nil, err
		}
		links[e.Name()] = target
	}
	return links, nil
}

// mirrorRootLinks makes in dst the relative links at the top of root,
// so that packages unpacked into dst land where they land on root.
func mirrorRootLinks(root, dst string) error {
	links, err := rootLinks(root)
	if err != nil {
		return err
	}
	for name, target := range links {
		if filepath.IsAbs(target) {
			continue // not part of the layout, and would point outside dst
		}
		if err := os.MkdirAll(filepath.Join(dst, target), 0o755); err != nil {
			return err
		}
		if err := os.Symlink(target, filepath.Join(dst, name)); err != nil {
			return err
		}
	}
	return nil
}

// spellings are the paths under which dpkg may have recorded file: file
// itself, and with each of root's top-level links put back (/usr/lib/x
// is /lib/x where lib -> usr/lib), as packages built before the /usr
// merge name their files by the old directories.
func spellings(file string, links map[string]string) []string {
	out := []string{file}
	for name, target := range links {
		prefix := "/" + strings.TrimSuffix(target, "/") + "/"
		if strings.HasPrefix(file, prefix) {
			out = append(out, "/"+name+"/"+strings.TrimPrefix(file, prefix))
		}
	}
	slices.Sort(out[1:])
	return out
}

// owningPackages maps each of files to the package that installed it,
// as dpkg-query --search prints it ("libc6:amd64", "bluez").
func owningPackages(ctx context.Context, root string, files []string) (map[string]string, error) {
	links, err := rootLinks(root)
	if err != nil {
		return nil, err
	}
	var patterns []string
	for _, f := range files {
		if strings.ContainsAny(f, "*?[]\\") {
			return nil, fmt.Errorf("debroot: %s: a path with glob characters cannot be looked up in dpkg's database", f)
		}
		patterns = append(patterns, spellings(f, links)...)
	}
	cmd := exec.CommandContext(ctx, "dpkg-query", append([]string{"--search", "--"}, patterns...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// dpkg-query exits 1 when some pattern matches nothing, which the
	// other spellings of a file usually do; missing files are found
	// below.
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 {
			return nil, fmt.Errorf("dpkg-query --search: %v\n%s", err, stderr.String())
		}
	}
	byPath, err := parseSearch(stdout.Bytes())
	if err != nil {
		return nil, err
	}
	owners := map[string]string{}
	var orphans []string
	for _, f := range files {
		for _, s := range spellings(f, links) {
			if pkg, ok := byPath[s]; ok {
				owners[f] = pkg
				break
			}
		}
		if owners[f] == "" {
			orphans = append(orphans, f)
		}
	}
	if len(orphans) > 0 {
		return nil, fmt.Errorf("debroot: no installed package owns %s, so no other architecture's build of it can be found", strings.Join(orphans, ", "))
	}
	return owners, nil
}

// parseSearch reads dpkg-query --search output, "pkg[, pkg...]: path"
// lines, into path → first package. Diversion lines are skipped: the
// diverted file's owner has its own line.
func parseSearch(out []byte) (map[string]string, error) {
	byPath := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "diversion ") || line == "" {
			continue
		}
		pkgs, path, ok := strings.Cut(line, ": ")
		if !ok {
			return nil, fmt.Errorf("dpkg-query --search: unexpected line %q", line)
		}
		first, _, _ := strings.Cut(pkgs, ", ")
		if _, seen := byPath[path]; !seen {
			byPath[path] = first
		}
	}
	return byPath, sc.Err()
}

// installed returns the packages of owners (values) as dpkg has them
// installed, sorted by name.
func installed(ctx context.Context, owners map[string]string) ([]Package, error) {
	var names []string
	for _, p := range owners {
		names = append(names, p)
	}
	slices.Sort(names)
	names = slices.Compact(names)
	cmd := exec.CommandContext(ctx, "dpkg-query", append([]string{"--show", "--showformat", "${Package}\t${Architecture}\t${Version}\n", "--"}, names...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("dpkg-query --show: %v\n%s", err, stderr.String())
	}
	var pkgs []Package
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 3 || f[0] == "" || f[1] == "" || f[2] == "" {
			return nil, fmt.Errorf("dpkg-query --show: unexpected line %q", line)
		}
		pkgs = append(pkgs, Package{Name: f[0], Arch: f[1], Version: f[2]})
	}
	slices.SortFunc(pkgs, func(a, b Package) int { return strings.Compare(a.Name, b.Name) })
	return slices.Compact(pkgs), nil
}

// unpack extracts the files of the package deb into root, following the
// links already there (GNU tar's --keep-directory-symlink) so that a
// package naming /lib/x lands in usr/lib/x where lib -> usr/lib.
func unpack(ctx context.Context, deb, root string) error {
	fsys := exec.CommandContext(ctx, "dpkg-deb", "--fsys-tarfile", deb)
	tar := exec.CommandContext(ctx, "tar", "--extract", "--keep-directory-symlink", "--no-same-owner", "--directory", root)
	pipe, err := fsys.StdoutPipe()
	if err != nil {
		return err
	}
	tar.Stdin = pipe
	var stderr bytes.Buffer
	fsys.Stderr, tar.Stderr = &stderr, &stderr
	if err := tar.Start(); err != nil {
		return err
	}
	if err := fsys.Run(); err != nil {
		_ = tar.Wait() // the read failed first; its error is the one reported
		return fmt.Errorf("dpkg-deb --fsys-tarfile %s: %v\n%s", deb, err, stderr.String())
	}
	if err := tar.Wait(); err != nil {
		return fmt.Errorf("unpacking %s: %v\n%s", deb, err, stderr.String())
	}
	return nil
}
