// SPDX-License-Identifier: Apache-2.0

package debroot

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// apt runs apt-get for one foreign architecture with its own state under
// dir: package lists, the archive of downloaded packages (dir/debs) and
// an empty dpkg status. The machine's APT sources are used as they are.
type apt struct {
	dir, arch string
	logf      func(string, ...any)
}

// options are apt-get's -o settings that give it the private state.
func (a apt) options() []string {
	var args []string
	for _, o := range []string{
		"APT::Architecture=" + a.arch,
		"APT::Architectures::=" + a.arch,
		"Dir::State::Lists=" + filepath.Join(a.dir, "lists"),
		"Dir::State::status=" + filepath.Join(a.dir, "status"),
		"Dir::Cache=" + filepath.Join(a.dir, "cache"),
		// AppStream metadata (the appstream package's DEP-11 index
		// targets) is of no use here.
		"Acquire::IndexTargets::deb::DEP-11::DefaultEnabled=false",
		"Acquire::IndexTargets::deb::DEP-11-icons-small::DefaultEnabled=false",
		"Acquire::IndexTargets::deb::DEP-11-icons::DefaultEnabled=false",
		"Acquire::IndexTargets::deb::DEP-11-icons-hidpi::DefaultEnabled=false",
		// The download directory is the caller's, which APT's
		// unprivileged _apt user may not be able to write.
		"APT::Sandbox::User=root",
	} {
		args = append(args, "-o", o)
	}
	return args
}

// prepare makes the state directories.
func (a apt) prepare() error {
	for _, d := range []string{"lists/partial", "cache/archives/partial", "debs"} {
		if err := os.MkdirAll(filepath.Join(a.dir, d), 0o755); err != nil {
			return err
		}
	}
	status := filepath.Join(a.dir, "status")
	if _, err := os.Stat(status); os.IsNotExist(err) {
		return os.WriteFile(status, nil, 0o644)
	}
	return nil
}

// run runs apt-get with the private state in dir.
func (a apt) run(ctx context.Context, dir string, args ...string) error {
	cmd := exec.CommandContext(ctx, "apt-get", append(append(a.options(), "-q"), args...)...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("apt-get %s (architecture %s): %v\n%s", strings.Join(args, " "), a.arch, err, out.String())
	}
	return nil
}

// debName is the file apt-get download writes for p: name_version_arch.deb
// with the version's epoch colon quoted as %3a.
func (a apt) debName(p Package) string {
	arch := p.Arch
	if arch != "all" {
		arch = a.arch
	}
	return p.Name + "_" + strings.ReplaceAll(p.Version, ":", "%3a") + "_" + arch + ".deb"
}

// download returns the package files of pkgs for the architecture,
// fetching those the archive lacks, and the packages those files are.
// Each package is taken at the version installed here when the APT
// sources offer it for the architecture, else at a build of the same
// source version (a binNMU, "+bN", is numbered per architecture), else at
// the oldest version newer than the installed one (the mirror keeps only
// the newest stable and security updates, so a machine not upgraded since
// has versions it no longer offers), which is logged. The package lists
// are fetched when there are none, and again once when a package has no
// version to take, or when one is not taken at the installed version and
// the lists are more than an hour old.
func (a apt) download(ctx context.Context, pkgs []Package) ([]string, []Package, error) {
	if err := a.prepare(); err != nil {
		return nil, nil, err
	}
	lists, _ := filepath.Glob(filepath.Join(a.dir, "lists", "*_Packages*"))
	updated := false
	// APT gives a list the server's modification time, so the time of
	// the last fetch is kept in a file of its own.
	stamp := filepath.Join(a.dir, "updated")
	update := func() error {
		a.logf("debroot: fetching the %s package lists", a.arch)
		updated = true
		if err := a.run(ctx, a.dir, "update"); err != nil {
			return err
		}
		return os.WriteFile(stamp, nil, 0o644)
	}
	if len(lists) == 0 {
		if err := update(); err != nil {
			return nil, nil, err
		}
	}
	chosen, inexact, err := a.resolve(ctx, pkgs)
	if (err != nil || (len(inexact) > 0 && olderThan(stamp, time.Hour))) && !updated {
		if err := update(); err != nil {
			return nil, nil, err
		}
		chosen, inexact, err = a.resolve(ctx, pkgs)
	}
	if err != nil {
		return nil, nil, err
	}
	for _, s := range inexact {
		a.logf("debroot: %s", s)
	}

	debs := filepath.Join(a.dir, "debs")
	var want, paths []string
	for _, p := range chosen {
		file := filepath.Join(debs, a.debName(p))
		paths = append(paths, file)
		if _, err := os.Stat(file); err == nil {
			continue
		}
		want = append(want, p.Name+"="+p.Version)
	}
	if len(want) > 0 {
		a.logf("debroot: downloading %d %s packages", len(want), a.arch)
		if err := a.run(ctx, debs, append([]string{"download"}, want...)...); err != nil {
			return nil, nil, err
		}
	}
	for _, f := range paths {
		if _, err := os.Stat(f); err != nil {
			return nil, nil, fmt.Errorf("apt-get download wrote no %s", filepath.Base(f))
		}
	}
	return paths, chosen, nil
}

// resolve picks each package's version for the architecture, as download
// says, and describes the packages not taken at the installed version.
func (a apt) resolve(ctx context.Context, pkgs []Package) (chosen []Package, inexact []string, err error) {
	names := make([]string, len(pkgs))
	for i, p := range pkgs {
		names[i] = p.Name
	}
	avail, err := a.versions(ctx, names)
	if err != nil {
		return nil, nil, err
	}
	var missing []string
	for _, p := range pkgs {
		v, err := pick(p.Version, avail[p.Name])
		if err != nil {
			return nil, nil, err
		}
		if v == "" {
			missing = append(missing, fmt.Sprintf("%s (%s installed here; offered: %s)", p.Name, p.Version, strings.Join(avail[p.Name], ", ")))
			continue
		}
		if v != p.Version {
			inexact = append(inexact, fmt.Sprintf("%s: %s installed here, %s for %s", p.Name, p.Version, v, a.arch))
		}
		chosen = append(chosen, Package{Name: p.Name, Arch: p.Arch, Version: v})
	}
	if len(missing) > 0 {
		return nil, nil, fmt.Errorf("debroot: the APT sources offer no %s build of %s", a.arch, strings.Join(missing, "; "))
	}
	return chosen, inexact, nil
}

// versions lists the versions the package lists offer for each of names
// (apt-cache madison: "name | version | source" lines).
func (a apt) versions(ctx context.Context, names []string) (map[string][]string, error) {
	cmd := exec.CommandContext(ctx, "apt-cache", append(append(a.options(), "madison"), names...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("apt-cache madison (architecture %s): %v\n%s", a.arch, err, stderr.String())
	}
	avail := map[string][]string{}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Split(line, "|")
		if len(f) != 3 {
			continue
		}
		name, v := strings.TrimSpace(f[0]), strings.TrimSpace(f[1])
		if !slices.Contains(avail[name], v) {
			avail[name] = append(avail[name], v)
		}
	}
	return avail, nil
}

// binNMU is a binary-only rebuild's suffix, which each architecture
// numbers on its own (Debian Policy 5.6.12, "+bN").
var binNMU = regexp.MustCompile(`\+b[0-9]+$`)

// pick chooses among avail for the installed version: itself, a build of
// the same source version, or the oldest newer one; "" when none is.
func pick(installed string, avail []string) (string, error) {
	if slices.Contains(avail, installed) {
		return installed, nil
	}
	for _, v := range avail {
		if binNMU.ReplaceAllString(v, "") == binNMU.ReplaceAllString(installed, "") {
			return v, nil
		}
	}
	best := ""
	for _, v := range avail {
		newer, err := versionGreater(v, installed)
		if err != nil {
			return "", err
		}
		if !newer {
			continue
		}
		if best == "" {
			best = v
		} else if older, err := versionGreater(best, v); err != nil {
			return "", err
		} else if older {
			best = v
		}
	}
	return best, nil
}

// versionGreater reports whether Debian version a sorts after b, as dpkg
// orders them (dpkg --compare-versions).
func versionGreater(a, b string) (bool, error) {
	err := exec.Command("dpkg", "--compare-versions", a, "gt", b).Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return true, nil
	case errors.As(err, &exit) && exit.ExitCode() == 1:
		return false, nil
	default:
		return false, fmt.Errorf("dpkg --compare-versions %s gt %s: %w", a, b, err)
	}
}

// olderThan reports whether the file is missing or older than age.
func olderThan(file string, age time.Duration) bool {
	fi, err := os.Stat(file)
	return err != nil || time.Since(fi.ModTime()) > age
}
