// SPDX-License-Identifier: Apache-2.0

package bluetooth

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/godbus/dbus/v5"
	"github.com/google/go-cmp/cmp"
	"github.com/liken-sh/operators/internal/bdaddr"
	"github.com/liken-sh/operators/internal/bluez"
	"github.com/liken-sh/operators/internal/dra"
)

// flat is a device as a test compares it: attribute values by name,
// taints as "key:Effect", and its problem.
type flat struct {
	Attrs   map[string]any
	Taints  []string
	Problem string
}

func flatten(d dra.Device) flat {
	f := flat{Attrs: map[string]any{}}
	for k, v := range d.Attributes {
		switch {
		case v.StringValue != nil:
			f.Attrs[string(k)] = *v.StringValue
		case v.IntValue != nil:
			f.Attrs[string(k)] = *v.IntValue
		case v.BoolValue != nil:
			f.Attrs[string(k)] = *v.BoolValue
		case v.VersionValue != nil:
			f.Attrs[string(k)] = "version " + *v.VersionValue
		}
	}
	for _, t := range d.Taints {
		f.Taints = append(f.Taints, t.Key+":"+string(t.Effect))
	}
	f.Problem = d.Problem
	return f
}

func byName(t *testing.T, devs []dra.Device) map[string]flat {
	t.Helper()
	out := map[string]flat{}
	for _, d := range devs {
		if _, dup := out[d.Name]; dup {
			t.Fatalf("device %q published twice", d.Name)
		}
		out[d.Name] = flatten(d)
	}
	return out
}

const (
	hci0        = dbus.ObjectPath("/org/bluez/hci0")
	hci0Address = "00:1A:7D:DA:71:13"
	hci0Bus     = "00-1a-7d-da-71-13-media"
)

var adapter0 = bluez.Adapter{Path: hci0, Address: hci0Address, Alias: "node-a", Powered: true, Connectable: true}

// speaker is a Bluetooth loudspeaker as BlueZ reports one: class 0x240414
// (services audio and rendering; audio-video / loudspeaker), A2DP sink,
// AVRCP both roles, hands-free and headset.
func speaker(connected bool) bluez.Device {
	return bluez.Device{
		Path: "/org/bluez/hci0/dev_A0_AB_51_33_B7_12", Adapter: hci0, Address: "A0:AB:51:33:B7:12",
		AddressType: "public", Name: "Flip 5", Alias: "Living room", Paired: true, Bonded: true,
		Connected: connected, Trusted: true, Class: 0x240414, Icon: "audio-card",
		Modalias: "bluetooth:v000Ap0001d0100",
		UUIDs: []string{
			"00001108-0000-1000-8000-00805f9b34fb", "0000110b-0000-1000-8000-00805f9b34fb",
			"0000110c-0000-1000-8000-00805f9b34fb", "0000110e-0000-1000-8000-00805f9b34fb",
			"0000111e-0000-1000-8000-00805f9b34fb", "00001200-0000-1000-8000-00805f9b34fb",
		},
	}
}

// padAttrs are the attributes published for nesPad(connected).
func padAttrs(connected bool) map[string]any {
	return map[string]any{
		"address": padAddress, "name": "8Bitdo NES30 Pro", "connected": connected,
		"classOfDevice": int64(0x002508), "majorClass": "peripheral", "minorClass": "gamepad",
		"modalias": "usb:v2DC8p3820d0100", "icon": "input-gaming", "addressType": "public",
		"input": true, "vendor": "2dc8", "product": "3820",
	}
}

// speakerAttrs are the attributes published for speaker(connected).
func speakerAttrs(connected bool) map[string]any {
	return map[string]any{
		"address": "A0:AB:51:33:B7:12", "name": "Living room", "connected": connected,
		"classOfDevice": int64(0x240414), "majorClass": "audio-video", "minorClass": "loudspeaker",
		"serviceAudio": true, "serviceRendering": true,
		"modalias": "bluetooth:v000Ap0001d0100", "icon": "audio-card", "addressType": "public",
		"vendor": "000a", "product": "0001",
		"audioSink": true, "avrcpTarget": true, "avrcpController": true, "handsfree": true, "headset": true,
	}
}

var (
	disconnected = TaintDisconnected + ":NoExecute"
	noInputNode  = TaintNoInputNode + ":NoSchedule"
)

func TestControllers(t *testing.T) {
	padNodes := NodeMap{padAddress: {"/dev/input/event18"}}
	tests := []struct {
		name   string
		device bluez.Device
		nodes  InputNodes
		want   flat
	}{{
		name:   "8BitDo NES30 Pro, connected, with its event node",
		device: nesPad(t, true),
		nodes:  padNodes,
		want:   flat{Attrs: padAttrs(true)},
	}, {
		name:   "8BitDo NES30 Pro, connected, only a joystick node",
		device: nesPad(t, true),
		nodes:  NodeMap{padAddress: {"/dev/input/js0"}},
		want:   flat{Attrs: padAttrs(true), Taints: []string{noInputNode}, Problem: ProblemNoInputNode},
	}, {
		name:   "8BitDo NES30 Pro, off the air",
		device: nesPad(t, false),
		nodes:  NodeMap{},
		want:   flat{Attrs: padAttrs(false), Taints: []string{disconnected, noInputNode}, Problem: ProblemAsleep},
	}, {
		// Disconnected while sysfs still lists its node (a uhid device
		// kept across the disconnection, as UserspaceHID=persist keeps a
		// keyboard's, or a removal not seen yet): the node reads nothing.
		name:   "8BitDo NES30 Pro, asleep, a node still listed",
		device: nesPad(t, false),
		nodes:  padNodes,
		want:   flat{Attrs: padAttrs(false), Taints: []string{disconnected, noInputNode}, Problem: ProblemAsleep},
	}, {
		// LE: no class, a HID appearance, and a services list that holds
		// only a bare "00001800", which is no UUID; the appearance alone
		// says it should have input nodes.
		name:   "Razer Basilisk X HyperSpeed, connected, HID not registered",
		device: basilisk(t, true),
		nodes:  padNodes,
		want: flat{Attrs: map[string]any{
			"address": mouseAddress, "name": "Basilisk X HyperSpeed", "connected": true,
			"appearance": int64(0x03c2), "modalias": "usb:v1532p0082d0001", "icon": "input-mouse",
			"addressType": "random", "vendor": "1532", "product": "0082",
		}, Taints: []string{noInputNode}, Problem: ProblemNoInputNode},
	}, {
		name: "Razer Basilisk X HyperSpeed over HID over GATT, with nodes",
		device: func() bluez.Device {
			d := basilisk(t, true)
			d.UUIDs = append(d.UUIDs, "00001812-0000-1000-8000-00805F9B34FB", "0000180f-0000-1000-8000-00805f9b34fb")
			return d
		}(),
		nodes: NodeMap{mouseAddress: {"/dev/input/event7", "/dev/input/event8"}},
		want: flat{Attrs: map[string]any{
			"address": mouseAddress, "name": "Basilisk X HyperSpeed", "connected": true,
			"appearance": int64(0x03c2), "modalias": "usb:v1532p0082d0001", "icon": "input-mouse",
			"addressType": "random", "vendor": "1532", "product": "0082", "input": true, "battery": true,
		}},
	}, {
		name:   "speaker, connected: no input node expected",
		device: speaker(true),
		want:   flat{Attrs: speakerAttrs(true)},
	}, {
		name:   "speaker, disconnected",
		device: speaker(false),
		want:   flat{Attrs: speakerAttrs(false), Taints: []string{disconnected}, Problem: ProblemNotConnected},
	}, {
		// A receiver of the kind the attribute rules were written for.
		name: "B06+ receiver",
		device: bluez.Device{
			Path: "/org/bluez/hci0/dev_00_0D_18_A1_B2_C3", Adapter: hci0, Address: "00:0D:18:A1:B2:C3",
			Paired: true, Connected: true, Class: 0x2c0418,
			UUIDs: []string{
				"0000110b-0000-1000-8000-00805f9b34fb", "0000110a-0000-1000-8000-00805f9b34fb",
				"0000110c-0000-1000-8000-00805f9b34fb", "0000110f-0000-1000-8000-00805f9b34fb",
				"00001101-0000-1000-8000-00805f9b34fb",
			},
		},
		want: flat{Attrs: map[string]any{
			"address": "00:0D:18:A1:B2:C3", "connected": true,
			"classOfDevice": int64(0x2c0418), "majorClass": "audio-video", "minorClass": "headphones",
			"serviceAudio": true, "serviceRendering": true, "serviceCapturing": true,
			"audioSink": true, "audioSource": true, "avrcpTarget": true, "avrcpController": true, "serialPort": true,
		}},
	}, {
		// BlueZ makes the alias up from the address when the device never
		// told its name; an empty icon or modalias is unknown, not "".
		name: "nameless device with empty strings",
		device: bluez.Device{
			Path: "/org/bluez/hci0/dev_11_22_33_44_55_66", Adapter: hci0, Address: "11:22:33:44:55:66",
			Alias: "11-22-33-44-55-66", Paired: true, Connected: true, Icon: "  ", Modalias: "",
		},
		want: flat{Attrs: map[string]any{"address": "11:22:33:44:55:66", "connected": true}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			devs, problems := Build(bluez.Objects{Adapters: []bluez.Adapter{adapter0}, Devices: []bluez.Device{tt.device}}, tt.nodes)
			if len(problems) > 0 {
				t.Errorf("problems: %v", problems)
			}
			got := byName(t, devs)
			name := strings.ToLower(strings.ReplaceAll(tt.device.Address, ":", "-"))
			if diff := cmp.Diff(got[name], tt.want); diff != "" {
				t.Errorf("got[name] (-got[name] +tt.want):\n%s", diff)
			}
			if len(got) != 2 {
				t.Errorf("published %d devices, want the controller and the media bus", len(got))
			}
			for _, d := range devs {
				if err := checkAPIDevice(d); err != nil {
					t.Error(err)
				}
			}
		})
	}
}

func TestOnlyPairedDevicesAndOneMediaBusPerAdapter(t *testing.T) {
	hci1 := dbus.ObjectPath("/org/bluez/hci1")
	seen := bluez.Device{Path: "/org/bluez/hci0/dev_22_33_44_55_66_77", Adapter: hci0, Address: "22:33:44:55:66:77", Name: "Neighbour's phone", Connected: true}
	bondedOnly := bluez.Device{Path: "/org/bluez/hci1/dev_33_44_55_66_77_88", Adapter: hci1, Address: "33:44:55:66:77:88", Bonded: true}
	objs := bluez.Objects{
		Adapters: []bluez.Adapter{adapter0, {Path: hci1, Address: "5C:F3:70:00:00:01"}},
		Devices:  []bluez.Device{nesPad(t, false), speaker(true), seen, bondedOnly},
	}
	devs, problems := Build(objs, nil)
	if len(problems) > 0 {
		t.Errorf("problems: %v", problems)
	}
	var names []string
	for _, d := range devs {
		names = append(names, d.Name)
	}
	want := []string{hci0Bus, "33-44-55-66-77-88", "5c-f3-70-00-00-01-media", "a0-ab-51-33-b7-12", "e4-17-d8-c5-67-6d"}
	if diff := cmp.Diff(names, want); diff != "" {
		t.Errorf("names = (-names +want):\n%s", diff)
	}
	bus := byName(t, devs)[hci0Bus]
	wantBus := flat{Attrs: map[string]any{"address": hci0Address, "kind": "mediaBus", "sound.liken.sh/supportsSound": true}}
	if diff := cmp.Diff(bus, wantBus); diff != "" {
		t.Errorf("media bus: got (-bus +wantBus):\n%s", diff)
	}
	for _, d := range devs {
		if err := checkAPIDevice(d); err != nil {
			t.Error(err)
		}
	}
}

// recordingNodes answers from a map and records the adapters asked about.
type recordingNodes struct {
	nodes    NodeMap
	adapters map[string]string
}

func (r *recordingNodes) EventNodes(address, adapter string) []string {
	r.adapters[address] = adapter
	return r.nodes[address]
}

func TestInputNodesAreAskedPerAdapter(t *testing.T) {
	rec := &recordingNodes{nodes: NodeMap{padAddress: {"/dev/input/event3"}}, adapters: map[string]string{}}
	devs, _ := Build(bluez.Objects{Adapters: []bluez.Adapter{adapter0}, Devices: []bluez.Device{nesPad(t, true)}}, rec)
	if rec.adapters[padAddress] != hci0Address {
		t.Errorf("asked for nodes on adapter %q, want %q", rec.adapters[padAddress], hci0Address)
	}
	if f := byName(t, devs)["e4-17-d8-c5-67-6d"]; len(f.Taints) != 0 {
		t.Errorf("taints %v with a node present", f.Taints)
	}
}

func TestDepartedAdapterStaysPublishedTainted(t *testing.T) {
	var inv Inventory
	nodes := NodeMap{padAddress: {"/dev/input/event18"}}
	inv.Observe(bluez.Objects{Adapters: []bluez.Adapter{adapter0}, Devices: []bluez.Device{nesPad(t, true), speaker(true)}})
	before, _ := inv.Devices(nodes)
	for _, d := range before {
		if len(d.Taints) > 0 {
			t.Fatalf("%s tainted before the adapter left: %v", d.Name, d.Taints)
		}
	}

	// bluetoothd reports no adapter (the radio was unplugged); the kernel
	// dropped the HID device with it.
	inv.Observe(bluez.Objects{})
	if got := inv.Departed(); !reflect.DeepEqual(got, []string{hci0Address}) {
		t.Errorf("Departed() = %v", got)
	}
	after, problems := inv.Devices(NodeMap{})
	if len(problems) > 0 {
		t.Errorf("problems: %v", problems)
	}
	got := byName(t, after)
	if len(got) != 3 {
		t.Fatalf("devices after departure: %v", got)
	}
	if taints := got[hci0Bus].Taints; !reflect.DeepEqual(taints, []string{TaintDisconnected + ":NoSchedule"}) {
		t.Errorf("media bus taints %v", taints)
	}
	pad := got["e4-17-d8-c5-67-6d"]
	if pad.Attrs["connected"] != false || !reflect.DeepEqual(pad.Taints, []string{disconnected, noInputNode}) {
		t.Errorf("pad after departure: %v", pad)
	}
	spk := got["a0-ab-51-33-b7-12"]
	if spk.Attrs["connected"] != false || !reflect.DeepEqual(spk.Taints, []string{disconnected}) {
		t.Errorf("speaker after departure: %v", spk)
	}
	for _, name := range []string{hci0Bus, "e4-17-d8-c5-67-6d", "a0-ab-51-33-b7-12"} {
		if p := got[name].Problem; p != ProblemAdapterGone {
			t.Errorf("%s after departure: problem %q, want %q", name, p, ProblemAdapterGone)
		}
	}

	// A second pass without the adapter keeps the same set.
	inv.Observe(bluez.Objects{})
	again, _ := inv.Devices(NodeMap{})
	if diff := cmp.Diff(byName(t, again), got); diff != "" {
		t.Errorf("second pass differs (-byName(t +again), got):\n%s", diff)
	}

	// The radio comes back at another index with the same address.
	back := adapter0
	back.Path = "/org/bluez/hci1"
	pad1 := nesPad(t, true)
	pad1.Path, pad1.Adapter = "/org/bluez/hci1/dev_E4_17_D8_C5_67_6D", back.Path
	inv.Observe(bluez.Objects{Adapters: []bluez.Adapter{back}, Devices: []bluez.Device{pad1}})
	if got := inv.Departed(); len(got) != 0 {
		t.Errorf("Departed() = %v after the adapter came back", got)
	}
	final, _ := inv.Devices(nodes)
	names := slices.Collect(func(yield func(string) bool) {
		for _, d := range final {
			if !yield(d.Name) {
				return
			}
			if len(d.Taints) > 0 {
				t.Errorf("%s still tainted: %v", d.Name, d.Taints)
			}
		}
	})
	if !reflect.DeepEqual(names, []string{hci0Bus, "e4-17-d8-c5-67-6d"}) {
		t.Errorf("after return: %v (the speaker is not paired on the returned adapter's read)", names)
	}
}

func TestAPeerPairedWithTwoAdaptersIsPublishedOnce(t *testing.T) {
	hci1 := bluez.Adapter{Path: "/org/bluez/hci1", Address: "5C:F3:70:00:00:01", Powered: true}
	on0 := nesPad(t, false)
	on1 := nesPad(t, true)
	on1.Path, on1.Adapter = "/org/bluez/hci1/dev_E4_17_D8_C5_67_6D", hci1.Path
	devs, problems := Build(bluez.Objects{Adapters: []bluez.Adapter{adapter0, hci1}, Devices: []bluez.Device{on0, on1}}, NodeMap{padAddress: {"/dev/input/event4"}})
	got := byName(t, devs)
	pad := got["e4-17-d8-c5-67-6d"]
	if pad.Attrs["connected"] != true || len(pad.Taints) != 0 {
		t.Errorf("published the disconnected copy: %v", pad)
	}
	if len(problems) != 1 || !strings.Contains(problems[0].Error(), string(on0.Path)) || !strings.Contains(problems[0].Error(), string(on1.Path)) {
		t.Errorf("problems = %v, want one naming both paths", problems)
	}
}

func TestBadAddressesAreReportedAndSkipped(t *testing.T) {
	bad := speaker(true)
	bad.Address = "A0:AB:51:33:B7"
	zero := bluez.Adapter{Path: "/org/bluez/hci1", Address: "00:00:00:00:00:00"}
	devs, problems := Build(bluez.Objects{Adapters: []bluez.Adapter{adapter0, zero}, Devices: []bluez.Device{bad, nesPad(t, true)}}, nil)
	names := map[string]bool{}
	for _, d := range devs {
		names[d.Name] = true
	}
	if len(devs) != 2 || !names[hci0Bus] || !names["e4-17-d8-c5-67-6d"] {
		t.Errorf("published %v", names)
	}
	if len(problems) != 2 {
		t.Fatalf("problems = %v, want two", problems)
	}
	text := errors.Join(problems...).Error()
	for _, want := range []string{"/org/bluez/hci1", "00:00:00:00:00:00", string(bad.Path), "A0:AB:51:33:B7"} {
		if !strings.Contains(text, want) {
			t.Errorf("problems %q do not name %q", text, want)
		}
	}
}

// BenchmarkBuild: one pass over an adapter with 62 paired devices, the
// most a slice holds beside the media bus.
func BenchmarkBuild(b *testing.B) {
	objs := bluez.Objects{Adapters: []bluez.Adapter{adapter0}}
	nodes := NodeMap{}
	for i := range 62 {
		d := speaker(i%2 == 0)
		d.Address = fmt.Sprintf("A0:AB:51:33:B7:%02X", i)
		d.Path = dbus.ObjectPath(fmt.Sprintf("/org/bluez/hci0/dev_A0_AB_51_33_B7_%02X", i))
		d.UUIDs = append(d.UUIDs, "00001124-0000-1000-8000-00805f9b34fb")
		objs.Devices = append(objs.Devices, d)
		nodes[d.Address] = []string{fmt.Sprintf("/dev/input/event%d", i)}
	}
	var inv Inventory
	for b.Loop() {
		inv.Observe(objs)
		devs, _ := inv.Devices(nodes)
		if len(devs) != 63 {
			b.Fatalf("%d devices", len(devs))
		}
	}
}

// A pad the input relay knows is not tainted no-input-node while it
// sleeps (a claim in relay mode gets its devices then); one it does not
// know still is, and a connected pad without a node still is.
func TestRelayableSleepingPad(t *testing.T) {
	adapter := bluez.Adapter{Path: "/org/bluez/hci0", Address: "00:1A:7D:DA:71:13", Powered: true}
	pad := bluez.Device{Path: "/org/bluez/hci0/dev_E4_17_D8_C5_67_6D", Adapter: adapter.Path, Address: "E4:17:D8:C5:67:6D",
		Paired: true, Bonded: true, Class: 0x002508, UUIDs: []string{"00001124-0000-1000-8000-00805f9b34fb"}}
	taints := func(inv *Inventory, connected bool) []string {
		d := pad
		d.Connected = connected
		inv.Observe(bluez.Objects{Adapters: []bluez.Adapter{adapter}, Devices: []bluez.Device{d}})
		devices, _ := inv.Devices(NodeMap{})
		for _, dev := range devices {
			if dev.Name == ControllerName(bdaddr.MustParse(pad.Address)) {
				var out []string
				for _, t := range dev.Taints {
					out = append(out, t.Key)
				}
				return out
			}
		}
		t.Fatal("the pad is not published")
		return nil
	}
	var inv Inventory
	if got := taints(&inv, false); !slices.Contains(got, TaintNoInputNode) {
		t.Errorf("a sleeping pad the relay does not know: taints %q, want %s", got, TaintNoInputNode)
	}
	inv.SetRelayable([]bdaddr.Address{bdaddr.MustParse(pad.Address)})
	if got := taints(&inv, false); slices.Contains(got, TaintNoInputNode) || !slices.Contains(got, TaintDisconnected) {
		t.Errorf("a sleeping pad the relay knows: taints %q, want %s and not %s", got, TaintDisconnected, TaintNoInputNode)
	}
	if got := taints(&inv, true); !slices.Contains(got, TaintNoInputNode) {
		t.Errorf("a connected pad with no node yet: taints %q, want %s", got, TaintNoInputNode)
	}
}
