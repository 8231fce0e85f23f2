// SPDX-License-Identifier: Apache-2.0

package imageset

import "github.com/liken-sh/operators/internal/ocibuild"

// Mount points of the Bluetooth pod (deploy/bluetooth/operator.yaml):
// the bus directory and BlueZ's storage in every container, and the
// kubelet's, CDI's and the input relay's directories in the operator's. /var/run is a link
// to /run in the images, so the directories are made where it leads.
const (
	bluetoothBus   = "/run/bluetooth.liken.sh/dbus"
	bluetoothRelay = "/run/bluetooth.liken.sh/relay"
	bluetoothBonds = "/var/lib/bluetooth"
)

// Bluetoothd is the bluetoothd sidecar's image: the entrypoint (cmd/bluetoothd)
// starts dbus-daemon with Debian's system configuration, which reads
// BlueZ's bus policy from /etc/dbus-1/system.d, and execs bluetoothd.
// bluetoothctl, btmgmt and btmon are there for a person in an incident.
// The entrypoint writes /etc/bluetooth's main.conf and input.conf at
// every start, so the packages' copies are not taken.
func Bluetoothd(bin, tag string) ocibuild.Spec {
	return with(ocibuild.Spec{
		Ref: ref("bluetoothd", tag),
		Add: []ocibuild.Add{goBinary(bin, "bluetoothd", "bluetoothd-entrypoint")},
		Paths: []string{
			"/usr/bin/dbus-daemon",
			"/usr/libexec/bluetooth/bluetoothd",
			"/usr/bin/bluetoothctl",
			"/usr/bin/btmgmt",
			"/usr/bin/btmon",
			"/usr/share/dbus-1/system.conf",
			"/etc/dbus-1/system.d/bluetooth.conf",
		},
		// The system configuration includes these directories; only
		// BlueZ's policy is wanted, not whatever the build machine has
		// installed there.
		Dirs: append(mountPoints(bluetoothBus, bluetoothBonds, "/etc/bluetooth"),
			ocibuild.Dir{Path: "/usr/share/dbus-1/system.d", Mode: 0o755},
			ocibuild.Dir{Path: "/usr/share/dbus-1/system-services", Mode: 0o755}),
		Entrypoint: []string{"/usr/local/bin/bluetoothd-entrypoint"},
		Labels:     labels("bluetoothd"),
	})
}

// BluetoothOperator is the image of the operator container and of the
// input-relay sidecar: their static binaries and the mount points of
// their volumes.
func BluetoothOperator(bin, tag string) ocibuild.Spec {
	return with(ocibuild.Spec{
		Ref: ref("bluetooth-operator", tag),
		Add: []ocibuild.Add{
			goBinary(bin, "bluetooth-operator", "bluetooth-operator"),
			goBinary(bin, "bluetooth-input-relay", "bluetooth-input-relay"),
		},
		Dirs: mountPoints(bluetoothBus, bluetoothBonds, "/run/cdi", bluetoothRelay,
			"/var/lib/kubelet/plugins/bluetooth.liken.sh", "/var/lib/kubelet/plugins_registry"),
		Entrypoint: []string{"/usr/local/bin/bluetooth-operator"},
		Labels:     labels("bluetooth-operator"),
	})
}

// BluetoothBondfetch is the init container's image: its static binary and
// the mount point of the bonds volume. The container's root is read-only.
func BluetoothBondfetch(bin, tag string) ocibuild.Spec {
	return with(ocibuild.Spec{
		Ref:        ref("bluetooth-bondfetch", tag),
		Add:        []ocibuild.Add{goBinary(bin, "bluetooth-bondfetch", "bluetooth-bondfetch")},
		Dirs:       mountPoints(bluetoothBonds),
		Entrypoint: []string{"/usr/local/bin/bluetooth-bondfetch"},
		Labels:     labels("bluetooth-bondfetch"),
	})
}
