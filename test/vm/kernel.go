// SPDX-License-Identifier: Apache-2.0

package vm

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

// KernelMetapackage is the Debian package whose dependency names the
// current kernel image package.
const KernelMetapackage = "linux-image-amd64"

// Kernel is an unpacked Debian kernel image package with its modules.dep.
type Kernel struct {
	// Package and Version are the Debian package's name and version
	// ("linux-image-6.12.95+deb12-amd64", "6.12.95-1~bpo12+1").
	Package, Version string
	// Release is the kernel release, the directory under /lib/modules
	// ("6.12.95+deb12-amd64").
	Release string
	// Dir is the unpacked package's root.
	Dir string
}

// Vmlinuz is the kernel image's path.
func (k Kernel) Vmlinuz() string { return filepath.Join(k.Dir, "boot", "vmlinuz-"+k.Release) }

// ModuleDir is /lib/modules/<release> in the unpacked package.
func (k Kernel) ModuleDir() string { return filepath.Join(k.Dir, "lib", "modules", k.Release) }

// readyMark is written into a cached kernel's directory once it is
// complete, so an interrupted fetch is redone rather than used.
const readyMark = ".liken-ready"

// FetchKernel returns the kernel image package of <codename>-backports,
// from cacheDir/kernel when it is there, else downloaded with apt-get
// download, unpacked with dpkg-deb and given a modules.dep by depmod (the
// package ships none; its postinst makes it). The package name is resolved
// from KernelMetapackage at every call, because Debian removes old ABI
// packages from the archive; when resolving or downloading fails, the
// package lists are refreshed once (apt-get update) and the name resolved
// again. Other kernels in the cache are removed. logf reports each step.
func FetchKernel(ctx context.Context, cacheDir string, logf func(string, ...any)) (Kernel, error) {
	suite, err := backportsSuite()
	if err != nil {
		return Kernel{}, err
	}
	k, err := fetchKernel(ctx, suite, cacheDir, logf)
	if err == nil {
		return k, nil
	}
	// Stale package lists name a package or version the archive no
	// longer has: refresh them and resolve again.
	logf("%v; apt-get update and again", err)
	if err := run(ctx, "", "apt-get", "update", "-qq"); err != nil {
		return Kernel{}, err
	}
	return fetchKernel(ctx, suite, cacheDir, logf)
}

// fetchKernel is one attempt of FetchKernel with the package lists as
// they are.
func fetchKernel(ctx context.Context, suite, cacheDir string, logf func(string, ...any)) (Kernel, error) {
	k, err := resolveKernel(ctx, suite)
	if err != nil {
		return Kernel{}, err
	}
	root := filepath.Join(cacheDir, "kernel")
	k.Dir = filepath.Join(root, safeName(k.Package+"_"+k.Version))
	if _, err := os.Stat(filepath.Join(k.Dir, readyMark)); err == nil {
		k.Release, err = onlyRelease(k.Dir)
		logf("kernel %s %s (cached)", k.Package, k.Version)
		return k, err
	}
	logf("kernel %s %s: downloading", k.Package, k.Version)
	if err := os.MkdirAll(root, 0o755); err != nil {
		return Kernel{}, err
	}
	tmp, err := os.MkdirTemp(root, ".fetch-")
	if err != nil {
		return Kernel{}, err
	}
	defer os.RemoveAll(tmp)
	deb, err := download(ctx, tmp, k.Package+"="+k.Version)
	if err != nil {
		return Kernel{}, err
	}
	unpacked := filepath.Join(tmp, "root")
	if err := run(ctx, "", "dpkg-deb", "-x", deb, unpacked); err != nil {
		return Kernel{}, err
	}
	if k.Release, err = onlyRelease(unpacked); err != nil {
		return Kernel{}, err
	}
	if err := run(ctx, "", "depmod", "-b", unpacked, k.Release); err != nil {
		return Kernel{}, err
	}
	if err := os.WriteFile(filepath.Join(unpacked, readyMark), nil, 0o644); err != nil {
		return Kernel{}, err
	}
	// Only the current kernel is kept: each is over 100 MB unpacked.
	old, _ := filepath.Glob(filepath.Join(root, "linux-image-*"))
	for _, o := range old {
		os.RemoveAll(o)
	}
	if err := os.Rename(unpacked, k.Dir); err != nil {
		return Kernel{}, err
	}
	return k, nil
}

// backportsSuite is "<codename>-backports" of this Debian.
func backportsSuite() (string, error) {
	data, err := os.ReadFile("/etc/os-release")
	if err != nil {
		return "", fmt.Errorf("which Debian: %w", err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VERSION_CODENAME="); ok && v != "" {
			return strings.Trim(v, `"`) + "-backports", nil
		}
	}
	return "", errors.New("/etc/os-release names no VERSION_CODENAME")
}

var imageDep = regexp.MustCompile(`^\s*Depends:\s*(linux-image-[0-9][^\s]*)\s*$`)

// resolveKernel names the image package the backports metapackage depends
// on, and the version apt would fetch from the backports suite.
func resolveKernel(ctx context.Context, suite string) (Kernel, error) {
	out, err := output(ctx, "apt-cache", "depends", "-t", suite, KernelMetapackage)
	if err != nil {
		return Kernel{}, err
	}
	k := Kernel{Package: imagePackage(out)}
	if k.Package == "" {
		return Kernel{}, fmt.Errorf("apt-cache depends -t %s %s names no kernel image package", suite, KernelMetapackage)
	}
	out, err = output(ctx, "apt-cache", "policy", k.Package)
	if err != nil {
		return Kernel{}, err
	}
	if k.Version = candidate(out); k.Version == "" {
		return Kernel{}, fmt.Errorf("apt-cache policy %s: no candidate version", k.Package)
	}
	return k, nil
}

// imagePackage is the first kernel image package that apt-cache depends
// output lists, or "".
func imagePackage(depends []byte) string {
	for _, line := range strings.Split(string(depends), "\n") {
		if m := imageDep.FindStringSubmatch(line); m != nil {
			return m[1]
		}
	}
	return ""
}

// candidate is the Candidate version in apt-cache policy output, or "".
func candidate(policy []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(policy))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "Candidate:"); ok {
			if v = strings.TrimSpace(v); v != "(none)" {
				return v
			}
		}
	}
	return ""
}

// download fetches one package file into dir and returns its path.
func download(ctx context.Context, dir, pkg string) (string, error) {
	// As root, apt drops to _apt for downloads, which cannot write dir.
	if err := run(ctx, dir, "apt-get", "download", "-q", "-o", "APT::Sandbox::User=root", pkg); err != nil {
		return "", err
	}
	debs, _ := filepath.Glob(filepath.Join(dir, "*.deb"))
	if len(debs) != 1 {
		return "", fmt.Errorf("apt-get download %s left %d .deb files", pkg, len(debs))
	}
	return debs[0], nil
}

// onlyRelease is the one directory under root/lib/modules.
func onlyRelease(root string) (string, error) {
	entries, err := os.ReadDir(filepath.Join(root, "lib", "modules"))
	if err != nil {
		return "", err
	}
	if len(entries) != 1 {
		return "", fmt.Errorf("%s/lib/modules holds %d releases, want 1", root, len(entries))
	}
	return entries[0].Name(), nil
}

// safeName keeps a package version usable as one path element.
func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == ':' {
			return '_'
		}
		return r
	}, s)
}

// run runs a command, returning its output in the error when it fails.
func run(ctx context.Context, dir, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, out)
	}
	return nil
}

// output runs a command and returns its standard output.
func output(ctx context.Context, name string, args ...string) ([]byte, error) {
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, stderr.Bytes())
	}
	return out, nil
}
