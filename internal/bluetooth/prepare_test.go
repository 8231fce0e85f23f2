// SPDX-License-Identifier: Apache-2.0

package bluetooth

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/liken-sh/operators/internal/dra"
	resourceapi "k8s.io/api/resource/v1"
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

func fixedNodes(m NodeMap, err error) NodeSource {
	return func(context.Context) (InputNodes, error) { return m, err }
}

func validate(t *testing.T, e dra.ContainerEdits) {
	t.Helper()
	if err := (&cdi.ContainerEdits{ContainerEdits: &e}).Validate(); err != nil {
		t.Errorf("CDI refuses the edits: %v", err)
	}
}

func TestPrepareController(t *testing.T) {
	nodes := NodeMap{padAddress: {"/dev/input/event19", "/dev/input/js0", "/dev/input/event18", "/dev/hidraw3", "/dev/input/event18", "/dev/input/../input/event5", "input/event6", "/dev/input/mouse2"}}
	edits, err := Prepare(published, fixedNodes(nodes, nil))(context.Background(), request("e4-17-d8-c5-67-6d"))
	if err != nil {
		t.Fatal(err)
	}
	want := dra.ContainerEdits{DeviceNodes: []*cdispec.DeviceNode{{Path: "/dev/input/event18"}, {Path: "/dev/input/event19"}}}
	if diff := cmp.Diff(edits, want); diff != "" {
		t.Errorf("edits (-edits +want):\n%s", diff)
	}
	validate(t, edits)
}

func TestPrepareControllerUnderAnotherDeviceRoot(t *testing.T) {
	nodes := NodeMap{padAddress: {"/tmp/root/dev/input/event3"}}
	edits, err := Prepare(published, fixedNodes(nodes, nil))(context.Background(), request("e4-17-d8-c5-67-6d"))
	if err != nil {
		t.Fatal(err)
	}
	want := []*cdispec.DeviceNode{{Path: "/dev/input/event3", HostPath: "/tmp/root/dev/input/event3"}}
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
		{"no node", "e4-17-d8-c5-67-6d", fixedNodes(NodeMap{}, nil), "controller E4:17:D8:C5:67:6D registers no input node right now"},
		{"only a joystick node", "e4-17-d8-c5-67-6d", fixedNodes(NodeMap{padAddress: {"/dev/input/js0"}}, nil), "registers no input node"},
		{"nil answer", "e4-17-d8-c5-67-6d", func(context.Context) (InputNodes, error) { return nil, nil }, "registers no input node"},
		{"walk fails", "e4-17-d8-c5-67-6d", fixedNodes(nil, walkErr), "controller E4:17:D8:C5:67:6D: looking for its input nodes: sysfs unreadable"},
		{"foreign name", "card0", fixedNodes(NodeMap{}, nil), `device "card0" is not a name bluetooth.liken.sh publishes`},
	}
	for _, tt := range tests {
		_, err := Prepare(published, tt.nodes)(context.Background(), request(tt.device))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want %q", tt.name, err, tt.want)
		}
	}
}

// A well-formed name is not enough: only the devices of the published set
// are prepared, and nothing is walked for the others.
func TestPrepareRefusesNamesNotPublished(t *testing.T) {
	walked := false
	nodes := func(context.Context) (InputNodes, error) {
		walked = true
		// The host has HID nodes for a peer this bluetoothd never paired.
		return NodeMap{"A0:AB:51:33:B7:12": {"/dev/input/event3"}}, nil
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
		_, err := Prepare(tc.published, nodes)(context.Background(), request(tc.device))
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
	nodes := func(context.Context) (InputNodes, error) { walked = true; return NodeMap{}, nil }
	edits, err := Prepare(published, nodes)(context.Background(), request(hci0Bus))
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
// mode; Params must refuse every key.
func TestParamsAcceptNoKeys(t *testing.T) {
	var p Params
	if strict, err := json.UnmarshalStrict([]byte(`{}`), &p, json.DisallowUnknownFields); err != nil || len(strict) > 0 {
		t.Errorf("{} refused: %v %v", err, strict)
	}
	strict, err := json.UnmarshalStrict([]byte(`{"nodes":"all"}`), &p, json.DisallowUnknownFields)
	if err == nil && len(strict) == 0 {
		t.Error(`{"nodes":"all"} accepted`)
	}
}
