// SPDX-License-Identifier: Apache-2.0

// Package images_test is the proof of the images hack/build-images.sh
// builds: the command is run twice and every digest must repeat; every
// layer is unpacked with GNU tar, and every amd64 image's root filesystem
// runs under bubblewrap as its pod runs it (see each test); every arm64
// one, which this machine cannot run, must hold the amd64 one's files
// built for AArch64 (arm64_test.go). Every process gets a deadline.
package images_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/validate"

	"github.com/liken-sh/operators/internal/imageset"
)

// buildTimeout bounds one run of the build command, Go compilation
// included (a cold build cache compiles the Kubernetes client for two
// platforms, and the first run downloads the arm64 packages): it only
// tells a hung build from a slow one. A first build on two loaded cores
// took more than 10 minutes.
const buildTimeout = 20 * time.Minute

// build is one run of hack/build-images.sh.
type build struct {
	out string
	// printed maps each image's short name and platform ("linux/amd64",
	// "linux/arm64", or "index" for the image index) to the line the
	// command printed for it: reference, platform, digest, gzipped bytes,
	// seconds.
	printed map[string][]string
	elapsed time.Duration
}

var (
	scratch   string // removed by TestMain
	buildOnce sync.Once
	builds    [2]build
	buildErr  error
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "images-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	scratch = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// moduleRoot is the repository's root, two levels above this package.
func moduleRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// builtTwice runs the build command twice, into two directories, once
// per test binary. Both run in one snapshot of the sources, so that an
// edit made while the test runs cannot pass for a build that does not
// repeat.
func builtTwice(t *testing.T) [2]build {
	t.Helper()
	buildOnce.Do(func() {
		src := filepath.Join(scratch, "src")
		if buildErr = snapshot(moduleRoot(t), src); buildErr != nil {
			return
		}
		for i := range builds {
			builds[i], buildErr = runBuild(src, filepath.Join(scratch, fmt.Sprintf("build%d", i+1)))
			if buildErr != nil {
				return
			}
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builds
}

// snapshot copies the module at root, without its git directory and build
// output, to dst.
func snapshot(root, dst string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pack := exec.CommandContext(ctx, "tar", "--create", "--exclude=./.git", "--exclude=./_output", "--directory", root, ".")
	unpack := exec.CommandContext(ctx, "tar", "--extract", "--directory", dst)
	pipe, err := pack.StdoutPipe()
	if err != nil {
		return err
	}
	unpack.Stdin = pipe
	var stderr bytes.Buffer
	pack.Stderr, unpack.Stderr = &stderr, &stderr
	if err := unpack.Start(); err != nil {
		return err
	}
	if err := pack.Run(); err != nil {
		return fmt.Errorf("snapshot of %s: %v\n%s", root, err, stderr.String())
	}
	if err := unpack.Wait(); err != nil {
		return fmt.Errorf("snapshot of %s: %v\n%s", root, err, stderr.String())
	}
	return nil
}

func runBuild(root, out string) (build, error) {
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(root, "hack", "build-images.sh"), out)
	cmd.Dir = root
	// hack/test.sh has installed the packages already.
	cmd.Env = append(os.Environ(), "LIKEN_SKIP_DEPS=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	began := time.Now()
	if err := cmd.Run(); err != nil {
		return build{}, fmt.Errorf("hack/build-images.sh %s: %v\n%s%s", out, err, stdout.String(), stderr.String())
	}
	b := build{out: out, printed: map[string][]string{}, elapsed: time.Since(began)}
	sc := bufio.NewScanner(&stdout)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) != 5 {
			return build{}, fmt.Errorf("unexpected output line %q", sc.Text())
		}
		name := strings.TrimPrefix(strings.Split(fields[0], ":")[0], imageset.Repository+"/")
		b.printed[name+" "+fields[1]] = fields
	}
	return b, nil
}

// imageNames are the images, as the specs name them.
func imageNames() []string {
	var names []string
	for _, s := range imageset.Specs("bin", imageset.DefaultTag) {
		names = append(names, imageset.Name(s))
	}
	return names
}

// platforms are the images' platforms, each with its docker tarball's
// suffix and the configuration's architecture.
var platforms = []struct{ name, tarSuffix, arch string }{
	{"linux/amd64", ".tar", "amd64"},
	{"linux/arm64", "-arm64.tar", "arm64"},
}

// TestBuildIsReproducible builds every image twice and compares the
// digests the command printed (each platform's manifest and the index),
// the digests of the layouts and tarballs it wrote, and the tarballs byte
// for byte.
func TestBuildIsReproducible(t *testing.T) {
	b := builtTwice(t)
	for _, name := range imageNames() {
		for _, platform := range []string{"index", platforms[0].name, platforms[1].name} {
			first, second := b[0].printed[name+" "+platform], b[1].printed[name+" "+platform]
			if first == nil || second == nil {
				t.Fatalf("%s %s: the build printed no line for it (%v, %v)", name, platform, first, second)
			}
			if first[2] != second[2] {
				t.Errorf("%s %s: digest %s, then %s", name, platform, first[2], second[2])
			}
			t.Logf("%s %s: %s, layers %s bytes gzipped, built in %ss and %ss", name, platform, first[2], first[3], first[4], second[4])
		}
		for _, p := range platforms {
			one, err := os.ReadFile(filepath.Join(b[0].out, name+p.tarSuffix))
			if err != nil {
				t.Fatal(err)
			}
			two, err := os.ReadFile(filepath.Join(b[1].out, name+p.tarSuffix))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(one, two) {
				t.Errorf("%s: the two %s tarballs differ", name, p.name)
			}
		}
	}
	t.Logf("whole command (Go binaries included): %v, then %v", b[0].elapsed.Round(time.Millisecond), b[1].elapsed.Round(time.Millisecond))
}

// TestLayoutsAndTarballs reads every image back from its OCI layout and
// from its docker tarballs: the layout names one image index, with the
// digest the command printed, of one manifest per platform; the library's
// validation passes on the index and on each platform's image from the
// layout and from its tarball; each has the digest the command printed;
// and each configuration is its platform's, created at the epoch.
func TestLayoutsAndTarballs(t *testing.T) {
	b := builtTwice(t)[0]
	for _, name := range imageNames() {
		idx := layoutIndex(t, b.out, name)
		if digest, err := idx.Digest(); err != nil || digest.String() != b.printed[name+" index"][2] {
			t.Errorf("%s: index digest %s (%v), printed %s", name, digest, err, b.printed[name+" index"][2])
		}
		if err := validate.Index(idx); err != nil {
			t.Errorf("%s: index: %v", name, err)
		}
		for _, p := range platforms {
			img := layoutImage(t, b.out, name, p.arch)
			digest, err := img.Digest()
			if err != nil {
				t.Fatal(err)
			}
			if digest.String() != b.printed[name+" "+p.name][2] {
				t.Errorf("%s %s: layout digest %s, printed %s", name, p.name, digest, b.printed[name+" "+p.name][2])
			}
			tb, err := tarball.ImageFromPath(filepath.Join(b.out, name+p.tarSuffix), nil)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if err := validate.Image(tb); err != nil {
				t.Errorf("%s %s: tarball image: %v", name, p.name, err)
			}
			// A docker tarball holds no manifest (the reader makes up a
			// Docker one), so what must match is the configuration, which
			// is the image's ID, and the layer.
			if a, b := configAndLayers(t, img), configAndLayers(t, tb); !slices.Equal(a, b) {
				t.Errorf("%s %s: layout has config and layers %v, tarball %v", name, p.name, a, b)
			}
			cf, err := img.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			if cf.Architecture != p.arch || cf.OS != "linux" || !cf.Created.Time.Equal(time.Unix(0, 0)) || len(cf.Config.Entrypoint) != 1 {
				t.Errorf("%s: config %s/%s created %v entrypoint %q", name, cf.OS, cf.Architecture, cf.Created.Time, cf.Config.Entrypoint)
			}
		}
	}
}

// configAndLayers lists the digests of an image's configuration and of
// its layers.
func configAndLayers(t *testing.T, img v1.Image) []v1.Hash {
	t.Helper()
	config, err := img.ConfigName()
	if err != nil {
		t.Fatal(err)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	out := []v1.Hash{config}
	for _, l := range layers {
		d, err := l.Digest()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, d)
	}
	return out
}

// layoutIndex is the image index the OCI layout <out>/<name> holds: its
// index.json names exactly one, under the image's reference, which is
// what skopeo copy --all oci:<layout> pushes whole.
func layoutIndex(t *testing.T, out, name string) v1.ImageIndex {
	t.Helper()
	p, err := layout.FromPath(filepath.Join(out, name))
	if err != nil {
		t.Fatal(err)
	}
	top, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	m, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Manifests) != 1 || !m.Manifests[0].MediaType.IsIndex() {
		t.Fatalf("%s: index.json holds %v, want one image index", name, m.Manifests)
	}
	if got, want := m.Manifests[0].Annotations["org.opencontainers.image.ref.name"], imageset.Repository+"/"+name+":"+imageset.DefaultTag; got != want {
		t.Errorf("%s: ref.name %q, want %q", name, got, want)
	}
	idx, err := top.ImageIndex(m.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	return idx
}

// layoutImage is the linux/<arch> image of the layout <out>/<name>'s
// index, which holds one image per platform of platforms, in order.
func layoutImage(t *testing.T, out, name, arch string) v1.Image {
	t.Helper()
	idx := layoutIndex(t, out, name)
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	var img v1.Image
	for _, d := range m.Manifests {
		if d.Platform == nil {
			t.Fatalf("%s: manifest %s has no platform", name, d.Digest)
		}
		got = append(got, d.Platform.String())
		if d.Platform.OS == "linux" && d.Platform.Architecture == arch {
			if img, err = idx.Image(d.Digest); err != nil {
				t.Fatal(err)
			}
		}
	}
	if want := []string{platforms[0].name, platforms[1].name}; !slices.Equal(got, want) {
		t.Fatalf("%s: the index has platforms %v, want %v", name, got, want)
	}
	return img
}

// unpacked is an image's root filesystem, unpacked by GNU tar from the
// layer blob of its layout, and its configuration.
type unpacked struct {
	root   string
	config *v1.ConfigFile
}

// unpack extracts the amd64 image's single layer into a new directory
// with GNU tar, which fails on a damaged archive, as the library's
// validation does not.
func unpack(t *testing.T, name string) unpacked {
	t.Helper()
	return unpackArch(t, name, "amd64")
}

// unpackArch is unpack for the image of the platform linux/<arch>.
func unpackArch(t *testing.T, name, arch string) unpacked {
	t.Helper()
	out := builtTwice(t)[0].out
	img := layoutImage(t, out, name, arch)
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 1 {
		t.Fatalf("%s: %d layers, want 1", name, len(layers))
	}
	digest, err := layers[0].Digest()
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(t.TempDir(), "rootfs")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	blob := filepath.Join(out, name, "blobs", digest.Algorithm, digest.Hex)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if output, err := exec.CommandContext(ctx, "tar", "--extract", "--gzip", "--numeric-owner", "--file", blob, "--directory", root).CombinedOutput(); err != nil {
		t.Fatalf("%s: GNU tar: %v\n%s", name, err, output)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	// The images hold no shell; the probes and commands of deploy/*/operator.yaml name
	// binaries, and nothing may come to depend on one.
	for _, sh := range []string{"bin/sh", "usr/bin/sh", "bin/bash", "usr/bin/bash"} {
		if _, err := os.Lstat(filepath.Join(root, sh)); err == nil {
			t.Errorf("%s: the image has /%s", name, sh)
		}
	}
	return unpacked{root: root, config: cf}
}
