// SPDX-License-Identifier: Apache-2.0

package bluetooth

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	cdispec "tags.cncf.io/container-device-interface/specs-go"

	"github.com/liken-sh/operators/internal/bdaddr"
	"github.com/liken-sh/operators/internal/dra"
	"github.com/liken-sh/operators/internal/hid"
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

// Delivery modes of a controller, the values of Params.Mode.
const (
	// ModeRelay delivers input nodes of the claim's own that the relay
	// keeps in place while the controller naps, so a running consumer
	// keeps reading; it is the default. Where no relay is available
	// (Delivery.Relay nil) it delivers what ModeDirect does.
	ModeRelay = "relay"
	// ModeDirect delivers the controller's own evdev nodes, by device
	// number. They end when the controller naps: a running consumer's
	// descriptor then reads ENODEV, and the claim's next container gets
	// the nodes the controller has when it starts.
	ModeDirect = "direct"
)

// Params are the opaque claim parameters of this driver, a JSON object
// with no apiVersion or kind: {"mode": "direct"}. The driver core decodes
// them strictly, so a misspelt key fails the claim instead of being
// ignored.
//
// Mode is how a controller's input reaches the container: ModeRelay
// ("relay", the default, also when empty) or ModeDirect ("direct"). A
// media bus ignores it.
type Params struct {
	Mode string `json:"mode,omitempty"`
}

// Validate refuses a Mode that is not "", "relay" or "direct", naming the
// value given (cut to 64 bytes) and the values allowed.
func (p *Params) Validate() error {
	switch p.Mode {
	case "", ModeRelay, ModeDirect:
		return nil
	}
	mode := p.Mode
	if len(mode) > maxStringAttribute {
		mode = mode[:maxStringAttribute] + "..."
	}
	return fmt.Errorf("mode %q is not a delivery mode of %s: use %q (the default) or %q", mode, DriverName, ModeRelay, ModeDirect)
}

// EvdevNodes answers which evdev nodes, with their device numbers, the
// kernel has for a peer now. address is the peer in BlueZ's spelling;
// adapter, when not "", limits the answer to HID devices on that adapter.
// The HID discovery's scan result (hid.Scan) has this method.
type EvdevNodes interface {
	Nodes(address, adapter string) []hid.Node
}

// NodeSource walks the kernel's HID devices now (for instance
// hid.Discover over /sys and /dev) and returns their evdev nodes.
type NodeSource func(ctx context.Context) (EvdevNodes, error)

// Published reports whether name is a device of the set the operator
// published last (what its latest pass handed to dra.Driver.SetDevices).
// It is called from the kubelet's prepare calls, concurrently with passes.
type Published func(name string) bool

// Relay gives a claim's controller evdev nodes of the claim's own that
// stay in place while the controller naps (virtual input devices fed from
// the controller's), so a running consumer keeps reading across naps.
//
// Nodes returns those nodes for the claim's controller at address: their
// paths below the operator's /dev root ("/dev/input/event30") with their
// device numbers, setting the relay up for that claim if it is not yet.
// It is called from prepare (in the kubelet's call) and from the refresh of
// prepared claims' specs, concurrently with passes, and must give the same
// nodes for the same claim and address while it keeps them. Both run with
// the DRA driver's state locked, so Nodes must not call the dra.Driver;
// the operator's first pass refreshes every prepared claim, so a relay
// that comes back after an operator restart with other nodes has them
// named in the claims' specs from then on. An error fails
// the prepare with it; on a refresh the claim's spec then names no node
// (see Delivery.CurrentEdits). Nodes of the relay's that are not evdev nodes
// (not /dev/.../input/eventN, or not character major 13) are not
// delivered.
type Relay interface {
	Nodes(ctx context.Context, claim types.UID, address bdaddr.Address) ([]hid.Node, error)
}

// Delivery is what prepare needs to hand a consumer a device.
type Delivery struct {
	// Published is the set the operator published last; nil refuses
	// every device.
	Published Published
	// Nodes walks the controllers' evdev nodes now.
	Nodes NodeSource
	// Relay gives relay mode its nodes. Nil means no relay is available:
	// relay mode then delivers the controller's own nodes, as direct
	// mode does, and says so (EnvDeliveryPrefix).
	Relay Relay
}

// Prepare returns the driver core's prepare function.
//
// Only a device of the latest published set is prepared: a well-formed
// name is not enough, since any address spells one (a media bus of
// ff:ff:ff:ff:ff:ff, a controller for a HID device on the host that this
// bluetoothd never paired).
//
// A controller gets its evdev nodes (ControllerEdits) and the two
// variables that name them, and nothing else: no hidraw, no joystick, no
// mount. In direct mode, or in relay mode without a relay, the nodes are
// the controller's own, found by one fresh walk; in relay mode they are
// the relay's for this claim. A media bus gets the bus directory mounted
// at the same path and DBUS_SYSTEM_BUS_ADDRESS pointing at its socket.
//
// Errors name the device: a name of another shape, a name this operator
// does not publish ("device X is not one this operator publishes"), a
// failed walk or relay, a controller with no evdev node right now (the
// kubelet retries prepare, and the pod waits in ContainerCreating).
func Prepare(d Delivery) dra.PrepareFunc[Params] {
	return func(ctx context.Context, req dra.DeviceRequest[Params]) (dra.ContainerEdits, error) {
		name := req.Result.Device
		addr, isBus, err := ParseDeviceName(name)
		if err != nil {
			return dra.ContainerEdits{}, err
		}
		if d.Published == nil || !d.Published(name) {
			return dra.ContainerEdits{}, fmt.Errorf("device %q is not one this operator publishes", name)
		}
		if isBus {
			return MediaBusEdits(), nil
		}
		var claim types.UID
		if req.Claim != nil {
			claim = req.Claim.UID
		}
		edits, err := d.controllerEdits(ctx, claim, addr, req.Params.Mode)
		if err != nil {
			return dra.ContainerEdits{}, err
		}
		if len(edits.DeviceNodes) == 0 {
			return dra.ContainerEdits{}, fmt.Errorf("controller %s registers no input node right now", addr)
		}
		return edits, nil
	}
}

// controllerEdits is where the delivery mode is decided, for prepare and
// for the refresh of prepared specs alike: the relay's nodes for relay
// mode when there is a relay, else the controller's own, by a fresh walk.
func (d Delivery) controllerEdits(ctx context.Context, claim types.UID, addr bdaddr.Address, mode string) (dra.ContainerEdits, error) {
	if mode != ModeDirect && d.Relay != nil {
		nodes, err := d.Relay.Nodes(ctx, claim, addr)
		if err != nil {
			return dra.ContainerEdits{}, fmt.Errorf("controller %s: relaying its input: %w", addr, err)
		}
		return ControllerEdits(addr, ModeRelay, nodes), nil
	}
	if d.Nodes == nil {
		return dra.ContainerEdits{}, fmt.Errorf("controller %s: no way to look for its input nodes", addr)
	}
	found, err := d.Nodes(ctx)
	if err != nil {
		return dra.ContainerEdits{}, fmt.Errorf("controller %s: looking for its input nodes: %w", addr, err)
	}
	var nodes []hid.Node
	if found != nil {
		nodes = found.Nodes(addr.String(), "")
	}
	return ControllerEdits(addr, ModeDirect, nodes), nil
}

// CurrentEdits returns the edits each prepared controller gives now, for
// dra.Driver.RefreshClaimEdits: the nodes of the mode it was delivered in
// (read from its EnvDeliveryPrefix variable; a spec without one, written
// before the variable existed, was direct), found by one fresh walk for
// the whole refresh. A media bus, or a name of another shape, is left as
// it is. The function is for one refresh: it walks once, on its first
// controller, and is not safe for concurrent use.
//
// A controller with no node now (asleep, off) gets edits that name no
// node and an empty EnvInputPrefix variable, so a container started
// while it sleeps starts without it; its next container after the
// controller is back gets the new nodes. Never a stale node: a stale path
// by number would be, outright, whatever device holds that number now (a
// USB keyboard plugged in meanwhile takes the lowest free evdev minor,
// often the one the pad let go), and a stale path without its number
// would be whatever device holds the path, for the same reason. A walk or
// a relay that fails is treated the same way, logged.
//
// What remains is the time between the kernel freeing the controller's
// number and the refresh rewriting the spec (one pass, started by the
// node's removal uevent): a container of the claim created in that
// window, with another device registered at that number in it, would
// get that device. The relay has no such window.
func (d Delivery) CurrentEdits(ctx context.Context) dra.ClaimEditsFunc {
	walk := d.Nodes
	var found EvdevNodes
	var walkErr error
	walked := false
	d.Nodes = func(ctx context.Context) (EvdevNodes, error) {
		if !walked {
			walked = true
			if walk == nil {
				walkErr = errors.New("no way to look for input nodes")
			} else {
				found, walkErr = walk(ctx)
			}
		}
		return found, walkErr
	}
	return func(claim types.UID, device string, prepared dra.ContainerEdits) (dra.ContainerEdits, bool) {
		addr, isBus, err := ParseDeviceName(device)
		if err != nil || isBus {
			return prepared, false
		}
		mode := DeliveredMode(addr, prepared)
		edits, err := d.controllerEdits(ctx, claim, addr, mode)
		if err != nil {
			klog.FromContext(ctx).Error(err, "The claim's next container gets no input node of this controller", "claim", claim)
			if mode != ModeDirect && d.Relay != nil {
				mode = ModeRelay
			} else {
				mode = ModeDirect
			}
			edits = ControllerEdits(addr, mode, nil)
		}
		return edits, true
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

// The variables a controller's edits set, each ended by the controller's
// address in capitals with underscores (E4_17_D8_C5_67_6D), so that every
// controller in a container has its own: CDI sets every device's
// environment in one container, and of two devices setting one name, the
// later wins.
const (
	// EnvInputPrefix starts the variable that lists the controller's
	// input nodes as the container sees them, space-separated and sorted
	// ("/dev/input/event5 /dev/input/event6"); empty while it has none.
	EnvInputPrefix = "LIKEN_BLUETOOTH_INPUT_"
	// EnvDeliveryPrefix starts the variable that says how the nodes are
	// delivered: ModeRelay or ModeDirect, what was done rather than what
	// was asked (relay mode without a relay says direct).
	EnvDeliveryPrefix = "LIKEN_BLUETOOTH_DELIVERY_"
)

// EnvSuffix is the part of a controller's variable names after the
// prefix: its address in capitals with underscores.
func EnvSuffix(address bdaddr.Address) string {
	return strings.ReplaceAll(address.String(), ":", "_")
}

// DeliveredMode reads, from a controller's prepared edits, the mode its
// nodes were delivered in: the value of its EnvDeliveryPrefix variable
// when that is ModeRelay or ModeDirect, else ModeDirect (edits written
// before the variable existed delivered the controller's own nodes).
func DeliveredMode(address bdaddr.Address, edits dra.ContainerEdits) string {
	key := EnvDeliveryPrefix + EnvSuffix(address) + "="
	for _, e := range edits.Env {
		if v, ok := strings.CutPrefix(e, key); ok && v == ModeRelay {
			return ModeRelay
		}
	}
	return ModeDirect
}

// ControllerEdits are the container edits of the controller at address
// whose nodes are delivered in mode (ModeRelay or ModeDirect): one CDI
// device node per evdev node, sorted by path, with its type ("c") and
// number, so the runtime creates the node from the number read with the
// name instead of looking the path up on the host when the container
// starts; and the controller's EnvInputPrefix and EnvDeliveryPrefix
// variables. Anything that is not an evdev node (a jsN, hidraw or mouse
// node, a relative or unclean path, a number outside the input major) is
// dropped, and so is a container path two different nodes would take
// (one path with two numbers, or eventN under two /dev roots), so a
// consumer never receives more than the controller's event devices. The container path
// is always /dev/input/eventN; the host path is given separately when it
// differs (a test's device root); the number also goes into the
// container's device cgroup rule (CDI's container edits), so even a
// runtime that binds the host path cannot open another number through it.
func ControllerEdits(address bdaddr.Address, mode string, nodes []hid.Node) dra.ContainerEdits {
	// By the path in the container, where two devices must not meet.
	byPath := map[string][]hid.Node{}
	for _, n := range nodes {
		if isEvdevNode(n.Path) && n.Major == hid.InputMajor {
			in := "/dev/input/" + path.Base(n.Path)
			byPath[in] = append(byPath[in], n)
		}
	}
	var edits dra.ContainerEdits
	var inContainer []string
	for _, in := range slices.Sorted(maps.Keys(byPath)) {
		found := byPath[in]
		if slices.ContainsFunc(found, func(n hid.Node) bool { return n != found[0] }) {
			continue // one path, two devices: neither is certain
		}
		n := &cdispec.DeviceNode{
			Path:  in,
			Type:  "c",
			Major: int64(found[0].Major),
			Minor: int64(found[0].Minor),
		}
		if found[0].Path != in {
			n.HostPath = found[0].Path
		}
		edits.DeviceNodes = append(edits.DeviceNodes, n)
		inContainer = append(inContainer, in)
	}
	suffix := EnvSuffix(address)
	edits.Env = []string{
		EnvInputPrefix + suffix + "=" + strings.Join(inContainer, " "),
		EnvDeliveryPrefix + suffix + "=" + mode,
	}
	return edits
}
