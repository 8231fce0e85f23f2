// Command build-images builds the images the deploy bases run (package imageset)
// from the build machine's installed packages and the Go binaries in -bin,
// and writes each as an OCI image layout (<out>/<name>/) and a
// docker-save tarball (<out>/<name>.tar), printing one line per image:
//
//	<reference> <digest> <layer bytes, gzipped> <seconds>
//
// hack/build-images.sh compiles the binaries and runs it; that script is
// the command a person uses. No container engine or registry is needed:
// `ctr -n k8s.io images import <name>.tar`, `kind load image-archive
// <name>.tar`, or any registry client pushing the layout, takes it from
// there.
//
// Usage:
//
//	build-images -bin DIR [-out DIR] [-tag TAG] [-version VERSION] [-root DIR] [-epoch SECONDS] [NAME...]
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
	"flag"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/liken-sh/operators/internal/imageset"
	"github.com/liken-sh/operators/internal/ocibuild"
)

func main() {
	bin := flag.String("bin", "", "directory holding the static binaries of "+fmt.Sprint(imageset.Commands)+" (required)")
	out := flag.String("out", "_output/images", "directory to write the layouts and tarballs into")
	tag := flag.String("tag", imageset.DefaultTag, "tag of every image")
	version := flag.String("version", "", "the release the binaries carry (hack/version.sh), as every image's org.opencontainers.image.version label; empty: none")
	root := flag.String("root", "/", "root filesystem to take PipeWire, BlueZ and the libraries from")
	epoch := flag.Int64("epoch", defaultEpoch(), "file and creation time, seconds since 1970 (default $SOURCE_DATE_EPOCH, else 0)")
	flag.Parse()
	if *bin == "" {
		fmt.Fprintln(os.Stderr, "build-images: -bin is required")
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*bin, *out, *tag, *version, *root, time.Unix(*epoch, 0), flag.Args()); err != nil {
		fmt.Fprintf(os.Stderr, "build-images: %v\n", err)
		os.Exit(1)
	}
}

func run(bin, out, tag, version, root string, epoch time.Time, only []string) error {
	specs := imageset.Specs(bin, tag)
	if version != "" {
		for i := range specs {
			specs[i].Labels = maps.Clone(specs[i].Labels)
			if specs[i].Labels == nil {
				specs[i].Labels = map[string]string{}
			}
			specs[i].Labels["org.opencontainers.image.version"] = version
		}
	}
	built := 0
	for _, spec := range specs {
		res, err := buildIfWanted(spec, only, ocibuild.Options{Root: root, Out: out, Epoch: epoch})
		if err != nil {
			return err
		}
		if res == nil {
			continue
		}
		built++
		fmt.Printf("%s %s %d %.1f\n", res.Ref, res.Digest, res.CompressedBytes, res.Elapsed.Seconds())
	}
	if built < len(only) || built == 0 {
		return fmt.Errorf("no image named %v among %d specs", only, len(specs))
	}
	return nil
}

// buildIfWanted builds spec when only is empty or names it.
func buildIfWanted(spec ocibuild.Spec, only []string, opts ocibuild.Options) (*ocibuild.Result, error) {
	if len(only) > 0 && !slices.ContainsFunc(only, func(n string) bool { return imageset.Name(spec) == n }) {
		return nil, nil
	}
	res, err := ocibuild.Build(spec, opts)
	if err != nil {
		return nil, err
	}
	return &res, nil
}

func defaultEpoch() int64 {
	if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return n
		}
	}
	return 0
}
