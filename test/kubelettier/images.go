// SPDX-License-Identifier: Apache-2.0

package kubelettier

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/liken-sh/operators/internal/imageset"
	"github.com/liken-sh/operators/internal/ocibuild"
	"github.com/liken-sh/operators/test/node"
)

// The tier's own images: the pod sandbox, the consumers, and the two
// stand-ins for what this kernel lacks (a Bluetooth stack for bluetoothd,
// AF_BLUETOOTH for bondfetch). They live in a repository no registry
// serves, so nothing could ever pull them by mistake.
const (
	Repository   = "liken.test"
	Tag          = "tier"
	ConsumerRef  = Repository + "/consumer:" + Tag
	BluezSimRef  = Repository + "/bluetoothd-bluezsim:" + Tag
	BondfetchRef = Repository + "/bluetooth-bondfetch-hcisim:" + Tag
)

// pythonStdlib is Python's standard library.
const pythonStdlib = "/usr/lib/python3.11"

// pythonUnused are the entries of pythonStdlib that only building,
// testing or a desktop uses: libpython's static archives and build files
// (config-3.11-*, a quarter of the tree, for linking extensions), the
// test suite, IDLE and Tk, lib2to3, pydoc's topics, ensurepip. Leaving
// them out of the simulator's image saves most of its build time.
var pythonUnused = []string{"config-3.11-*", "test", "idlelib", "tkinter", "turtledemo", "lib2to3", "pydoc_data", "ensurepip"}

// pythonTrees are python3 and the modules the BlueZ simulator imports
// (dbus-python, PyGObject, python-dbusmock) with the GObject typelibs
// PyGObject loads. The standard library is listed entry by entry without
// pythonUnused; if it cannot be read here the build fails on it anyway.
func pythonTrees() []ocibuild.Tree {
	stdlib := ocibuild.Tree{Path: pythonStdlib}
	if entries, err := os.ReadDir(pythonStdlib); err == nil {
		for _, e := range entries {
			if !slices.ContainsFunc(pythonUnused, func(p string) bool { ok, _ := path.Match(p, e.Name()); return ok }) {
				stdlib.Only = append(stdlib.Only, e.Name())
			}
		}
	}
	return []ocibuild.Tree{
		stdlib,
		{Path: "/usr/lib/python3/dist-packages", Only: []string{
			"dbus", "gi", "dbusmock", "_dbus_bindings.*.so", "_dbus_glib_bindings.*.so",
		}},
		{Path: "/usr/lib/x86_64-linux-gnu/girepository-1.0"},
	}
}

// builds are the Go commands the tier's images carry: image binary name,
// package, build tags.
var builds = []struct{ name, pkg, tags string }{
	{"pause", "./test/kubelettier/cmd/pause", ""},
	{"bluetoothd", "./cmd/bluetoothd", ""},
	{"consumer", "./test/kubelettier/cmd/consumer", ""},
	{"bluezsim-daemon", "./test/bluezsim/cmd/bluezsim-daemon", ""},
	{"bluetooth-bondfetch", "./cmd/bluetooth-bondfetch", "hcisim"},
}

// TierSpecs are the tier's images; bin holds the binaries of builds.
func TierSpecs(bin string) []ocibuild.Spec {
	pause := ocibuild.Spec{
		Ref:        node.PauseImage,
		Add:        []ocibuild.Add{{Src: filepath.Join(bin, "pause"), Path: "/pause", Mode: 0o755}},
		Entrypoint: []string{"/pause"},
	}
	// The consumer has the audio image's PipeWire client side (pw-cat and
	// the modules a client loads) and the consumer binary.
	consumer := imageset.AudioOperator(bin, Tag)
	consumer.Ref = ConsumerRef
	consumer.Add = []ocibuild.Add{{Src: filepath.Join(bin, "consumer"), Path: "/usr/local/bin/consumer", Mode: 0o755}}
	consumer.Entrypoint = []string{"/usr/local/bin/consumer"}
	consumer.Checks = nil

	// bluetoothd's image, its entrypoint and bus unchanged, with the
	// simulator beside bluetoothd.
	sim := imageset.Bluetoothd(bin, Tag)
	sim.Ref = BluezSimRef
	sim.Paths = append(sim.Paths, "/usr/bin/python3")
	sim.Trees = append(sim.Trees, pythonTrees()...)
	sim.Add = append(sim.Add, ocibuild.Add{Src: filepath.Join(bin, "bluezsim-daemon"), Path: "/usr/local/bin/bluezsim-daemon", Mode: 0o755})

	bondfetch := imageset.BluetoothBondfetch(bin, Tag)
	bondfetch.Ref = BondfetchRef
	return []ocibuild.Spec{pause, consumer, sim, bondfetch}
}

// BuildTierImages compiles the tier's commands (static, -trimpath) into
// out/bin and builds TierSpecs into out, returning the docker-save
// tarballs. root is the module root.
func BuildTierImages(ctx context.Context, root, out string) ([]string, error) {
	bin := filepath.Join(out, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return nil, err
	}
	for _, b := range builds {
		args := []string{"build", "-trimpath", "-ldflags=-s -w", "-o", filepath.Join(bin, b.name)}
		if b.tags != "" {
			args = append(args, "-tags", b.tags)
		}
		cmd := exec.CommandContext(ctx, "go", append(args, b.pkg)...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, out)
		}
	}
	var tars []string
	for _, spec := range TierSpecs(bin) {
		res, err := ocibuild.Build(spec, ocibuild.Options{Out: out})
		if err != nil {
			return nil, err
		}
		tars = append(tars, res.Tarball)
	}
	return tars, nil
}
