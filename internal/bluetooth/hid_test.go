// SPDX-License-Identifier: Apache-2.0

package bluetooth

import (
	"context"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/liken-sh/operators/internal/bluez"
	"github.com/liken-sh/operators/internal/hid"
	cdispec "tags.cncf.io/container-device-interface/specs-go"
)

// The HID discovery's scan is what the operator passes as InputNodes and
// what its NodeSource walks.
var (
	_ InputNodes = hid.Scan{}
	_ EvdevNodes = hid.Scan{}
)

func TestHIDScanAsInputNodes(t *testing.T) {
	// The pad as the kernel's HIDP registers it (hid/testdata/sysfs.dump):
	// an evdev node and a joystick node, on this operator's adapter; and a
	// stale registration of the same peer on another adapter.
	scan := hid.Scan{Devices: []hid.Device{
		{Address: padAddress, Adapter: hci0Address, SysName: "0005:2DC8:3820.0006", Nodes: []hid.Node{{Path: "/dev/input/event5", Major: 13, Minor: 69}}},
		{Address: padAddress, Adapter: "5C:F3:70:00:00:01", SysName: "0005:2DC8:3820.0007", Nodes: []hid.Node{{Path: "/dev/input/event9", Major: 13, Minor: 73}}},
	}}
	devs, problems := Build(bluez.Objects{Adapters: []bluez.Adapter{adapter0}, Devices: []bluez.Device{nesPad(t, true)}}, scan)
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	if pad := byName(t, devs)["e4-17-d8-c5-67-6d"]; len(pad.Taints) != 0 {
		t.Errorf("pad with a node on its adapter is tainted %v", pad.Taints)
	}

	// Only the other adapter's registration: the pad has no node here.
	other := hid.Scan{Devices: scan.Devices[1:]}
	devs, _ = Build(bluez.Objects{Adapters: []bluez.Adapter{adapter0}, Devices: []bluez.Device{nesPad(t, true)}}, other)
	if pad := byName(t, devs)["e4-17-d8-c5-67-6d"]; !reflect.DeepEqual(pad.Taints, []string{noInputNode}) {
		t.Errorf("pad with a node only on another adapter: taints %v", pad.Taints)
	}

	// Prepare walks without the adapter filter (a claim names a peer, not
	// a radio) and gives every evdev node of the peer.
	edits, err := Prepare(deliver(func(context.Context) (EvdevNodes, error) { return scan, nil }))(context.Background(), request("e4-17-d8-c5-67-6d"))
	if err != nil {
		t.Fatal(err)
	}
	want := []*cdispec.DeviceNode{{Path: "/dev/input/event5", Type: "c", Major: 13, Minor: 69}, {Path: "/dev/input/event9", Type: "c", Major: 13, Minor: 73}}
	if diff := cmp.Diff(edits.DeviceNodes, want); diff != "" {
		t.Errorf("prepared nodes (-edits.DeviceNodes +want):\n%s", diff)
	}
}
