// SPDX-License-Identifier: Apache-2.0

package ocibuild

import (
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Options say where a build reads and writes.
type Options struct {
	// Root is the root filesystem files are taken from; empty means "/".
	Root string
	// Out receives <name>/ (an OCI image layout) and <name>.tar (a
	// docker-save tarball), where name is the last element of the
	// repository; both are replaced.
	Out string
	// Epoch is every file's modification time and the image's creation
	// time; the zero Time means the Unix epoch.
	Epoch time.Time
}

// Result describes a built image.
type Result struct {
	Ref    string
	Name   string  // the last element of the repository
	Digest v1.Hash // the manifest's digest
	// Layout and Tarball are the paths written.
	Layout, Tarball string
	// Entries is the number of paths in the layer; FileBytes the sum of
	// its files' sizes; LayerBytes and CompressedBytes the layer's tar
	// stream before and after gzip.
	Entries                                int
	FileBytes, LayerBytes, CompressedBytes int64
	Elapsed                                time.Duration
}

// Build assembles spec, writes its layer and image, and returns what it
// wrote. Two builds of the same spec from the same root and binaries
// give the same digest.
func Build(spec Spec, opts Options) (Result, error) {
	began := time.Now()
	ref, err := name.NewTag(spec.Ref, name.StrictValidation)
	if err != nil {
		return Result{}, fmt.Errorf("image %q: %w", spec.Ref, err)
	}
	img, res, cleanup, err := buildImage(spec, opts)
	defer cleanup()
	if err != nil {
		return Result{}, err
	}
	fail := func(err error) (Result, error) { return Result{}, fmt.Errorf("image %s: %w", res.Name, err) }
	res.Layout = filepath.Join(opts.Out, res.Name)
	lp, err := newLayout(res.Layout)
	if err != nil {
		return fail(err)
	}
	if err := lp.AppendImage(img, layout.WithAnnotations(refAnnotations(res.Ref))); err != nil {
		return fail(err)
	}
	res.Tarball = filepath.Join(opts.Out, res.Name+".tar")
	if err := tarball.WriteToFile(res.Tarball, ref, img); err != nil {
		return fail(err)
	}
	res.Elapsed = time.Since(began)
	return res, nil
}

// buildImage assembles spec from opts.Root, writes its gzipped layer to a
// temporary file in opts.Out and returns the image over it, with the
// Result's reference, name, digest and sizes filled in. cleanup removes
// the layer file; it is to be called, error or not, once the image has
// been written out.
func buildImage(spec Spec, opts Options) (img v1.Image, res Result, cleanup func(), err error) {
	cleanup = func() {}
	ref, err := name.NewTag(spec.Ref, name.StrictValidation)
	if err != nil {
		return nil, Result{}, cleanup, fmt.Errorf("image %q: %w", spec.Ref, err)
	}
	res = Result{Ref: ref.String(), Name: path.Base(ref.RepositoryStr())}
	fail := func(err error) (v1.Image, Result, func(), error) {
		return nil, Result{}, cleanup, fmt.Errorf("image %s (%s): %w", res.Name, spec.arch().Platform(), err)
	}
	if opts.Root == "" {
		opts.Root = "/"
	}
	epoch := opts.Epoch
	if epoch.IsZero() {
		epoch = time.Unix(0, 0)
	}
	epoch = epoch.UTC()
	contents, err := Assemble(spec, opts.Root)
	if err != nil {
		return fail(err)
	}
	res.Entries, res.FileBytes = len(contents.Paths()), contents.FileBytes()

	if err := os.MkdirAll(opts.Out, 0o755); err != nil {
		return fail(err)
	}
	gz, err := os.CreateTemp(opts.Out, "."+res.Name+"-layer-*.tar.gz")
	if err != nil {
		return fail(err)
	}
	cleanup = func() { os.Remove(gz.Name()) }
	res.LayerBytes, err = writeGzipLayer(gz, contents, epoch)
	if cerr := gz.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fail(err)
	}
	layer, err := tarball.LayerFromFile(gz.Name(), tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return fail(err)
	}
	if res.CompressedBytes, err = layer.Size(); err != nil {
		return fail(err)
	}
	if img, err = imageOf(spec, layer, epoch); err != nil {
		return fail(err)
	}
	if res.Digest, err = img.Digest(); err != nil {
		return fail(err)
	}
	return img, res, cleanup, nil
}

// newLayout replaces dir with an empty OCI image layout.
func newLayout(dir string) (layout.Path, error) {
	if err := os.RemoveAll(dir); err != nil {
		return "", err
	}
	return layout.Write(dir, empty.Index)
}

// refAnnotations name ref in a layout's index: the OCI annotation, and
// containerd's, which `ctr images import` reads.
func refAnnotations(ref string) map[string]string {
	return map[string]string{
		"org.opencontainers.image.ref.name": ref,
		"io.containerd.image.name":          ref,
	}
}

// writeGzipLayer writes the contents' tar stream gzipped to w and returns
// the stream's size before compression. The gzip header carries no name
// and no time.
func writeGzipLayer(w io.Writer, c *Contents, epoch time.Time) (int64, error) {
	zw := gzip.NewWriter(w)
	counter := &countingWriter{w: zw}
	if err := c.WriteTar(counter, epoch); err != nil {
		return 0, err
	}
	return counter.n, zw.Close()
}

// imageOf is the OCI image of one layer with spec's configuration.
func imageOf(spec Spec, layer v1.Layer, epoch time.Time) (v1.Image, error) {
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.Append(img, mutate.Addendum{
		Layer: layer,
		// Nothing here names the tag, so the same contents under another
		// tag keep their digest.
		History: v1.History{Created: v1.Time{Time: epoch}, CreatedBy: "github.com/liken-sh/operators internal/ocibuild"},
	})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS = spec.arch().Name, "linux"
	cf.Created = v1.Time{Time: epoch}
	cf.Config.Entrypoint = spec.Entrypoint
	cf.Config.Env = spec.Env
	cf.Config.Labels = spec.Labels
	return mutate.ConfigFile(img, cf)
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
