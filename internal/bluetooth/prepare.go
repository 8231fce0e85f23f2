// SPDX-License-Identifier: Apache-2.0

package bluetooth

import (
	"context"
	"fmt"
	"path"
	"regexp"
	"slices"

	"github.com/liken-sh/operators/internal/dra"
	cdispec "tags.cncf.io/container-device-interface/specs-go"
)

// The pod's bus: the hostPath directory that holds dbus-daemon's socket
// (deploy/bluetooth/operator.yaml's "bus" volume) and the address that names the socket in it.
// The directory, not the socket, is mounted, because dbus-daemon unlinks
// and recreates the socket at every start and a file mount would pin the
// dead inode.
const (
	BusDir     = "/var/run/bluetooth.liken.sh/dbus"
	BusAddress = "unix:path=" + BusDir + "/system_bus_socket"
)

// busMountOptions: read-only is enough. Connecting to a unix socket asks
// for write permission on the socket's inode (net/unix/af_unix.c,
// unix_find_bsd), and a read-only filesystem refuses that only for
// regular files, directories and symlinks (fs/namei.c, sb_permission); a
// read-only bind mount is checked only by calls that modify the tree.
// rprivate keeps the consumer's mount events from propagating back to the
// host; nosuid and nodev because nothing in it needs either.
var busMountOptions = []string{"ro", "rbind", "rprivate", "nosuid", "nodev"}

// Params are the opaque claim parameters of this driver. There are none:
// the empty struct, decoded strictly by the driver core, refuses any key,
// so a misspelt option fails the claim instead of being ignored.
type Params struct{}

// NodeSource walks the kernel's HID devices now (for instance
// hid.Discover over /sys and /dev) and returns their evdev nodes.
type NodeSource func(ctx context.Context) (InputNodes, error)

// Published reports whether name is a device of the set the operator
// published last (what its latest pass handed to dra.Driver.SetDevices).
// It is called from the kubelet's prepare calls, concurrently with passes.
type Published func(name string) bool

// Prepare returns the driver core's prepare function.
//
// Only a device of the latest published set is prepared: a well-formed
// name is not enough, since any address spells one (a media bus of
// ff:ff:ff:ff:ff:ff, a controller for a HID device on the host that this
// bluetoothd never paired). A nil published refuses every device.
//
// A controller gets its evdev nodes, found by one fresh walk, as CDI
// device nodes and nothing else: no hidraw, no joystick, no mount, no
// environment. A media bus gets the bus directory mounted at the same path
// and DBUS_SYSTEM_BUS_ADDRESS pointing at its socket.
//
// Errors name the device: a name of another shape, a name this operator
// does not publish ("device X is not one this operator publishes"), a
// failed walk, a controller with no evdev node right now (the kubelet
// retries prepare, and the pod waits in ContainerCreating).
func Prepare(published Published, nodes NodeSource) dra.PrepareFunc[Params] {
	return func(ctx context.Context, req dra.DeviceRequest[Params]) (dra.ContainerEdits, error) {
		name := req.Result.Device
		addr, isBus, err := ParseDeviceName(name)
		if err != nil {
			return dra.ContainerEdits{}, err
		}
		if published == nil || !published(name) {
			return dra.ContainerEdits{}, fmt.Errorf("device %q is not one this operator publishes", name)
		}
		if isBus {
			return MediaBusEdits(), nil
		}
		found, err := nodes(ctx)
		if err != nil {
			return dra.ContainerEdits{}, fmt.Errorf("controller %s: looking for its input nodes: %w", addr, err)
		}
		var edits dra.ContainerEdits
		if found != nil {
			edits = ControllerEdits(found.EventNodes(addr.String(), ""))
		}
		if len(edits.DeviceNodes) == 0 {
			return dra.ContainerEdits{}, fmt.Errorf("controller %s registers no input node right now", addr)
		}
		return edits, nil
	}
}

// MediaBusEdits are the container edits of a media bus.
func MediaBusEdits() dra.ContainerEdits {
	return dra.ContainerEdits{
		Env: []string{"DBUS_SYSTEM_BUS_ADDRESS=" + BusAddress},
		Mounts: []*cdispec.Mount{{
			HostPath:      BusDir,
			ContainerPath: BusDir,
			Type:          "bind",
			Options:       slices.Clone(busMountOptions),
		}},
	}
}

// evdevName is the name the input core gives an evdev node
// (drivers/input/evdev.c: "event%d").
var evdevName = regexp.MustCompile(`^event[0-9]+$`)

// isEvdevNode reports whether host is a clean absolute path to an evdev
// node, <dir>/input/eventN.
func isEvdevNode(host string) bool {
	return path.IsAbs(host) && path.Clean(host) == host &&
		evdevName.MatchString(path.Base(host)) && path.Base(path.Dir(host)) == "input"
}

// ControllerEdits turns host evdev node paths into CDI device nodes, sorted
// and without duplicates. Anything that is not an evdev node (a jsN,
// hidraw or mouse node, a relative or unclean path) is dropped, so a
// consumer never receives more than the controller's event devices. The
// container path is always /dev/input/eventN; the host path is given
// separately when it differs (a test's device root).
func ControllerEdits(hostNodes []string) dra.ContainerEdits {
	var edits dra.ContainerEdits
	nodes := slices.Clone(hostNodes)
	slices.Sort(nodes)
	for _, host := range slices.Compact(nodes) {
		if !isEvdevNode(host) {
			continue
		}
		n := &cdispec.DeviceNode{Path: "/dev/input/" + path.Base(host)}
		if host != n.Path {
			n.HostPath = host
		}
		edits.DeviceNodes = append(edits.DeviceNodes, n)
	}
	return edits
}
