// SPDX-License-Identifier: Apache-2.0

package bluetooth

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/liken-sh/operators/internal/bdaddr"
	"github.com/liken-sh/operators/internal/dra"
	"github.com/liken-sh/operators/internal/hid"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/json"
	"tags.cncf.io/container-device-interface/pkg/cdi"
	cdispec "tags.cncf.io/container-device-interface/specs-go"
)

func request(device string) dra.DeviceRequest[Params] {
	return dra.DeviceRequest[Params]{
		Claim:  &resourceapi.ResourceClaim{},
		Result: resourceapi.DeviceRequestAllocationResult{Driver: DriverName, Pool: "node-a", Device: device, Request: "pad"},
	}
}

// publishes is a Published that knows names.
func publishes(names ...string) Published {
	return func(name string) bool { return slices.Contains(names, name) }
}

// published is what the prepare tests' operator published: the pad and
// hci0's media bus.
var published = publishes("e4-17-d8-c5-67-6d", hci0Bus)

// numbered is EvdevNodes from a map of peer address to nodes.
type numbered map[string][]hid.Node

func (m numbered) Nodes(address, _ string) []hid.Node { return m[address] }

func fixedNodes(m numbered, err error) NodeSource {
	return func(context.Context) (EvdevNodes, error) { return m, err }
}

// ev is /dev/input/eventN at evdev's number for it.
func ev(n uint32) hid.Node {
	return hid.Node{Path: fmt.Sprintf("/dev/input/event%d", n), Major: hid.InputMajor, Minor: 64 + n}
}

func deliver(nodes NodeSource) Delivery { return Delivery{Published: published, Nodes: nodes} }

func validate(t *testing.T, e dra.ContainerEdits) {
	t.Helper()
	if err := (&cdi.ContainerEdits{ContainerEdits: &e}).Validate(); err != nil {
		t.Errorf("CDI refuses the edits: %v", err)
	}
}

// padEnv is the pad's two variables.
func padEnv(nodes, mode string) []string {
	return []string{"LIKEN_BLUETOOTH_INPUT_E4_17_D8_C5_67_6D=" + nodes, "LIKEN_BLUETOOTH_DELIVERY_E4_17_D8_C5_67_6D=" + mode}
}

func TestPrepareController(t *testing.T) {
	nodes := numbered{padAddress: {
		ev(19), {Path: "/dev/input/js0", Major: 13, Minor: 0}, ev(18), {Path: "/dev/hidraw3", Major: 242, Minor: 3}, ev(18),
		{Path: "/dev/input/../input/event5", Major: 13, Minor: 69}, {Path: "input/event6", Major: 13, Minor: 70},
		{Path: "/dev/input/mouse2", Major: 13, Minor: 34},
		{Path: "/dev/input/event7", Major: 8, Minor: 0},                                                      // a disk's number under an evdev name
		{Path: "/dev/input/event9", Major: 13, Minor: 73}, {Path: "/dev/input/event9", Major: 13, Minor: 80}, // one path, two numbers
		{Path: "/dev/input/event10", Major: 13, Minor: 74}, {Path: "/host/dev/input/event10", Major: 13, Minor: 74}, // two roots, one container path
	}}
	edits, err := Prepare(deliver(fixedNodes(nodes, nil)))(context.Background(), request("e4-17-d8-c5-67-6d"))
	if err != nil {
		t.Fatal(err)
	}
	want := dra.ContainerEdits{
		DeviceNodes: []*cdispec.DeviceNode{
			{Path: "/dev/input/event18", Type: "c", Major: 13, Minor: 82},
			{Path: "/dev/input/event19", Type: "c", Major: 13, Minor: 83},
		},
		Env: padEnv("/dev/input/event18 /dev/input/event19", "direct"),
	}
	if diff := cmp.Diff(edits, want); diff != "" {
		t.Errorf("edits (-edits +want):\n%s", diff)
	}
	validate(t, edits)
}

func TestPrepareControllerUnderAnotherDeviceRoot(t *testing.T) {
	nodes := numbered{padAddress: {{Path: "/tmp/root/dev/input/event3", Major: 13, Minor: 67}}}
	edits, err := Prepare(deliver(fixedNodes(nodes, nil)))(context.Background(), request("e4-17-d8-c5-67-6d"))
	if err != nil {
		t.Fatal(err)
	}
	want := []*cdispec.DeviceNode{{Path: "/dev/input/event3", HostPath: "/tmp/root/dev/input/event3", Type: "c", Major: 13, Minor: 67}}
	if diff := cmp.Diff(edits.DeviceNodes, want); diff != "" {
		t.Errorf("nodes: got (-edits.DeviceNodes +want):\n%s", diff)
	}
}

func TestPrepareFailures(t *testing.T) {
	walkErr := errors.New("sysfs unreadable")
	tests := []struct {
		name   string
		device string
		nodes  NodeSource
		want   string
	}{
		{"no node", "e4-17-d8-c5-67-6d", fixedNodes(numbered{}, nil), "controller E4:17:D8:C5:67:6D registers no input node right now"},
		{"only a joystick node", "e4-17-d8-c5-67-6d", fixedNodes(numbered{padAddress: {{Path: "/dev/input/js0", Major: 13}}}, nil), "registers no input node"},
		{"only a number that is not evdev's", "e4-17-d8-c5-67-6d", fixedNodes(numbered{padAddress: {{Path: "/dev/input/event0", Major: 8}}}, nil), "registers no input node"},
		{"nil answer", "e4-17-d8-c5-67-6d", func(context.Context) (EvdevNodes, error) { return nil, nil }, "registers no input node"},
		{"no node source", "e4-17-d8-c5-67-6d", nil, "controller E4:17:D8:C5:67:6D: no way to look for its input nodes"},
		{"walk fails", "e4-17-d8-c5-67-6d", fixedNodes(nil, walkErr), "controller E4:17:D8:C5:67:6D: looking for its input nodes: sysfs unreadable"},
		{"foreign name", "card0", fixedNodes(numbered{}, nil), `device "card0" is not a name bluetooth.liken.sh publishes`},
	}
	for _, tt := range tests {
		_, err := Prepare(deliver(tt.nodes))(context.Background(), request(tt.device))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want %q", tt.name, err, tt.want)
		}
	}
}

// A well-formed name is not enough: only the devices of the published set
// are prepared, and nothing is walked for the others.
func TestPrepareRefusesNamesNotPublished(t *testing.T) {
	walked := false
	nodes := func(context.Context) (EvdevNodes, error) {
		walked = true
		// The host has HID nodes for a peer this bluetoothd never paired.
		return numbered{"A0:AB:51:33:B7:12": {ev(3)}}, nil
	}
	for _, tc := range []struct {
		name      string
		published Published
		device    string
	}{
		{"broadcast address's media bus", published, "ff-ff-ff-ff-ff-ff-media"},
		{"zero address's media bus", published, "00-00-00-00-00-00-media"},
		{"another adapter's media bus", published, "5c-f3-70-00-00-01-media"},
		{"HID device on the host, not paired here", published, "a0-ab-51-33-b7-12"},
		{"the pad's address as a media bus", published, "e4-17-d8-c5-67-6d-media"},
		{"nothing published yet", nil, "e4-17-d8-c5-67-6d"},
		{"an empty set", publishes(), hci0Bus},
	} {
		_, err := Prepare(Delivery{Published: tc.published, Nodes: nodes})(context.Background(), request(tc.device))
		want := `device "` + tc.device + `" is not one this operator publishes`
		if err == nil || err.Error() != want {
			t.Errorf("%s: err = %v, want %q", tc.name, err, want)
		}
	}
	if walked {
		t.Error("sysfs was walked for a device that is not published")
	}
}

func TestPrepareMediaBus(t *testing.T) {
	walked := false
	nodes := func(context.Context) (EvdevNodes, error) { walked = true; return numbered{}, nil }
	req := request(hci0Bus)
	req.Params.Mode = ModeDirect // ignored on a media bus
	edits, err := Prepare(deliver(nodes))(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	want := dra.ContainerEdits{
		Env: []string{"DBUS_SYSTEM_BUS_ADDRESS=unix:path=/var/run/bluetooth.liken.sh/dbus/system_bus_socket"},
		Mounts: []*cdispec.Mount{{
			HostPath: "/var/run/bluetooth.liken.sh/dbus", ContainerPath: "/var/run/bluetooth.liken.sh/dbus",
			Type: "bind", Options: []string{"ro", "rbind", "rprivate", "nosuid", "nodev"},
		}},
	}
	if diff := cmp.Diff(edits, want); diff != "" {
		t.Errorf("edits (-edits +want):\n%s", diff)
	}
	if walked {
		t.Error("the media bus walked sysfs")
	}
	validate(t, edits)
	// Each call gets its own options slice: the core may keep the edits.
	edits.Mounts[0].Options[0] = "rw"
	if MediaBusEdits().Mounts[0].Options[0] != "ro" {
		t.Error("MediaBusEdits shares its options")
	}
}

// The driver core decodes opaque parameters with sigs.k8s.io/json's strict
// mode, then Validate: Params take mode and nothing else, and mode only
// relay, direct or nothing.
func TestParams(t *testing.T) {
	decode := func(raw string) (Params, error) {
		var p Params
		strict, err := json.UnmarshalStrict([]byte(raw), &p, json.DisallowUnknownFields)
		if err == nil && len(strict) > 0 {
			err = strict[0]
		}
		if err == nil {
			err = p.Validate()
		}
		return p, err
	}
	for raw, want := range map[string]string{`{}`: "", `{"mode":"relay"}`: ModeRelay, `{"mode":"direct"}`: ModeDirect, `{"mode":""}`: ""} {
		if p, err := decode(raw); err != nil || p.Mode != want {
			t.Errorf("%s: %+v, %v; want mode %q", raw, p, err, want)
		}
	}
	for raw, want := range map[string]string{
		`{"nodes":"all"}`:                             `unknown field "nodes"`,
		`{"mode":"Direct"}`:                           `mode "Direct" is not a delivery mode of bluetooth.liken.sh: use "relay" (the default) or "direct"`,
		`{"mode":"uinput"}`:                           `mode "uinput" is not a delivery mode of bluetooth.liken.sh: use "relay" (the default) or "direct"`,
		`{"mode":"` + strings.Repeat("x", 100) + `"}`: `mode "` + strings.Repeat("x", 64) + `..." is not a delivery mode`,
	} {
		if _, err := decode(raw); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", raw, err, want)
		}
	}
}

// fakeRelay is a Relay that gives each claim one node of its own.
type fakeRelay struct {
	asked []string
	err   error
}

func (r *fakeRelay) Nodes(_ context.Context, claim types.UID, address bdaddr.Address) ([]hid.Node, error) {
	r.asked = append(r.asked, string(claim)+" "+address.String())
	return []hid.Node{ev(40)}, r.err
}

// Relay mode takes the relay's nodes when there is a relay and the
// controller's own when there is none, and says which; direct mode never
// asks the relay.
func TestPrepareModes(t *testing.T) {
	own := fixedNodes(numbered{padAddress: {ev(5)}}, nil)
	ownEdits := dra.ContainerEdits{
		DeviceNodes: []*cdispec.DeviceNode{{Path: "/dev/input/event5", Type: "c", Major: 13, Minor: 69}},
		Env:         padEnv("/dev/input/event5", "direct"),
	}
	relayEdits := dra.ContainerEdits{
		DeviceNodes: []*cdispec.DeviceNode{{Path: "/dev/input/event40", Type: "c", Major: 13, Minor: 104}},
		Env:         padEnv("/dev/input/event40", "relay"),
	}
	for _, tc := range []struct {
		name      string
		mode      string
		relay     bool
		want      dra.ContainerEdits
		wantAsked int
	}{
		{"default mode without a relay", "", false, ownEdits, 0},
		{"relay mode without a relay", ModeRelay, false, ownEdits, 0},
		{"direct mode without a relay", ModeDirect, false, ownEdits, 0},
		{"default mode with a relay", "", true, relayEdits, 1},
		{"relay mode with a relay", ModeRelay, true, relayEdits, 1},
		{"direct mode with a relay", ModeDirect, true, ownEdits, 0},
	} {
		d := deliver(own)
		r := &fakeRelay{}
		if tc.relay {
			d.Relay = r
		}
		req := request("e4-17-d8-c5-67-6d")
		req.Claim.UID = "claim-1"
		req.Params.Mode = tc.mode
		edits, err := Prepare(d)(context.Background(), req)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if diff := cmp.Diff(edits, tc.want); diff != "" {
			t.Errorf("%s: edits (-edits +want):\n%s", tc.name, diff)
		}
		if len(r.asked) != tc.wantAsked || (tc.wantAsked > 0 && r.asked[0] != "claim-1 E4:17:D8:C5:67:6D") {
			t.Errorf("%s: the relay was asked %q", tc.name, r.asked)
		}
		if got := DeliveredMode(bdaddr.MustParse(padAddress), edits); got != tc.want.Env[1][strings.IndexByte(tc.want.Env[1], '=')+1:] {
			t.Errorf("%s: DeliveredMode reads %q", tc.name, got)
		}
	}
	// A relay that fails fails the prepare, naming the controller.
	d := deliver(own)
	d.Relay = &fakeRelay{err: errors.New("uinput busy")}
	if _, err := Prepare(d)(context.Background(), request("e4-17-d8-c5-67-6d")); err == nil || err.Error() != "controller E4:17:D8:C5:67:6D: relaying its input: uinput busy" {
		t.Errorf("failing relay: err = %v", err)
	}
}
