package debroot

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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
// fetching those the archive lacks. The package lists are fetched when
// there are none, and fetched again once when a version is not found in
// them (the lists are older than what the machine installed).
func (a apt) download(ctx context.Context, pkgs []Package) ([]string, error) {
	if err := a.prepare(); err != nil {
		return nil, err
	}
	debs := filepath.Join(a.dir, "debs")
	var want []string
	var paths []string
	for _, p := range pkgs {
		file := filepath.Join(debs, a.debName(p))
		paths = append(paths, file)
		if _, err := os.Stat(file); err == nil {
			continue
		}
		spec := p.Name + "=" + p.Version
		if p.Arch != "all" {
			spec = p.Name + ":" + a.arch + "=" + p.Version
		}
		want = append(want, spec)
	}
	if len(want) == 0 {
		return paths, nil
	}
	lists, _ := filepath.Glob(filepath.Join(a.dir, "lists", "*_Packages*"))
	updated := false
	if len(lists) == 0 {
		a.logf("debroot: fetching the %s package lists", a.arch)
		if err := a.run(ctx, debs, "update"); err != nil {
			return nil, err
		}
		updated = true
	}
	a.logf("debroot: downloading %d %s packages", len(want), a.arch)
	err := a.run(ctx, debs, append([]string{"download"}, want...)...)
	if err != nil && !updated {
		a.logf("debroot: %v; fetching the %s package lists again", firstLine(err), a.arch)
		if err := a.run(ctx, debs, "update"); err != nil {
			return nil, err
		}
		err = a.run(ctx, debs, append([]string{"download"}, want...)...)
	}
	if err != nil {
		return nil, fmt.Errorf("%w\nThe %s packages must be the versions installed here; when the mirror has moved on, upgrade them here (apt-get update && apt-get upgrade) and build again", err, a.arch)
	}
	for _, f := range paths {
		if _, err := os.Stat(f); err != nil {
			return nil, fmt.Errorf("apt-get download wrote no %s", filepath.Base(f))
		}
	}
	return paths, nil
}

func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}
