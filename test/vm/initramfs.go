// SPDX-License-Identifier: Apache-2.0

package vm

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// Busybox is busybox-static's binary: statically linked, so it needs no
// library in the guest.
const Busybox = "/bin/busybox"

// Stage is the directory tree that becomes the guest's initramfs. Paths
// given to its methods are the guest's absolute paths.
type Stage struct {
	Dir string
}

// path is the host path of a guest path.
func (s *Stage) path(guest string) string { return filepath.Join(s.Dir, filepath.Clean("/"+guest)) }

// WriteFile writes data at a guest path, creating its directories.
func (s *Stage) WriteFile(guest string, data []byte, mode fs.FileMode) error {
	p := s.path(guest)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(p, data, mode); err != nil {
		return err
	}
	return os.Chmod(p, mode)
}

// CopyFile copies a host file's content (symbolic links followed) to a
// guest path, keeping its permission bits.
func (s *Stage) CopyFile(guest, host string) error {
	src, err := os.Open(host)
	if err != nil {
		return err
	}
	defer src.Close()
	fi, err := src.Stat()
	if err != nil {
		return err
	}
	p := s.path(guest)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	dst, err := os.OpenFile(p, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, fi.Mode().Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}

// AddBusybox installs Busybox at /bin/busybox with a link for every applet
// it lists, in /bin and /sbin, and the directories init mounts on.
func (s *Stage) AddBusybox(ctx context.Context) error {
	if err := s.CopyFile("/bin/busybox", Busybox); err != nil {
		return fmt.Errorf("busybox (package busybox-static): %w", err)
	}
	out, err := output(ctx, Busybox, "--list")
	if err != nil {
		return err
	}
	for _, applet := range strings.Fields(string(out)) {
		for _, dir := range []string{"/bin", "/sbin"} {
			link := s.path(dir + "/" + applet)
			if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
				return err
			}
			if err := os.Symlink("/bin/busybox", link); err != nil && !os.IsExist(err) {
				return err
			}
		}
	}
	for _, d := range []string{"/proc", "/sys", "/dev", "/tmp", "/run", "/out", "/var/lib", "/etc", "/root"} {
		if err := os.MkdirAll(s.path(d), 0o755); err != nil {
			return err
		}
	}
	return nil
}

// AddModules stages the closure of the named modules of k under
// /lib/modules/<release>, decompressed, and runs depmod over what was
// staged so that the guest's modprobe finds them. It returns how many
// module files were staged.
func (s *Stage) AddModules(ctx context.Context, k Kernel, names []string) (int, error) {
	deps, err := LoadModuleDeps(k.ModuleDir())
	if err != nil {
		return 0, err
	}
	files, err := deps.Closure(names)
	if err != nil {
		return 0, err
	}
	dst := s.path("/lib/modules/" + k.Release)
	for _, f := range files {
		if err := decompressModule(ctx, filepath.Join(k.ModuleDir(), f), filepath.Join(dst, trimCompression(f))); err != nil {
			return 0, err
		}
	}
	for _, f := range []string{"modules.builtin", "modules.builtin.modinfo", "modules.order"} {
		if err := s.CopyFile("/lib/modules/"+k.Release+"/"+f, filepath.Join(k.ModuleDir(), f)); err != nil {
			return 0, err
		}
	}
	return len(files), run(ctx, "", "depmod", "-b", s.Dir, k.Release)
}

// trimCompression drops a module file's compression suffix.
func trimCompression(f string) string {
	for _, ext := range []string{".xz", ".zst", ".gz"} {
		if t, ok := strings.CutSuffix(f, ext); ok {
			return t
		}
	}
	return f
}

// decompressModule writes the module at src to dst as a plain .ko.
func decompressModule(ctx context.Context, src, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	var tool string
	switch filepath.Ext(src) {
	case ".xz":
		tool = "xz"
	case ".zst":
		tool = "zstd"
	case ".gz":
		tool = "gzip"
	default:
		data, err := os.ReadFile(src)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, data, 0o644)
	}
	data, err := output(ctx, tool, "-dc", src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, data, 0o644)
}

// lddPath matches the library paths ldd prints: "name => /path (0x...)"
// and the loader's "/lib64/ld-linux-x86-64.so.2 (0x...)".
var lddPath = regexp.MustCompile(`(?:=>\s*|^\s*)(/\S+)\s+\(0x[0-9a-f]+\)`)

// AddProgram copies a dynamically linked host program to the same path in
// the guest, with every shared library ldd lists for it.
func (s *Stage) AddProgram(ctx context.Context, host string) error {
	if err := s.CopyFile(host, host); err != nil {
		return err
	}
	out, err := output(ctx, "ldd", host)
	if err != nil {
		return err
	}
	for _, line := range strings.Split(string(out), "\n") {
		if m := lddPath.FindStringSubmatch(line); m != nil {
			if err := s.CopyFile(m[1], m[1]); err != nil {
				return fmt.Errorf("%s needs %s: %w", host, m[1], err)
			}
		}
	}
	return nil
}

// Pack writes the stage as an uncompressed newc cpio archive, every file
// owned by root. Uncompressed, because the guest runs under software
// emulation, where unpacking a compressed archive costs more than reading
// a larger one.
func (s *Stage) Pack(ctx context.Context, out string) (int64, error) {
	var list []string
	err := filepath.WalkDir(s.Dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(s.Dir, p)
		if err != nil {
			return err
		}
		list = append(list, rel)
		return nil
	})
	if err != nil {
		return 0, err
	}
	slices.Sort(list)
	f, err := os.Create(out)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "cpio", "-o", "-H", "newc", "-R", "0:0", "--quiet")
	cmd.Dir = s.Dir
	cmd.Stdin = strings.NewReader(strings.Join(list, "\n") + "\n")
	cmd.Stdout = f
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("cpio: %w\n%s", err, stderr.Bytes())
	}
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return fi.Size(), f.Close()
}

// AddLibraries stages, like AddProgram, every shared object that matches
// one of patterns: shell globs (filepath.Match syntax) in which a
// {a,b,...} group stands for each of its words. A pattern that matches
// nothing is an error, so a package that moved its plugins is noticed.
func (s *Stage) AddLibraries(ctx context.Context, patterns []string) (int, error) {
	n := 0
	for _, p := range patterns {
		var found []string
		for _, g := range expandBraces(p) {
			m, err := filepath.Glob(g)
			if err != nil {
				return n, fmt.Errorf("library pattern %q: %w", p, err)
			}
			found = append(found, m...)
		}
		if len(found) == 0 {
			return n, fmt.Errorf("library pattern %q matches nothing on this host", p)
		}
		for _, f := range found {
			if err := s.AddProgram(ctx, f); err != nil {
				return n, err
			}
			n++
		}
	}
	return n, nil
}

// expandBraces expands the first {a,b} group of p, recursively; p with no
// group is itself.
func expandBraces(p string) []string {
	open := strings.IndexByte(p, '{')
	if open < 0 {
		return []string{p}
	}
	end := strings.IndexByte(p[open:], '}')
	if end < 0 {
		return []string{p}
	}
	var out []string
	for _, w := range strings.Split(p[open+1:open+end], ",") {
		out = append(out, expandBraces(p[:open]+w+p[open+end+1:])...)
	}
	return out
}

// AddTree copies the regular files under the host directory dir to the
// same paths in the guest, following no symbolic link out of it.
func (s *Stage) AddTree(dir string) (int, error) {
	n := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		n++
		return s.CopyFile(path, path)
	})
	return n, err
}
