package images

import "github.com/liken-sh/operators/internal/image"

// LikenInventory is the liken.sh inventory driver's image
// (deploy/inventory/driver.yaml): its static binary and the mount points
// of its volumes. The container's root is read-only.
func LikenInventory(bin, tag string) image.Spec {
	return with(image.Spec{
		Ref: ref("liken-inventory", tag),
		Add: []image.Add{goBinary(bin, "liken-inventory", "liken-inventory")},
		Dirs: mountPoints("/run/cdi", "/host/dev",
			"/var/lib/kubelet/plugins/liken.sh", "/var/lib/kubelet/plugins_registry"),
		Entrypoint: []string{"/usr/local/bin/liken-inventory"},
		Labels:     labels("liken-inventory"),
	})
}
