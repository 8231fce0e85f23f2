// SPDX-License-Identifier: Apache-2.0

package imageset

import "github.com/liken-sh/operators/internal/ocibuild"

// LikenInventory is the liken.sh inventory driver's image
// (deploy/inventory/driver.yaml): its static binary, the PCI ID database
// that names PCI devices (Debian's pci.ids package) and the mount points
// of its volumes. The container's root is read-only.
func LikenInventory(bin, tag string) ocibuild.Spec {
	return with(ocibuild.Spec{
		Ref:   ref("liken-inventory", tag),
		Add:   []ocibuild.Add{goBinary(bin, "liken-inventory", "liken-inventory")},
		Paths: []string{"/usr/share/misc/pci.ids"},
		Dirs: mountPoints("/run/cdi", "/host/dev",
			"/var/lib/kubelet/plugins/liken.sh", "/var/lib/kubelet/plugins_registry"),
		Entrypoint: []string{"/usr/local/bin/liken-inventory"},
		Labels:     labels("liken-inventory"),
	})
}
