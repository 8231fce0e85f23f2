// SPDX-License-Identifier: Apache-2.0

package ocibuild

import (
	"debug/elf"
	"strings"
)

// Arch is a Linux platform an image is built for, as Debian's multiarch
// layout has it (https://wiki.debian.org/Multiarch/Tuples).
type Arch struct {
	// Name is the architecture as Go (GOARCH), the OCI image
	// configuration and Debian (dpkg --print-architecture) all spell
	// it: "amd64", "arm64".
	Name string
	// Machine is the ELF e_machine of its programs and libraries.
	Machine elf.Machine
	// Triplet is its multiarch directory name under /usr/lib
	// (DEB_HOST_MULTIARCH): "x86_64-linux-gnu".
	Triplet string
	// Loader is its dynamic loader, the program interpreter (PT_INTERP)
	// of every dynamic executable built for it.
	Loader string
	// LibraryDirs are the directories its loader searches after an
	// object's run paths. The images carry no ld.so.cache, so these are
	// the loader's only directories at run time: Debian's glibc has the
	// multiarch ones built in, before the traditional ones.
	LibraryDirs []string
}

// AMD64 is x86-64, the platform a Spec's paths are written for.
var AMD64 = Arch{
	Name: "amd64", Machine: elf.EM_X86_64, Triplet: "x86_64-linux-gnu", Loader: "/lib64/ld-linux-x86-64.so.2",
	LibraryDirs: []string{"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib"},
}

// ARM64 is AArch64 (Raspberry Pi 3 and later with a 64-bit OS).
var ARM64 = Arch{
	Name: "arm64", Machine: elf.EM_AARCH64, Triplet: "aarch64-linux-gnu", Loader: "/lib/ld-linux-aarch64.so.1",
	LibraryDirs: []string{"/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/lib", "/usr/lib"},
}

// Arches are the platforms the images are built for, AMD64 first.
var Arches = []Arch{AMD64, ARM64}

// ArchNamed returns the Arch of Arches whose Name is name.
func ArchNamed(name string) (Arch, bool) {
	for _, a := range Arches {
		if a.Name == name {
			return a, true
		}
	}
	return Arch{}, false
}

// Platform is the OCI platform string, "linux/arm64".
func (a Arch) Platform() string { return "linux/" + a.Name }

// Path translates p, an image path as an AMD64 root has it, to a's:
// AMD64's dynamic loader becomes a's, and its multiarch triplet a's
// wherever it appears. Other paths are the same on every platform.
func (a Arch) Path(p string) string {
	if p == AMD64.Loader {
		return a.Loader
	}
	return strings.ReplaceAll(p, AMD64.Triplet, a.Triplet)
}

// ForArch returns spec for the platform a: Arch set, and every image path
// it names (and Env, Entrypoint and link targets, which name image paths
// too) translated by a.Path. Add's sources are files of the build
// machine and stay as they are: the caller points them at binaries built
// for a. Checks run on the translated contents, which carry a
// (Contents.Arch).
func (spec Spec) ForArch(a Arch) Spec {
	out := spec
	out.Arch = a
	out.Paths = mapSlice(spec.Paths, a.Path)
	out.Entrypoint = mapSlice(spec.Entrypoint, a.Path)
	out.Env = mapSlice(spec.Env, a.Path)
	out.Trees = mapSlice(spec.Trees, func(t Tree) Tree {
		return Tree{Path: a.Path(t.Path), Only: mapSlice(t.Only, a.Path)}
	})
	out.Add = mapSlice(spec.Add, func(x Add) Add { x.Path = a.Path(x.Path); return x })
	out.Files = mapSlice(spec.Files, func(f File) File { f.Path = a.Path(f.Path); return f })
	out.Dirs = mapSlice(spec.Dirs, func(d Dir) Dir { d.Path = a.Path(d.Path); return d })
	out.Symlinks = mapSlice(spec.Symlinks, func(l Symlink) Symlink {
		return Symlink{Path: a.Path(l.Path), Target: a.Path(l.Target)}
	})
	return out
}

// arch is the platform spec is for: AMD64 unless it says otherwise.
func (spec Spec) arch() Arch {
	if spec.Arch.Name == "" {
		return AMD64
	}
	return spec.Arch
}

func mapSlice[T any](in []T, f func(T) T) []T {
	if in == nil {
		return nil
	}
	out := make([]T, len(in))
	for i, v := range in {
		out[i] = f(v)
	}
	return out
}
