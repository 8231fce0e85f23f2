// SPDX-License-Identifier: Apache-2.0

package ocibuild

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// tree lays out a root filesystem: entries are "path" (a file with its
// path as content), "path/" (a directory) or "path -> target" (a link).
func tree(t *testing.T, entries ...string) string {
	t.Helper()
	root := t.TempDir()
	for _, e := range entries {
		p := filepath.Join(root, strings.Fields(e)[0])
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		switch {
		case strings.Contains(e, " -> "):
			err = os.Symlink(strings.Split(e, " -> ")[1], p)
		case strings.HasSuffix(e, "/"):
			err = os.MkdirAll(p, 0o755)
		default:
			err = os.WriteFile(p, []byte(e), 0o755)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func kinds(c *Contents) map[string]string {
	out := map[string]string{}
	for _, p := range c.Paths() {
		e := c.entries[p]
		out[p] = [...]string{"dir", "file", "link " + e.target}[e.kind]
	}
	return out
}

// A path through links brings every link on the way and its target, as a
// merged-/usr root has them.
func TestPathsKeepTheLinksOnTheirWay(t *testing.T) {
	root := tree(t, "usr/bin/tool", "usr/bin/alias -> tool", "bin -> usr/bin", "usr/lib/x/", "lib -> usr/lib")
	c, err := Assemble(Spec{Paths: []string{"/bin/alias"}}, root)
	if err != nil {
		t.Fatal(err)
	}
	got := kinds(c)
	want := map[string]string{"/bin": "link usr/bin", "/usr": "dir", "/usr/bin": "dir", "/usr/bin/alias": "link tool", "/usr/bin/tool": "file"}
	if !mapsEqual(got, want) {
		t.Fatalf("contents %v, want %v", got, want)
	}
	if data, err := c.ReadFile("/bin/alias"); err != nil || string(data) != "usr/bin/tool" {
		t.Fatalf("ReadFile through the links: %q, %v", data, err)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestTreeOnly(t *testing.T) {
	root := tree(t, "plugins/a/one.so", "plugins/a/two.so", "plugins/b/three.so", "plugins/c.so", "plugins/empty/")
	c, err := Assemble(Spec{Trees: []Tree{{Path: "/plugins", Only: []string{"a", "c.*"}}}}, root)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/plugins", "/plugins/a", "/plugins/a/one.so", "/plugins/a/two.so", "/plugins/c.so"}
	if got := c.Paths(); !slices.Equal(got, want) {
		t.Fatalf("paths %v, want %v", got, want)
	}
	c, err = Assemble(Spec{Trees: []Tree{{Path: "/plugins"}}}, root)
	if err != nil || !c.Has("/plugins/empty") || !c.Has("/plugins/b/three.so") {
		t.Fatalf("whole tree: %v, %v", c.Paths(), err)
	}
	_, err = Assemble(Spec{Trees: []Tree{{Path: "/plugins", Only: []string{"a", "missing.so"}}}}, root)
	if err == nil || !strings.Contains(err.Error(), `nothing matches "missing.so"`) {
		t.Fatalf("a pattern matching nothing: %v", err)
	}
}

func TestConflictsAndModesAreErrors(t *testing.T) {
	root := tree(t, "etc/passwd", "run -> var/run")
	for name, spec := range map[string]Spec{
		"generated over the root's file": {Files: []File{{Path: "/etc/passwd", Content: []byte("x"), Mode: 0o644}}, Paths: []string{"/etc/passwd"}},
		"directory where the root links": {Dirs: []Dir{{Path: "/run", Mode: 0o755}}, Paths: []string{"/run"}},
		"sticky written as 0o1777":       {Dirs: []Dir{{Path: "/tmp", Mode: 0o1777}}},
		"relative path":                  {Files: []File{{Path: "etc/x", Mode: 0o644}}},
		"file under a file":              {Files: []File{{Path: "/a", Mode: 0o644}, {Path: "/a/b", Mode: 0o644}}},
	} {
		if _, err := Assemble(spec, root); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	// The same content twice is one entry.
	if _, err := Assemble(Spec{Paths: []string{"/etc/passwd", "/etc/passwd"}}, root); err != nil {
		t.Errorf("the same path twice: %v", err)
	}
}

// The closure of a real program is what the system's own dynamic loader
// resolves for it (ld.so --list, which maps the libraries and runs none of
// the program's code), and the interpreter comes with the links that lead
// to it.
func TestClosureMatchesTheLoader(t *testing.T) {
	for _, prog := range []string{"/usr/bin/dbus-daemon", "/usr/bin/pw-cat"} {
		c, err := Assemble(Spec{Paths: []string{prog}}, "/")
		if err != nil {
			t.Fatal(err)
		}
		for _, lib := range loaderList(t, prog) {
			if !c.Has(lib) {
				t.Errorf("%s: the loader maps %s, which the image lacks", prog, lib)
			}
		}
		for _, p := range []string{"/lib64", "/lib64/ld-linux-x86-64.so.2", "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"} {
			if !c.Has(p) {
				t.Errorf("%s: no %s", prog, p)
			}
		}
	}
}

// loaderList returns the real paths of the libraries the dynamic loader
// maps for prog.
func loaderList(t *testing.T, prog string) []string {
	t.Helper()
	out, err := exec.Command("/lib64/ld-linux-x86-64.so.2", "--list", prog).Output()
	if err != nil {
		t.Fatalf("ld.so --list %s: %v", prog, err)
	}
	var libs []string
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) >= 3 && f[1] == "=>" && strings.HasPrefix(f[2], "/") {
			libs = append(libs, f[2])
		}
	}
	if len(libs) < 2 {
		t.Fatalf("ld.so --list %s printed %q", prog, out)
	}
	return libs
}

func TestMissingLibraryIsAnError(t *testing.T) {
	root := t.TempDir()
	data, err := os.ReadFile("/usr/bin/dbus-daemon")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "usr/bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "usr/bin/dbus-daemon"), data, 0o755); err != nil {
		t.Fatal(err)
	}
	_, err = Assemble(Spec{Paths: []string{"/usr/bin/dbus-daemon"}}, root)
	if err == nil || !strings.Contains(err.Error(), "/usr/bin/dbus-daemon: program interpreter") {
		t.Fatalf("an ELF file without its interpreter: %v", err)
	}
}

// Two builds give the same digest, and the layer is a complete tar
// stream of sorted entries owned by 0:0 at the epoch.
func TestBuildIsReproducible(t *testing.T) {
	root := tree(t, "usr/bin/tool", "bin -> usr/bin", "usr/share/data/b", "usr/share/data/a")
	spec := Spec{
		Ref:        "example.com/test/tool:v1",
		Paths:      []string{"/bin/tool"},
		Trees:      []Tree{{Path: "/usr/share/data"}},
		Files:      []File{{Path: "/etc/passwd", Content: []byte("root:x:0:0::/:/x\n"), Mode: 0o644}},
		Dirs:       []Dir{{Path: "/tmp", Mode: fs.ModeSticky | 0o777}},
		Entrypoint: []string{"/bin/tool"},
		Env:        []string{"PATH=/bin"},
	}
	var digests []string
	var layer string
	for i := range 2 {
		out := filepath.Join(t.TempDir(), "out")
		res, err := Build(spec, Options{Root: root, Out: out})
		if err != nil {
			t.Fatal(err)
		}
		if res.Name != "tool" || res.Tarball != filepath.Join(out, "tool.tar") {
			t.Fatalf("result %+v", res)
		}
		digests = append(digests, res.Digest.String())
		if i == 0 {
			layer = layerBlob(t, res.Layout)
		}
	}
	if digests[0] != digests[1] {
		t.Fatalf("digests %v", digests)
	}
	// The tag is not part of the image: retagged, the digest stays.
	retagged := spec
	retagged.Ref = "example.com/test/tool:v2"
	if res, err := Build(retagged, Options{Root: root, Out: t.TempDir()}); err != nil || res.Digest.String() != digests[0] {
		t.Fatalf("under another tag: %v (%v), want %s", res.Digest, err, digests[0])
	}
	f, err := os.Open(layer)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	var names []string
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, hdr.Name)
		if hdr.Uid != 0 || hdr.Gid != 0 || hdr.Uname != "" || hdr.Gname != "" || !hdr.ModTime.Equal(time.Unix(0, 0)) {
			t.Errorf("%s: owner %d:%d %q:%q time %v", hdr.Name, hdr.Uid, hdr.Gid, hdr.Uname, hdr.Gname, hdr.ModTime)
		}
		if hdr.Name == "tmp/" && hdr.Mode != 0o1777 {
			t.Errorf("tmp/ mode %o, want 1777", hdr.Mode)
		}
	}
	want := []string{"bin", "etc/", "etc/passwd", "tmp/", "usr/", "usr/bin/", "usr/bin/tool", "usr/share/", "usr/share/data/", "usr/share/data/a", "usr/share/data/b"}
	if !slices.Equal(names, want) {
		t.Fatalf("entries %v, want %v", names, want)
	}
}

// layerBlob is the path of the only layer of the only image in a layout.
func layerBlob(t *testing.T, dir string) string {
	t.Helper()
	p, err := layout.FromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	img, err := idx.Image(m.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers %v, %v", layers, err)
	}
	d, err := layers[0].Digest()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "blobs", d.Algorithm, d.Hex)
}
