// SPDX-License-Identifier: Apache-2.0

package bluetooth

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/godbus/dbus/v5"
	"github.com/liken-sh/operators/internal/bdaddr"
	"github.com/liken-sh/operators/internal/bluez"
	"github.com/liken-sh/operators/internal/dra"
	"github.com/liken-sh/operators/internal/hid"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Taint keys.
const (
	// TaintDisconnected (NoExecute on a controller) marks a paired device
	// that is not connected: new claims stay off it and running consumers
	// are evicted after their toleration. On a media bus (NoSchedule) it
	// marks an adapter that bluetoothd no longer reports.
	TaintDisconnected = DriverName + "/disconnected"
	// TaintNoInputNode (NoSchedule) marks a device that should have evdev
	// nodes and has none: off the air when the input relay does not know
	// it (it never connected since pairing), between connect and HID
	// registration, or connected with a mute HID session. Consumers must
	// not tolerate it: prepare would fail for want of a node.
	TaintNoInputNode = DriverName + "/no-input-node"
)

// CapacityConsumers is a controller's capacity of consumers: MaxConsumers
// claims may hold it at once, each taking one unless it asks for more,
// and a claim that asks for all of them holds it alone. In relay mode
// each claim reads its own virtual devices, fed from the one controller;
// in direct mode the claims' containers share the controller's nodes.
const (
	CapacityConsumers = "consumers"
	MaxConsumers      = 4
)

// consumers is a controller's capacity: MaxConsumers, one by default.
func consumers() map[dra.QualifiedName]resourceapi.DeviceCapacity {
	one, all := resource.MustParse("1"), resource.MustParse(strconv.Itoa(MaxConsumers))
	return map[dra.QualifiedName]resourceapi.DeviceCapacity{
		CapacityConsumers: {Value: all, RequestPolicy: &resourceapi.CapacityRequestPolicy{
			Default:    &one,
			ValidRange: &resourceapi.CapacityRequestPolicyRange{Min: &one, Max: &all, Step: &one},
		}},
	}
}

// Media bus attributes. supportsSound is the one attribute in another
// driver's domain: the audio operator's class selects it without naming
// this driver.
const (
	attrSupportsSound = "sound.liken.sh/supportsSound"
	mediaBusKind      = "mediaBus"
)

// InputNodes answers which evdev nodes the kernel has for a peer now.
// address is the peer in BlueZ's spelling; adapter, when not "", limits
// the answer to HID devices on that adapter (also BlueZ's spelling). The
// HID discovery's scan result (hid.Scan) has this method.
type InputNodes interface {
	EventNodes(address, adapter string) []string
}

// NodeMap is InputNodes from a map of peer address (BlueZ's spelling) to
// evdev node paths; it ignores the adapter.
type NodeMap map[string][]string

// EventNodes returns the nodes listed for address.
func (m NodeMap) EventNodes(address, _ string) []string { return m[address] }

// Inventory is what the operator knows about bluetoothd's objects across
// passes. It remembers each adapter bluetoothd stops reporting, with its
// paired devices, so that they stay published (tainted) rather than vanish
// under a claim that holds them: a removed device would strand the claim's
// allocation. The zero value is ready to use; it is not safe for
// concurrent use.
type Inventory struct {
	current  bluez.Objects
	departed map[dbus.ObjectPath]departedAdapter
	kept     []error                      // the values the latest Observe kept from the read before
	ids      map[bdaddr.Address]productID // by peer: the HID_ID ObserveHID last saw
	// battery is the last Battery1.Percentage seen of each device
	// still reported or departed, by object path: BlueZ drops Battery1
	// when the link goes down, and a pad asleep is reported with the
	// charge it had.
	battery map[dbus.ObjectPath]uint8
	// relayable holds the controllers the input relay knows (SetRelayable).
	relayable map[bdaddr.Address]bool
}

// SetRelayable records the controllers whose input devices the input
// relay knows, so it can make a claim's devices while the controller
// sleeps: those are not tainted TaintNoInputNode for being off the air.
// nil forgets them all.
func (inv *Inventory) SetRelayable(peers []bdaddr.Address) {
	inv.relayable = map[bdaddr.Address]bool{}
	for _, p := range peers {
		inv.relayable[p] = true
	}
}

type departedAdapter struct {
	adapter bluez.Adapter
	devices []bluez.Device
}

// Observe records the latest read of bluetoothd's objects. An adapter
// present in the previous read and absent from this one becomes departed;
// an adapter with the same address that comes back replaces it. A device
// of the previous read whose Paired, Bonded or Address this read has with
// the wrong D-Bus type keeps the values it had, so that it stays
// published; Devices reports each value kept as a problem.
func (inv *Inventory) Observe(objs bluez.Objects) {
	if inv.departed == nil {
		inv.departed = map[dbus.ObjectPath]departedAdapter{}
	}
	objs, inv.kept = keepLastGood(inv.current.Devices, objs)
	back := map[string]bool{}
	for _, a := range objs.Adapters {
		back[a.Address] = true
	}
	for _, a := range inv.current.Adapters {
		if back[a.Address] {
			continue
		}
		var paired []bluez.Device
		for _, d := range inv.current.Devices {
			if d.Adapter == a.Path && (d.Paired || d.Bonded) {
				paired = append(paired, d)
			}
		}
		inv.departed[a.Path] = departedAdapter{adapter: a, devices: paired}
	}
	for p, d := range inv.departed {
		if back[d.adapter.Address] {
			delete(inv.departed, p)
		}
	}
	inv.current = objs
	inv.rememberBattery()
}

// rememberBattery records the charge of every device that reports one
// now, and forgets the devices neither reported nor departed.
func (inv *Inventory) rememberBattery() {
	if inv.battery == nil {
		inv.battery = map[dbus.ObjectPath]uint8{}
	}
	known := map[dbus.ObjectPath]bool{}
	for _, d := range inv.current.Devices {
		known[d.Path] = true
		if d.HasBattery && d.Battery <= 100 {
			inv.battery[d.Path] = d.Battery
		}
	}
	for _, da := range inv.departed {
		for _, d := range da.devices {
			known[d.Path] = true
		}
	}
	for p := range inv.battery {
		if !known[p] {
			delete(inv.battery, p)
		}
	}
}

// Departed returns the addresses of the adapters that left, sorted; a pass
// with any is not healthy and is worth retrying soon.
func (inv *Inventory) Departed() []string {
	var out []string
	for _, d := range inv.departed {
		out = append(out, d.adapter.Address)
	}
	slices.Sort(out)
	return out
}

// Build is the device set for one read of bluetoothd's objects with no
// history: Observe on a fresh Inventory, ObserveHID when nodes is a
// hid.Scan, then Devices.
func Build(objs bluez.Objects, nodes InputNodes) ([]dra.Device, []error) {
	var inv Inventory
	inv.Observe(objs)
	if scan, ok := nodes.(hid.Scan); ok {
		inv.ObserveHID(scan.Devices)
	}
	return inv.Devices(nodes)
}

// candidate is one paired device under one adapter.
type candidate struct {
	peer    bdaddr.Address
	device  bluez.Device
	adapter string // the adapter's address in BlueZ spelling, "" if unusable
	live    bool   // the adapter is reported now
	powered bool   // the adapter's radio is on
	// lastBattery is the charge last seen (percent), when hasLastBattery.
	lastBattery    uint8
	hasLastBattery bool
	relayable      bool // the input relay can make its devices while it sleeps
}

// Devices returns the devices to publish, sorted by name: one media bus
// per adapter with a usable address, and one controller per paired (or
// bonded) device, connected or not. problems lists what was left out and
// why (an address that does not parse, a peer paired with two adapters)
// and the values Observe kept from an earlier read; none of them stops the
// rest.
//
// A controller is tainted TaintDisconnected (NoExecute) when it is not
// connected, which includes every device of a departed adapter, and
// TaintNoInputNode (NoSchedule) when ExpectsInput and it is not connected
// or nodes has no evdev node for it: a gamepad asleep carries both, so a
// claim that tolerates its sleeping (the disconnected taint) still gets
// no pad that is asleep now. A departed adapter's media bus is tainted
// TaintDisconnected (NoSchedule): a sound server using it is not evicted,
// but nothing new is sent to it. Every tainted device carries a
// dra.Device.Problem saying why in words (ProblemReference lists them),
// which the pods using it show in their allocatedResourcesStatus.
func (inv *Inventory) Devices(nodes InputNodes) ([]dra.Device, []error) {
	var out []dra.Device
	problems := slices.Clone(inv.kept)
	adapterAddr := map[dbus.ObjectPath]string{}
	buses := map[string]bool{}

	addAdapter := func(a bluez.Adapter, live bool) {
		addr, err := bdaddr.Parse(a.Address)
		if err == nil && addr.IsZero() {
			err = fmt.Errorf("the address is still 00:00:00:00:00:00")
		}
		if err != nil {
			problems = append(problems, fmt.Errorf("adapter %s: no media bus: %w", a.Path, err))
			return
		}
		adapterAddr[a.Path] = addr.String()
		name := MediaBusName(addr)
		if buses[name] {
			problems = append(problems, fmt.Errorf("adapter %s: address %s is already published as %s", a.Path, addr, name))
			return
		}
		buses[name] = true
		out = append(out, mediaBus(addr, live))
	}

	var candidates []candidate
	powered := map[dbus.ObjectPath]bool{}
	addDevice := func(d bluez.Device, live bool) {
		if !d.Paired && !d.Bonded {
			return
		}
		peer, err := bdaddr.Parse(d.Address)
		if err != nil {
			problems = append(problems, fmt.Errorf("device %s: not published: %w", d.Path, err))
			return
		}
		c := candidate{peer: peer, device: d, adapter: adapterAddr[d.Adapter], live: live, powered: live && powered[d.Adapter]}
		c.lastBattery, c.hasLastBattery = inv.battery[d.Path]
		c.relayable = inv.relayable[peer]
		candidates = append(candidates, c)
	}

	for _, a := range inv.current.Adapters {
		addAdapter(a, true)
		powered[a.Path] = a.Powered
	}
	departed := slices.SortedFunc(maps.Values(inv.departed), func(a, b departedAdapter) int {
		return cmp.Compare(a.adapter.Path, b.adapter.Path)
	})
	for _, d := range departed {
		addAdapter(d.adapter, false)
	}
	for _, d := range inv.current.Devices {
		addDevice(d, true)
	}
	for _, da := range departed {
		for _, d := range da.devices {
			addDevice(d, false)
		}
	}

	chosen, dupes := pickOnePerPeer(candidates)
	problems = append(problems, dupes...)
	for _, c := range chosen {
		out = append(out, controller(c, nodes, inv.productID(c.peer, c.device)))
	}
	slices.SortFunc(out, func(a, b dra.Device) int { return cmp.Compare(a.Name, b.Name) })
	return out, problems
}

// pickOnePerPeer keeps one candidate per peer address, because a device
// name must be unique in the pool. A peer paired with two adapters is
// published from the one that is reported now, then the one it is
// connected through, then the lowest object path; the others are named in
// a problem.
func pickOnePerPeer(cs []candidate) ([]candidate, []error) {
	better := func(a, b candidate) int {
		if a.live != b.live {
			if a.live {
				return -1
			}
			return 1
		}
		if a.device.Connected != b.device.Connected {
			if a.device.Connected {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.device.Path, b.device.Path)
	}
	slices.SortStableFunc(cs, func(a, b candidate) int {
		if c := cmp.Compare(a.peer.Key(), b.peer.Key()); c != 0 {
			return c
		}
		return better(a, b)
	})
	var out []candidate
	var problems []error
	for i, c := range cs {
		if i > 0 && cs[i-1].peer == c.peer {
			kept := out[len(out)-1]
			problems = append(problems, fmt.Errorf("device %s: %s is also paired as %s; publishing that one", c.device.Path, c.peer, kept.device.Path))
			continue
		}
		out = append(out, c)
	}
	return out, problems
}

// controller builds one paired device's DRA device.
func controller(c candidate, nodes InputNodes, id productID) dra.Device {
	connected := c.live && c.device.Connected
	dev := dra.Device{
		Name:                     ControllerName(c.peer),
		Attributes:               controllerAttributes(c.peer, c.device, connected),
		Capacity:                 consumers(),
		AllowMultipleAllocations: true,
	}
	if id.known() {
		vendor, product := id.attributes()
		dev.Attributes["vendor"], dev.Attributes["product"] = dra.String(vendor), dra.String(product)
	}
	if !connected {
		dev.Taints = append(dev.Taints, dra.Taint{Key: TaintDisconnected, Effect: dra.TaintNoExecute})
	}
	// Off the air a controller has no input node to give. A gamepad's
	// HID device ends with its link: the kernel's HIDP session takes it
	// down (hidp_session_remove, net/bluetooth/hidp/core.c, then
	// evdev_disconnect frees its minor), and since BlueZ 5.77 bluetoothd
	// destroys its own uhid device on disconnection for anything but a
	// keyboard (commit e4f6c68f2, "Force destroy for non-keyboard
	// devices"). Only a keyboard may keep one across disconnections
	// (input.conf's UserspaceHID=persist, BlueZ 5.79, documented for
	// keyboards), and a node sysfs still lists for a device off the air
	// reads nothing until the device is back: so a disconnected
	// controller counts as having none, whatever sysfs lists.
	// A controller the input relay knows is the exception while it is
	// off the air: a claim in relay mode gets its virtual devices then,
	// and they read once it wakes. (A claim in direct mode that
	// tolerates TaintDisconnected may then start with no node; see
	// docs/gamepad.md.)
	hasNode := hasEvdevNode(nodes, c.peer.String(), c.adapter)
	if ExpectsInput(c.device) && ((!connected && !c.relayable) || (connected && !hasNode)) {
		dev.Taints = append(dev.Taints, dra.Taint{Key: TaintNoInputNode, Effect: dra.TaintNoSchedule})
	}
	dev.Problem = controllerProblem(c, connected, hasNode)
	dev.StatusData = controllerStatus(c, connected)
	return dev
}

func hasEvdevNode(nodes InputNodes, peer, adapter string) bool {
	if nodes == nil {
		return false
	}
	return slices.ContainsFunc(nodes.EventNodes(peer, adapter), isEvdevNode)
}

// mediaBus builds an adapter's media bus device. It never carries input or
// connected attributes, so no controller class can select it.
func mediaBus(adapter bdaddr.Address, live bool) dra.Device {
	dev := dra.Device{
		Name: MediaBusName(adapter),
		Attributes: dra.Attributes{
			"address":         dra.String(adapter.String()),
			"kind":            dra.String(mediaBusKind),
			attrSupportsSound: dra.Bool(true),
		},
		StatusData: mediaBusStatus(adapter.String(), live),
	}
	if !live {
		dev.Taints = []dra.Taint{{Key: TaintDisconnected, Effect: dra.TaintNoSchedule}}
		dev.Problem = ProblemAdapterGone
	}
	return dev
}
