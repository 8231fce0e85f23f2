// SPDX-License-Identifier: Apache-2.0

package images_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// The two platforms' multiarch triplets and dynamic loaders, as Debian
// names them (https://wiki.debian.org/Multiarch/Tuples).
const (
	amd64Triplet = "x86_64-linux-gnu"
	arm64Triplet = "aarch64-linux-gnu"
	amd64Loader  = "/lib64/ld-linux-x86-64.so.2"
	arm64Loader  = "/lib/ld-linux-aarch64.so.1"
)

// TestArm64ImagesMatchAmd64 unpacks both platforms' layers of every image
// and checks that every ELF file of the arm64 root filesystem is a 64-bit
// AArch64 one (and every amd64 one x86-64), that every dynamic program
// names its own platform's loader, and that the two roots hold the same
// paths, kinds, modes and link targets once the amd64 paths' multiarch
// triplet is the arm64 one; the only paths one root has and the other
// lacks are those on the way to its dynamic loader (/lib64 and its links
// on amd64, /lib/ld-linux-aarch64.so.1 on arm64).
func TestArm64ImagesMatchAmd64(t *testing.T) {
	for _, name := range imageNames() {
		t.Run(name, func(t *testing.T) {
			amd, arm := unpackArch(t, name, "amd64"), unpackArch(t, name, "arm64")
			amdList := listRoot(t, amd.root, elf.EM_X86_64, amd64Loader)
			armList := listRoot(t, arm.root, elf.EM_AARCH64, arm64Loader)
			if len(armList) == 0 {
				t.Fatal("the arm64 root is empty")
			}
			translated := map[string]string{}
			for p, what := range amdList {
				translated[strings.ReplaceAll(p, amd64Triplet, arm64Triplet)] = strings.ReplaceAll(what, amd64Triplet, arm64Triplet)
			}
			loaderWay := map[string]bool{}
			for _, p := range wayTo(t, amd.root, amd64Loader) {
				loaderWay[strings.ReplaceAll(p, amd64Triplet, arm64Triplet)] = true
			}
			for _, p := range wayTo(t, arm.root, arm64Loader) {
				loaderWay[p] = true
			}
			var diffs []string
			for _, p := range sortedKeys(translated, armList) {
				a, b := translated[p], armList[p]
				if a == b || (loaderWay[p] && (a == "" || b == "")) {
					continue
				}
				diffs = append(diffs, fmt.Sprintf("%s: amd64 %q, arm64 %q", p, a, b))
			}
			if len(diffs) > 0 {
				t.Errorf("%d paths differ (amd64 paths with %s as %s):\n%s", len(diffs), amd64Triplet, arm64Triplet, strings.Join(diffs, "\n"))
			}
			if !equalConfigs(amd.config.Config.Entrypoint, arm.config.Config.Entrypoint) || !equalConfigs(amd.config.Config.Env, arm.config.Config.Env) {
				t.Errorf("entrypoint and environment: amd64 %q %q, arm64 %q %q", amd.config.Config.Entrypoint, amd.config.Config.Env, arm.config.Config.Entrypoint, arm.config.Config.Env)
			}
			t.Logf("%d paths in each root", len(armList))
		})
	}
}

// listRoot walks an unpacked root and describes each path: "dir MODE",
// "file MODE", "elf MODE" or "link TARGET". Every ELF file must be a
// 64-bit one for machine, and every one with a program interpreter must
// name loader.
func listRoot(t *testing.T, root string, machine elf.Machine, loader string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == root {
			return err
		}
		rel := "/" + filepath.ToSlash(strings.TrimPrefix(p, root+"/"))
		fi, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			out[rel] = "link " + target
		case d.IsDir():
			out[rel] = fmt.Sprintf("dir %v", fi.Mode().Perm())
		case d.Type().IsRegular():
			isELF, err := elfMagic(p)
			if err != nil {
				return err
			}
			if !isELF {
				out[rel] = fmt.Sprintf("file %v", fi.Mode())
				return nil
			}
			out[rel] = fmt.Sprintf("elf %v", fi.Mode())
			f, err := elf.Open(p)
			if err != nil {
				t.Errorf("%s: %v", rel, err)
				return nil
			}
			defer f.Close()
			if f.Class != elf.ELFCLASS64 || f.Machine != machine {
				t.Errorf("%s: %v %v, want ELFCLASS64 %v", rel, f.Class, f.Machine, machine)
			}
			for _, prog := range f.Progs {
				if prog.Type == elf.PT_INTERP {
					raw, _ := io.ReadAll(prog.Open())
					if interp := string(bytes.TrimRight(raw, "\x00")); interp != loader {
						t.Errorf("%s: program interpreter %s, want %s", rel, interp, loader)
					}
				}
			}
		default:
			t.Errorf("%s: a %v", rel, d.Type())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// elfMagic reports whether the file begins with the ELF magic number.
func elfMagic(p string) (bool, error) {
	f, err := os.Open(p)
	if err != nil {
		return false, err
	}
	defer f.Close()
	var magic [4]byte
	if _, err := io.ReadFull(f, magic[:]); err != nil {
		return false, nil
	}
	return string(magic[:]) == elf.ELFMAG, nil
}

// wayTo lists the paths resolving p in root passes: each link on the way,
// the directories its targets lead through, and the file it ends at. A
// root without p (an image of static binaries alone) has none.
func wayTo(t *testing.T, root, p string) []string {
	t.Helper()
	var way []string
	var walk func(p string, depth int) bool
	walk = func(p string, depth int) bool {
		if depth > 40 {
			t.Fatalf("%s: a link loop", p)
		}
		cur := "/"
		for _, name := range strings.Split(strings.TrimPrefix(path.Clean(p), "/"), "/") {
			next := path.Join(cur, name)
			fi, err := os.Lstat(filepath.Join(root, next))
			if err != nil {
				return false
			}
			way = append(way, next)
			if fi.Mode()&fs.ModeSymlink == 0 {
				cur = next
				continue
			}
			target, err := os.Readlink(filepath.Join(root, next))
			if err != nil {
				t.Fatal(err)
			}
			if !path.IsAbs(target) {
				target = path.Join(cur, target)
			}
			if !walk(target, depth+1) {
				return false
			}
			cur = way[len(way)-1]
		}
		return true
	}
	if !walk(p, 0) {
		return nil
	}
	return way
}

func sortedKeys(a, b map[string]string) []string {
	var keys []string
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// equalConfigs compares two lists once amd64's triplet is arm64's.
func equalConfigs(amd, arm []string) bool {
	translated := make([]string, len(amd))
	for i, s := range amd {
		translated[i] = strings.ReplaceAll(s, amd64Triplet, arm64Triplet)
	}
	return slices.Equal(translated, arm)
}

// TestRegistryClientCopiesBothPlatforms copies every layout as the
// release workflow pushes it (skopeo copy --all oci:<layout>), into
// another layout rather than a registry, and reads the copy back: the
// copy is the same image index, of both platforms, and skopeo picks the
// arm64 image for an arm64 machine.
func TestRegistryClientCopiesBothPlatforms(t *testing.T) {
	out := builtTwice(t)[0].out
	for _, name := range imageNames() {
		want, err := layoutIndex(t, out, name).Digest()
		if err != nil {
			t.Fatal(err)
		}
		dst := "oci:" + filepath.Join(t.TempDir(), name) + ":copy"
		run := func(args ...string) string {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			b, err := exec.CommandContext(ctx, "skopeo", args...).CombinedOutput()
			if err != nil {
				t.Fatalf("skopeo %s: %v\n%s", strings.Join(args, " "), err, b)
			}
			return string(b)
		}
		run("copy", "--all", "oci:"+filepath.Join(out, name), dst)
		raw := run("inspect", "--raw", dst)
		got := v1.Hash{Algorithm: "sha256", Hex: fmt.Sprintf("%x", sha256.Sum256([]byte(raw)))}
		if got != want {
			t.Errorf("%s: the copy's index is %s, want %s:\n%s", name, got, want, raw)
		}
		var inspected struct{ Architecture string }
		if err := json.Unmarshal([]byte(run("inspect", "--override-arch", "arm64", dst)), &inspected); err != nil || inspected.Architecture != "arm64" {
			t.Errorf("%s: skopeo inspect for arm64: %+v, %v", name, inspected, err)
		}
	}
}
