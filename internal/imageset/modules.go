// SPDX-License-Identifier: Apache-2.0

package imageset

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/liken-sh/operators/internal/audio/gate"
	"github.com/liken-sh/operators/internal/ocibuild"
	"github.com/liken-sh/operators/internal/pwconf"
)

// configurations are the PipeWire configuration files the pod's processes
// read: the daemon's, the clients' (pw-dump, pw-cli, pw-cat)
// and WirePlumber's.
var configurations = []string{
	"/usr/share/pipewire/pipewire.conf",
	"/usr/share/pipewire/client.conf",
	"/usr/share/wireplumber/wireplumber.conf",
}

// RequiredModulesPresent fails when the image lacks a PipeWire module that
// a configuration it carries loads without "ifexists" or "nofail" (PipeWire
// then exits with "could not load mandatory module"), or that WirePlumber's
// configuration loads as a component. The configuration read is the
// image's own: each file and the fragments in its .conf.d directory, and
// the configuration the claim gate writes for a claim's combined sink.
func RequiredModulesPresent(c *ocibuild.Contents) error {
	var missing []string
	for _, conf := range configurations {
		names, err := requiredModules(c, conf)
		if err != nil {
			return err
		}
		for _, name := range names {
			file := c.Arch().Path(path.Join(pipewireModDir, name+".so"))
			if !c.Has(file) {
				missing = append(missing, fmt.Sprintf("%s (loaded by %s)", file, conf))
			}
		}
	}
	// The combined sink's process loads a configuration the claim gate
	// writes at run time; any claim's loads the same modules.
	combine, err := gate.CombineConfig("/run/pipewire-0", "claim", gate.Combine{Positions: []string{"FL", "FR"},
		Outputs: []gate.CombineOutput{{Node: "output", From: []string{"FL", "FR"}, To: []string{"FL", "FR"}}}})
	if err != nil {
		return err
	}
	names, err := modulesOf([]byte(combine))
	if err != nil {
		return fmt.Errorf("the claim gate's combined-sink configuration: %w", err)
	}
	for _, name := range names {
		if file := c.Arch().Path(path.Join(pipewireModDir, name+".so")); !c.Has(file) {
			missing = append(missing, fmt.Sprintf("%s (loaded by a claim's combined sink)", file))
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return errors.New("missing " + strings.Join(slices.Compact(missing), ", "))
	}
	return nil
}

// requiredModules returns the modules the configuration file conf and its
// fragments load without a fallback.
func requiredModules(c *ocibuild.Contents, conf string) ([]string, error) {
	files := []string{conf}
	fragments, err := c.ReadDir(conf + ".d")
	if err != nil {
		return nil, err
	}
	for _, f := range fragments {
		if strings.HasSuffix(f, ".conf") {
			files = append(files, path.Join(conf+".d", f))
		}
	}
	var names []string
	for _, f := range files {
		data, err := c.ReadFile(f)
		if err != nil {
			return nil, err
		}
		mods, err := modulesOf(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		names = append(names, mods...)
	}
	return names, nil
}

// modulesOf returns the modules one configuration text loads without a
// fallback, WirePlumber's components' modules included.
func modulesOf(data []byte) ([]string, error) {
	obj, err := pwconf.Parse(data)
	if err != nil {
		return nil, err
	}
	mods, err := pwconf.Modules(obj)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, m := range mods {
		if m.Required() {
			names = append(names, m.Name)
		}
	}
	components, err := pwconf.WirePlumberPipeWireModules(obj)
	if err != nil {
		return nil, err
	}
	return append(names, components...), nil
}
