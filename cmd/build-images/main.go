// SPDX-License-Identifier: Apache-2.0

// Command build-images builds the images the deploy bases run (package imageset)
// from the build machine's installed packages and the Go binaries in -bin,
// for linux/amd64, and with -arm64-bin for linux/arm64 too, from the
// arm64 builds of the same Debian packages at the same versions (package
// debroot; cached under -arm64-cache). Each image is written as an OCI
// image layout (<out>/<name>/) whose index.json names one image index
// holding every platform's manifest, and as docker-save tarballs of one
// platform each (<out>/<name>.tar for amd64, <out>/<name>-arm64.tar),
// printing a line per platform and one for the index:
//
//	<reference> linux/<arch> <manifest digest> <layer bytes, gzipped> <seconds>
//	<reference> index <index digest> <layer bytes of all platforms> <seconds>
//
// hack/build-images.sh compiles the binaries and runs it; that script is
// the command a person uses. No container engine or registry is needed:
// `ctr -n k8s.io images import <name>.tar`, `kind load image-archive
// <name>.tar`, or any registry client pushing the layout, takes it from
// there.
//
// Usage:
//
//	build-images -bin DIR [-arm64-bin DIR [-arm64-cache DIR]] [-out DIR] [-tag TAG] [-version VERSION] [-root DIR] [-epoch SECONDS] [NAME...]
//
// VERSION (hack/version.sh's, which hack/build-images.sh also stamps into
// the binaries as main.version) becomes every image's
// org.opencontainers.image.version label.
//
// NAMEs limit the build to those images (e.g. audio-operator). The epoch
// (default $SOURCE_DATE_EPOCH, else 0) is every file's time and the
// images' creation time.
package main

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/liken-sh/operators/internal/debroot"
	"github.com/liken-sh/operators/internal/imageset"
	"github.com/liken-sh/operators/internal/ocibuild"
)

// config is what the flags say.
type config struct {
	bin, arm64Bin, arm64Cache, out, tag, version, root string
	epoch                                              time.Time
	only                                               []string
}

func main() {
	var c config
	flag.StringVar(&c.bin, "bin", "", "directory holding the static linux/amd64 binaries of "+fmt.Sprint(imageset.Commands)+" (required)")
	flag.StringVar(&c.arm64Bin, "arm64-bin", "", "directory holding their linux/arm64 builds; empty: amd64 images only")
	flag.StringVar(&c.arm64Cache, "arm64-cache", defaultCache(), "directory keeping the arm64 packages and the root unpacked from them")
	flag.StringVar(&c.out, "out", "_output/images", "directory to write the layouts and tarballs into")
	flag.StringVar(&c.tag, "tag", imageset.DefaultTag, "tag of every image")
	flag.StringVar(&c.version, "version", "", "the release the binaries carry (hack/version.sh), as every image's org.opencontainers.image.version label; empty: none")
	flag.StringVar(&c.root, "root", "/", "root filesystem to take PipeWire, BlueZ and the libraries from (amd64)")
	epoch := flag.Int64("epoch", defaultEpoch(), "file and creation time, seconds since 1970 (default $SOURCE_DATE_EPOCH, else 0)")
	flag.Parse()
	if c.bin == "" {
		fmt.Fprintln(os.Stderr, "build-images: -bin is required")
		flag.Usage()
		os.Exit(2)
	}
	c.epoch, c.only = time.Unix(*epoch, 0), flag.Args()
	if err := run(context.Background(), c); err != nil {
		fmt.Fprintf(os.Stderr, "build-images: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, c config) error {
	specs, err := wanted(imageset.Specs(c.bin, c.tag), c)
	if err != nil {
		return err
	}
	variants := make([][]ocibuild.Variant, len(specs))
	for i, s := range specs {
		variants[i] = []ocibuild.Variant{{Spec: s, Root: c.root}}
	}
	if c.arm64Bin != "" {
		arm, err := wanted(imageset.Specs(c.arm64Bin, c.tag), c)
		if err != nil {
			return err
		}
		root, err := arm64Root(ctx, specs, c)
		if err != nil {
			return err
		}
		for i := range variants {
			variants[i] = append(variants[i], ocibuild.Variant{Spec: arm[i].ForArch(ocibuild.ARM64), Root: root})
		}
	}
	for _, v := range variants {
		res, err := ocibuild.BuildIndex(v, ocibuild.Options{Out: c.out, Epoch: c.epoch})
		if err != nil {
			return err
		}
		var bytes int64
		for i, img := range res.Images {
			bytes += img.CompressedBytes
			fmt.Printf("%s %s %s %d %.1f\n", res.Ref, v[i].Spec.Arch.Platform(), img.Digest, img.CompressedBytes, img.Elapsed.Seconds())
		}
		fmt.Printf("%s index %s %d %.1f\n", res.Ref, res.Digest, bytes, res.Elapsed.Seconds())
	}
	return nil
}

// wanted returns the specs c.only names (all when it names none), each
// labelled with c.version, and AMD64 as its Arch.
func wanted(specs []ocibuild.Spec, c config) ([]ocibuild.Spec, error) {
	var out []ocibuild.Spec
	for _, s := range specs {
		if len(c.only) > 0 && !slices.Contains(c.only, imageset.Name(s)) {
			continue
		}
		if c.version != "" {
			s.Labels = maps.Clone(s.Labels)
			if s.Labels == nil {
				s.Labels = map[string]string{}
			}
			s.Labels["org.opencontainers.image.version"] = c.version
		}
		out = append(out, s.ForArch(ocibuild.AMD64))
	}
	if len(out) < len(c.only) || len(out) == 0 {
		return nil, fmt.Errorf("no image named %v among %d specs", c.only, len(specs))
	}
	return out, nil
}

// arm64Root is the arm64 root filesystem holding the packages that own
// the files the amd64 images take from this machine. The arm64 images'
// file lists are then the amd64 ones with the multiarch triplet and the
// loader renamed (test/images checks it).
func arm64Root(ctx context.Context, specs []ocibuild.Spec, c config) (string, error) {
	if c.root != "/" {
		return "", fmt.Errorf("-arm64-bin needs -root /: the arm64 packages are those this machine's dpkg database names for the files")
	}
	began := time.Now()
	var files []string
	for _, s := range specs {
		contents, err := ocibuild.Assemble(s, c.root)
		if err != nil {
			return "", fmt.Errorf("image %s: %w", imageset.Name(s), err)
		}
		files = append(files, contents.RootFiles()...)
	}
	slices.Sort(files)
	logf := func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }
	root, pkgs, err := debroot.Root(ctx, slices.Compact(files), debroot.Options{Arch: "arm64", Cache: c.arm64Cache, Logf: logf})
	if err != nil {
		return "", err
	}
	logf("build-images: arm64 root %s: %d packages, %.1fs", root, len(pkgs), time.Since(began).Seconds())
	return root, nil
}

// defaultCache is ~/.cache/liken/arm64-root (under $XDG_CACHE_HOME when
// set).
func defaultCache() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "liken", "arm64-root")
}

func defaultEpoch() int64 {
	if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return n
		}
	}
	return 0
}
