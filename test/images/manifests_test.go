// SPDX-License-Identifier: Apache-2.0

package images_test

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/liken-sh/operators/internal/imageset"
)

// TestManifestsRunWhatTheImagesHold reads the DaemonSets of the kustomize
// bases: every image they name is one this repository builds, at the
// default tag; every program a container or an exec probe runs (its
// command, else the image's entrypoint) is an executable file in that
// image; and every volume mount has its directory in the image, so a
// read-only root needs nothing created.
func TestManifestsRunWhatTheImagesHold(t *testing.T) {
	unpackedImages := map[string]unpacked{}
	for _, manifest := range []string{"audio/operator.yaml", "bluetooth/operator.yaml", "inventory/driver.yaml"} {
		for _, ds := range daemonSets(t, filepath.Join(moduleRoot(t), "deploy", manifest)) {
			spec := ds.Spec.Template.Spec
			for _, c := range append(append([]corev1.Container(nil), spec.InitContainers...), spec.Containers...) {
				repo, tag, _ := strings.Cut(c.Image, ":")
				name := strings.TrimPrefix(repo, imageset.Repository+"/")
				if tag != imageset.DefaultTag || !slices.Contains(imageNames(), name) {
					t.Errorf("%s/%s: image %s is not one of %v at %s", ds.Name, c.Name, c.Image, imageNames(), imageset.DefaultTag)
					continue
				}
				img, ok := unpackedImages[name]
				if !ok {
					img = unpack(t, name)
					unpackedImages[name] = img
				}
				programs := []string{img.config.Config.Entrypoint[0]}
				if len(c.Command) > 0 {
					programs[0] = c.Command[0]
				}
				for _, p := range []*corev1.Probe{c.StartupProbe, c.LivenessProbe, c.ReadinessProbe} {
					if p != nil && p.Exec != nil {
						programs = append(programs, p.Exec.Command[0])
					}
				}
				for _, prog := range programs {
					if err := executable(img.root, prog); err != nil {
						t.Errorf("%s/%s runs %s: %v", ds.Name, c.Name, prog, err)
					}
				}
				for _, m := range c.VolumeMounts {
					if err := directory(img.root, m.MountPath); err != nil {
						t.Errorf("%s/%s mounts %s at %s: %v", ds.Name, c.Name, m.Name, m.MountPath, err)
					}
				}
			}
		}
	}
	if want := len(imageNames()) - len(imageset.CLIImages); len(unpackedImages) != want {
		t.Errorf("the manifests run %d of the %d images that are not plugins", len(unpackedImages), want)
	}
}

// daemonSets returns the DaemonSets in a multi-document manifest.
func daemonSets(t *testing.T, path string) []appsv1.DaemonSet {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out []appsv1.DaemonSet
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		var ds appsv1.DaemonSet
		if err := yaml.Unmarshal(doc, &ds); err != nil {
			t.Fatal(err)
		}
		if ds.Kind == "DaemonSet" {
			out = append(out, ds)
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s: no DaemonSet", path)
	}
	return out
}

// executable fails unless path is an executable regular file in the
// image rooted at root, links resolved inside the image.
func executable(root, path string) error {
	fi, err := statIn(root, path)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return errors.New("not an executable file: " + fi.Mode().String())
	}
	return nil
}

// directory fails unless path is a directory in the image.
func directory(root, path string) error {
	fi, err := statIn(root, path)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return errors.New("not a directory: " + fi.Mode().String())
	}
	return nil
}

// statIn stats path inside the image: os.Root resolves links within it
// and refuses any that lead out.
func statIn(root, path string) (os.FileInfo, error) {
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return r.Stat(strings.TrimPrefix(path, "/"))
}
