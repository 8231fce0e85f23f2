// SPDX-License-Identifier: Apache-2.0

package ocibuild

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// ForArch renames the triplet in every image path and the loader, and
// leaves the sources of Add and the generated content alone.
func TestForArchTranslatesPaths(t *testing.T) {
	spec := Spec{
		Paths:      []string{"/usr/bin/tool", "/lib64/ld-linux-x86-64.so.2"},
		Trees:      []Tree{{Path: "/usr/lib/x86_64-linux-gnu/plugins", Only: []string{"x86_64-linux-gnu/a.so"}}},
		Add:        []Add{{Src: "/build/x86_64-linux-gnu/bin", Path: "/usr/lib/x86_64-linux-gnu/bin", Mode: 0o755}},
		Files:      []File{{Path: "/etc/x86_64-linux-gnu.conf", Content: []byte("x86_64-linux-gnu"), Mode: 0o644}},
		Dirs:       []Dir{{Path: "/usr/lib/x86_64-linux-gnu/empty", Mode: 0o755}},
		Symlinks:   []Symlink{{Path: "/usr/lib/x86_64-linux-gnu/l", Target: "/usr/lib/x86_64-linux-gnu/bin"}},
		Entrypoint: []string{"/usr/lib/x86_64-linux-gnu/bin"},
		Env:        []string{"LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/extra"},
	}
	got := spec.ForArch(ARM64)
	want := Spec{
		Arch:       ARM64,
		Paths:      []string{"/usr/bin/tool", "/lib/ld-linux-aarch64.so.1"},
		Trees:      []Tree{{Path: "/usr/lib/aarch64-linux-gnu/plugins", Only: []string{"aarch64-linux-gnu/a.so"}}},
		Add:        []Add{{Src: "/build/x86_64-linux-gnu/bin", Path: "/usr/lib/aarch64-linux-gnu/bin", Mode: 0o755}},
		Files:      []File{{Path: "/etc/aarch64-linux-gnu.conf", Content: []byte("x86_64-linux-gnu"), Mode: 0o644}},
		Dirs:       []Dir{{Path: "/usr/lib/aarch64-linux-gnu/empty", Mode: 0o755}},
		Symlinks:   []Symlink{{Path: "/usr/lib/aarch64-linux-gnu/l", Target: "/usr/lib/aarch64-linux-gnu/bin"}},
		Entrypoint: []string{"/usr/lib/aarch64-linux-gnu/bin"},
		Env:        []string{"LD_LIBRARY_PATH=/usr/lib/aarch64-linux-gnu/extra"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("ForArch(ARM64) (-want +got):\n%s", diff)
	}
	if spec.Paths[1] != AMD64.Loader {
		t.Fatal("ForArch changed its receiver's slices")
	}
}

// An ELF file for another machine than the spec's is an error naming both.
func TestClosureIsForTheSpecsMachine(t *testing.T) {
	data, err := os.ReadFile("/usr/bin/dbus-daemon")
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "usr/bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "usr/bin/dbus-daemon"), data, 0o755); err != nil {
		t.Fatal(err)
	}
	_, err = Assemble(Spec{Arch: ARM64, Paths: []string{"/usr/bin/dbus-daemon"}}, root)
	if err == nil || !strings.Contains(err.Error(), "EM_X86_64, not a 64-bit EM_AARCH64 ELF file (arm64)") {
		t.Fatalf("an x86-64 program in an arm64 image: %v", err)
	}
}

// BuildIndex writes one layout whose index.json names one image index of
// both platforms' manifests, and one docker tarball per platform; the
// files the root held are RootFiles, the generated ones not.
func TestBuildIndex(t *testing.T) {
	amdRoot := tree(t, "usr/lib/x86_64-linux-gnu/data")
	armRoot := tree(t, "usr/lib/aarch64-linux-gnu/data")
	spec := Spec{
		Ref:        "example.com/test/tool:v1",
		Paths:      []string{"/usr/lib/x86_64-linux-gnu/data"},
		Files:      []File{{Path: "/etc/motd", Content: []byte("hi\n"), Mode: 0o644}},
		Entrypoint: []string{"/usr/lib/x86_64-linux-gnu/data"},
	}
	c, err := Assemble(spec, amdRoot)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.RootFiles(); !slices.Equal(got, []string{"/usr/lib/x86_64-linux-gnu/data"}) {
		t.Fatalf("RootFiles %v", got)
	}
	variants := []Variant{{Spec: spec, Root: amdRoot}, {Spec: spec.ForArch(ARM64), Root: armRoot}}
	out := t.TempDir()
	res, err := BuildIndex(variants, Options{Out: out})
	if err != nil {
		t.Fatal(err)
	}
	again, err := BuildIndex(variants, Options{Out: t.TempDir()})
	if err != nil || again.Digest != res.Digest {
		t.Fatalf("second build: %v (%v), want %v", again.Digest, err, res.Digest)
	}

	p, err := layout.FromPath(res.Layout)
	if err != nil {
		t.Fatal(err)
	}
	top, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	tm, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(tm.Manifests) != 1 || !tm.Manifests[0].MediaType.IsIndex() || tm.Manifests[0].Digest != res.Digest ||
		tm.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != "example.com/test/tool:v1" {
		t.Fatalf("index.json %+v, want the index %v named by its reference", tm.Manifests, res.Digest)
	}
	idx, err := top.ImageIndex(res.Digest)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	for i, arch := range []string{"amd64", "arm64"} {
		d := im.Manifests[i]
		if d.Platform == nil || d.Platform.String() != "linux/"+arch || d.Digest != res.Images[i].Digest {
			t.Fatalf("manifest %d: %+v, want linux/%s %v", i, d, arch, res.Images[i].Digest)
		}
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil || cf.Architecture != arch {
			t.Fatalf("%s config: %+v, %v", arch, cf, err)
		}
		want := []string{"tool.tar", "tool-arm64.tar"}[i]
		if res.Images[i].Tarball != filepath.Join(out, want) {
			t.Fatalf("%s tarball %s, want %s", arch, res.Images[i].Tarball, want)
		}
		tb, err := tarball.ImageFromPath(res.Images[i].Tarball, nil)
		if err != nil {
			t.Fatal(err)
		}
		if id, _ := tb.ConfigName(); id != mustConfigName(t, img) {
			t.Fatalf("%s tarball holds config %v", arch, id)
		}
	}

	for name, vs := range map[string][]Variant{
		"none":               nil,
		"the same platform":  {variants[0], variants[0]},
		"different names":    {variants[0], {Spec: Spec{Ref: "example.com/test/other:v1", Arch: ARM64}, Root: armRoot}},
		"an amd64 file root": {variants[0], {Spec: variants[1].Spec, Root: amdRoot}},
	} {
		if _, err := BuildIndex(vs, Options{Out: t.TempDir()}); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func mustConfigName(t *testing.T, img v1.Image) v1.Hash {
	t.Helper()
	h, err := img.ConfigName()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// The index's entries carry media type, size, digest and platform only:
// no artifactType, which registry clients predating it rewrite.
func TestIndexEntriesArePlain(t *testing.T) {
	root := tree(t, "usr/share/x")
	spec := Spec{Ref: "example.com/test/x:v1", Paths: []string{"/usr/share/x"}}
	res, err := BuildIndex([]Variant{{Spec: spec, Root: root}, {Spec: spec.ForArch(ARM64), Root: root}}, Options{Out: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(res.Layout, "blobs", "sha256", res.Digest.Hex))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), "artifactType") || strings.Count(string(raw), `"platform"`) != 2 {
		t.Fatalf("index %s", raw)
	}
}
