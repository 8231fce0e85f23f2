// SPDX-License-Identifier: Apache-2.0

package imageset

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/liken-sh/operators/internal/ocibuild"
)

// fakeBin is a directory with a stand-in for every command's binary:
// assembling needs the files, not Go programs.
func fakeBin(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, c := range Commands {
		if err := os.WriteFile(filepath.Join(dir, c), []byte("stand-in for "+c), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestEverySpecAssembles(t *testing.T) {
	bin := fakeBin(t)
	names := map[string]bool{}
	carried := map[string]bool{} // the commands some image carries
	for _, spec := range Specs(bin, DefaultTag) {
		c, err := ocibuild.Assemble(spec, "/")
		if err != nil {
			t.Fatalf("%s: %v", spec.Ref, err)
		}
		names[Name(spec)] = true
		for _, a := range spec.Add {
			if filepath.Dir(a.Src) == bin {
				carried[filepath.Base(a.Src)] = true
			}
		}
		for _, p := range []string{spec.Entrypoint[0], "/etc/passwd", "/etc/group", "/tmp", "/proc", "/dev"} {
			if !c.Has(p) {
				t.Errorf("%s: no %s", spec.Ref, p)
			}
		}
		group, _ := c.ReadFile("/etc/group")
		passwd, _ := c.ReadFile("/etc/passwd")
		if !strings.Contains(string(passwd), "\nmessagebus:x:100:101:") || !strings.Contains(string(group), "\nmessagebus:x:101:") {
			t.Errorf("%s: no messagebus account", spec.Ref)
		}
	}
	if len(names) != len(Specs(bin, DefaultTag)) || len(carried) != len(Commands) {
		t.Fatalf("images %v carry the commands %v of %v", names, carried, Commands)
	}
}

// The audio image carries the baked fragments and every module its own
// configuration loads without a fallback; pruning one of those fails the
// build, naming the module and the file that loads it.
func TestAudioModules(t *testing.T) {
	spec := AudioOperator(fakeBin(t), DefaultTag)
	c, err := ocibuild.Assemble(spec, "/")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{
		"/usr/share/wireplumber/wireplumber.conf.d/50-audio-operator.conf",
		"/usr/share/pipewire/pipewire.conf.d/50-pipewire-access.conf",
		"/usr/lib/x86_64-linux-gnu/spa-0.2/bluez5/libspa-bluez5.so",
		"/usr/share/alsa/alsa.conf",
		"/usr/bin/pw-record",
	} {
		if !c.Has(p) {
			t.Errorf("no %s", p)
		}
	}
	if c.Has("/usr/lib/x86_64-linux-gnu/pipewire-0.3/libpipewire-module-protocol-pulse.so") || c.Has("/usr/share/alsa/ucm2") {
		t.Error("a pruned file is in the image")
	}

	pruned := spec
	pruned.Trees = slices.Clone(spec.Trees)
	pruned.Trees[0].Only = slices.DeleteFunc(slices.Clone(pipewireModules), func(m string) bool {
		return m == "libpipewire-module-session-manager.so"
	})
	_, err = ocibuild.Assemble(pruned, "/")
	if err == nil || !strings.Contains(err.Error(), "libpipewire-module-session-manager.so (loaded by /usr/share/pipewire/pipewire.conf)") {
		t.Fatalf("without the session manager module: %v", err)
	}
}

// TestAudioPruning measures what pruning saves: the PipeWire files of the
// audio image against the same image with every PipeWire module and SPA
// plugin directory whole (the operator's own binary left out of both).
func TestAudioPruning(t *testing.T) {
	bin := fakeBin(t)
	spec := AudioOperator(bin, DefaultTag)
	full := spec
	full.Trees = slices.Clone(spec.Trees)
	full.Trees[0].Only, full.Trees[1].Only = nil, nil
	var sizes [2]int64
	var entries [2]int
	for i, s := range []ocibuild.Spec{spec, full} {
		c, err := ocibuild.Assemble(s, "/")
		if err != nil {
			t.Fatal(err)
		}
		sizes[i], entries[i] = c.FileBytes(), len(c.Paths())
	}
	t.Logf("PipeWire, WirePlumber, tools and libraries: pruned %.1f MB in %d entries, whole module and plugin directories %.1f MB in %d entries",
		float64(sizes[0])/1e6, entries[0], float64(sizes[1])/1e6, entries[1])
	if sizes[0]*2 > sizes[1] {
		t.Errorf("pruning keeps %d of %d bytes, more than half", sizes[0], sizes[1])
	}
}
