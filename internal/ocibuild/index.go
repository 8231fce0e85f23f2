// SPDX-License-Identifier: Apache-2.0

package ocibuild

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// Variant is one platform's build of an image: its spec, whose Arch
// names the platform, and the root filesystem its files come from.
type Variant struct {
	Spec Spec
	Root string
}

// IndexResult describes a multi-platform image.
type IndexResult struct {
	Ref    string
	Name   string
	Digest v1.Hash // the image index's digest
	Layout string
	// Images are the platforms' images in the order of the variants;
	// each Result's Tarball is that platform's docker-save tarball and
	// its Layout the index's layout, its Elapsed the time its contents
	// and layer took.
	Images  []Result
	Elapsed time.Duration
}

// BuildIndex builds every variant (each as Build would, from its own
// root) and writes them as one OCI image index, with each manifest's
// platform, in the layout <name>/: its index.json holds that image index
// under the reference, which is what a registry client pushing the layout
// (skopeo copy --all oci:<name> docker://...) copies whole. Docker-save
// tarballs hold one platform each: <name>.tar the first variant's (what
// `ctr images import` and kind load on the build machine), and
// <name>-<arch>.tar the others'. The variants share one Ref and differ in
// Arch; the same inputs give the same digests.
func BuildIndex(variants []Variant, opts Options) (IndexResult, error) {
	began := time.Now()
	if len(variants) == 0 {
		return IndexResult{}, errors.New("no variant to build")
	}
	ref, err := name.NewTag(variants[0].Spec.Ref, name.StrictValidation)
	if err != nil {
		return IndexResult{}, fmt.Errorf("image %q: %w", variants[0].Spec.Ref, err)
	}
	seen := map[string]bool{}
	for _, v := range variants {
		if v.Spec.Ref != variants[0].Spec.Ref {
			return IndexResult{}, fmt.Errorf("image %q: a variant is named %q", variants[0].Spec.Ref, v.Spec.Ref)
		}
		a := v.Spec.arch().Name
		if seen[a] {
			return IndexResult{}, fmt.Errorf("image %q: two variants for %s", v.Spec.Ref, a)
		}
		seen[a] = true
	}

	var (
		res  IndexResult
		imgs []v1.Image
	)
	for _, v := range variants {
		o := opts
		o.Root = v.Root
		t0 := time.Now()
		img, r, cleanup, err := buildImage(v.Spec, o)
		defer cleanup() //nolint:gocritic // every variant's files are read until the index is written
		if err != nil {
			return IndexResult{}, err
		}
		r.Elapsed = time.Since(t0) // assembly and layer; the tarball is written below
		imgs = append(imgs, img)
		res.Images = append(res.Images, r)
	}
	res.Ref, res.Name = res.Images[0].Ref, res.Images[0].Name
	fail := func(err error) (IndexResult, error) { return IndexResult{}, fmt.Errorf("image %s: %w", res.Name, err) }

	adds := make([]mutate.IndexAddendum, len(imgs))
	for i, img := range imgs {
		d, err := plainDescriptor(img, variants[i].Spec.arch())
		if err != nil {
			return fail(err)
		}
		adds[i] = mutate.IndexAddendum{Add: d}
	}
	idx := mutate.AppendManifests(empty.Index, adds...)
	if res.Digest, err = idx.Digest(); err != nil {
		return fail(err)
	}
	res.Layout = filepath.Join(opts.Out, res.Name)
	lp, err := newLayout(res.Layout)
	if err != nil {
		return fail(err)
	}
	if err := lp.AppendIndex(idx, layout.WithAnnotations(refAnnotations(res.Ref))); err != nil {
		return fail(err)
	}
	for i, img := range imgs {
		tar := res.Name + ".tar"
		if i > 0 {
			tar = res.Name + "-" + variants[i].Spec.arch().Name + ".tar"
		}
		res.Images[i].Layout = res.Layout
		res.Images[i].Tarball = filepath.Join(opts.Out, tar)
		if err := tarball.WriteToFile(res.Images[i].Tarball, ref, img); err != nil {
			return fail(err)
		}
	}
	res.Elapsed = time.Since(began)
	return res, nil
}

// described is an image with the descriptor its index entry carries.
// The library would give an image's entry an artifactType (its config's
// media type); the OCI image spec (image-index.md) keeps that field for
// artifacts, and registry clients that predate it (skopeo 1.9, Debian
// 12's) rewrite an index holding it on copy, so a pushed index would not
// have the digest the build printed. partial.Descriptor takes this
// descriptor as it is.
type described struct {
	v1.Image
	desc v1.Descriptor
}

func (d described) Descriptor() (*v1.Descriptor, error) { return &d.desc, nil }

// plainDescriptor wraps img with its descriptor for arch's platform:
// media type, size, digest and platform, nothing else.
func plainDescriptor(img v1.Image, arch Arch) (described, error) {
	d := described{Image: img, desc: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: arch.Name}}}
	var err error
	if d.desc.MediaType, err = img.MediaType(); err != nil {
		return d, err
	}
	if d.desc.Size, err = img.Size(); err != nil {
		return d, err
	}
	d.desc.Digest, err = img.Digest()
	return d, err
}
