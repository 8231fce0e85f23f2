// SPDX-License-Identifier: Apache-2.0

package inventory

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/liken-sh/operators/internal/pciids"
	"github.com/liken-sh/operators/test/e2e/harness"
	"github.com/liken-sh/operators/test/fakesys"
)

const (
	alsaTrees = "../alsa/testdata/sysfs"
	hciTree   = "../hci/testdata/sysfs-three-adapters.txt"
)

// The XPS 17 9700 recorded in internal/alsa: its sof-soundwire card sits
// on a platform device below the PCI function, which is the controller;
// the USB headset's and the dock's cards are on their audio interfaces.
func TestDiscoverXPS(t *testing.T) {
	scan, err := Discover(tree(t, filepath.Join(alsaTrees, "xps9700.tree")), pciids.Open("testdata/pci.ids"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string]string{
		"pci-0000-00-1f-3": {
			"bus": "pci", "address": "0000:00:1f.3", "resource.kubernetes.io/pciBusID": "0000:00:1f.3",
			"driver": "sof-audio-pci-intel-cnl", "vendor": "8086", "product": "06c8", "name": "Comet Lake PCH cAVS",
			"subsystem": "sound", "sound.liken.sh/supportsSound": "true",
		},
		"usb-3-1-1-0": {
			"bus": "usb", "address": "3-1.1", "driver": "snd-usb-audio", "vendor": "1532", "product": "0526",
			"serial": "00000000", "name": "Razer Kraken X USB",
			"subsystem": "sound", "sound.liken.sh/supportsSound": "true",
		},
		"usb-3-2-3-4-0": {
			"bus": "usb", "address": "3-2.3.4", "driver": "snd-usb-audio", "vendor": "0bda", "product": "402e",
			"serial": "200901010001", "name": "USB Audio",
			"subsystem": "sound", "sound.liken.sh/supportsSound": "true",
		},
	}
	got := map[string]map[string]string{}
	for _, f := range scan.Devices {
		got[f.Device.Name] = attrs(f.Device)
		if f.Kind != SoundController {
			t.Errorf("%s: kind %d", f.Device.Name, f.Kind)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("devices (-want +got):\n%s", diff)
	}
	if len(scan.Problems) != 0 {
		t.Errorf("problems: %q", scan.Problems)
	}
}

// A desktop HDA card on its PCI function is found; a card no device link
// places (card9) is not a controller and is no problem either.
func TestDiscoverHDAAndVirtualCard(t *testing.T) {
	scan, err := Discover(tree(t, filepath.Join(alsaTrees, "hda-pci.tree")), pciids.Open("testdata/no-such-pci.ids"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"pci-0000-00-1f-3"}, names(scan)); diff != "" || len(scan.Problems) > 0 {
		t.Errorf("devices (-want +got):\n%s problems %q", diff, scan.Problems)
	}
}

// snd-aloop's recorded sysfs files: a board device with no driver link,
// whose driver its uevent states, and its nodes from their uevents.
func TestDiscoverAloopBoardDevice(t *testing.T) {
	root := tree(t, filepath.Join(alsaTrees, "aloop-links.tree"))
	grepDump(t, root, "../../testdata/fixtures/uevent/sysfs-grep-dump-snd_aloop-and-lis3lv02d-excerpt.txt")
	scan, err := Discover(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(scan.Devices) != 1 {
		t.Fatalf("devices %q, problems %q", names(scan), scan.Problems)
	}
	f := scan.Devices[0]
	want := map[string]string{
		"bus": "platform", "address": "snd_aloop.0", "driver": "snd_aloop", "modalias": "platform:snd_aloop",
		"subsystem": "sound", "sound.liken.sh/supportsSound": "true",
	}
	if diff := cmp.Diff(want, attrs(f.Device)); diff != "" || f.Device.Name != "platform-snd-aloop-0" {
		t.Errorf("%s (-want +got):\n%s", f.Device.Name, diff)
	}
	nodes, err := Nodes(root, "/nonexistent", f)
	if err != nil {
		t.Fatal(err)
	}
	wantNodes := []Node{
		{"snd/controlC2", 116, 6}, {"snd/pcmC2D0c", 116, 3}, {"snd/pcmC2D0p", 116, 2},
		{"snd/pcmC2D1c", 116, 5}, {"snd/pcmC2D1p", 116, 4},
	}
	if diff := cmp.Diff(wantNodes, nodes); diff != "" {
		t.Errorf("nodes (-want +got):\n%s", diff)
	}
}

// The three-adapter node recorded for adapter lookup: every interface
// btusb binds is one device, named by port and interface number; the
// virtual controller has no USB device and is not published.
func TestDiscoverBluetoothAdapters(t *testing.T) {
	root := tree(t, hciTree, "testdata/btusb-links.tree")
	scan, err := Discover(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string]string{
		"usb-1-8-1-0": {"bus": "usb", "address": "1-8.1", "driver": "btusb", "vendor": "0bda", "product": "c821", "serial": "00e04c000001"},
		"usb-1-8-1-1": {"bus": "usb", "address": "1-8.1", "driver": "btusb", "vendor": "0bda", "product": "c821", "serial": "00e04c000001"},
		"usb-3-2-0":   {"bus": "usb", "address": "3-2", "driver": "btusb", "vendor": "0e8d", "product": "0608", "serial": "000000000"},
	}
	got := map[string]map[string]string{}
	for _, f := range scan.Devices {
		got[f.Device.Name] = attrs(f.Device)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("devices (-want +got):\n%s", diff)
	}
	f, _ := scan.Lookup("usb-1-8-1-0")
	nodes, err := Nodes(root, t.TempDir(), f)
	if err != nil {
		t.Fatal(err)
	}
	// The usbfs node from busnum, devnum and dev; no uhid in this tree.
	if nodes[0] != (Node{"bus/usb/001/005", 189, 4}) || len(nodes) != 2+legacyEventNodes {
		t.Errorf("nodes %v", nodes)
	}
}

// The desktop the e2e tests and the demo run on publishes what liken
// publishes there, under the names the operators' tests expect.
func TestDiscoverDesktop(t *testing.T) {
	d, err := fakesys.LayOutDesktop(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	scan, err := Discover(d.Sys, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string]string{
		harness.SoundControllerDevice: {
			"bus": "pci", "address": "0000:00:1f.3", "resource.kubernetes.io/pciBusID": "0000:00:1f.3",
			"driver": "snd_hda_intel", "vendor": "8086", "product": "a348", "class": "multimedia", "classCode": "040300",
			"modalias":  "pci:v00008086d0000A348sv00001028sd0000085Cbc04sc03i00",
			"subsystem": "sound", "sound.liken.sh/supportsSound": "true",
		},
		harness.BluetoothAdapterDevice: {
			"bus": "usb", "address": "1-8.1", "driver": "btusb", "vendor": "0bda", "product": "c821",
			"serial": "00e04c000001", "name": "Bluetooth Radio", "class": "wireless", "classCode": "e0",
			"modalias": "usb:v0BDApC821d0200dcE0dsc01dp01icE0isc01ip01in00",
		},
		"usb-1-8-1-1": {
			"bus": "usb", "address": "1-8.1", "driver": "btusb", "vendor": "0bda", "product": "c821",
			"serial": "00e04c000001", "name": "Bluetooth Radio", "class": "wireless", "classCode": "e0",
			"modalias": "usb:v0BDApC821d0200dcE0dsc01dp01icE0isc01ip01in01",
		},
	}
	got := map[string]map[string]string{}
	for _, f := range scan.Devices {
		got[f.Device.Name] = attrs(f.Device)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("devices (-want +got):\n%s", diff)
	}

	sound, _ := scan.Lookup(harness.SoundControllerDevice)
	nodes, err := Nodes(d.Sys, d.Dev, sound)
	if err != nil {
		t.Fatal(err)
	}
	wantSound := []Node{
		{"input/event5", 13, 69}, {"input/event6", 13, 70},
		{"snd/controlC0", 116, 7}, {"snd/hwC0D0", 116, 10}, {"snd/hwC0D2", 116, 11},
		{"snd/pcmC0D0c", 116, 24}, {"snd/pcmC0D0p", 116, 16}, {"snd/pcmC0D3p", 116, 19},
		{"snd/seq", 116, 1}, {"snd/timer", 116, 33},
	}
	if diff := cmp.Diff(wantSound, nodes); diff != "" {
		t.Errorf("sound nodes (-want +got):\n%s", diff)
	}

	adapter, _ := scan.Lookup(harness.BluetoothAdapterDevice)
	nodes, err = Nodes(d.Sys, d.Dev, adapter)
	if err != nil {
		t.Fatal(err)
	}
	wantAdapter := []Node{{"bus/usb/001/005", 189, 4}}
	for i := range 32 {
		wantAdapter = append(wantAdapter, Node{"input/event" + itoa(i), 13, uint32(64 + i)})
	}
	wantAdapter = append(wantAdapter, Node{"uhid", 10, 239}, Node{"uinput", 10, 223})
	sortNodes(wantAdapter)
	if diff := cmp.Diff(wantAdapter, nodes); diff != "" {
		t.Errorf("adapter nodes (-want +got):\n%s", diff)
	}
	edits := Edits(nodes, d.Dev)
	if len(edits.Mounts)+len(edits.Env)+len(edits.Hooks) > 0 || len(edits.DeviceNodes) != len(nodes) {
		t.Errorf("edits deliver more than nodes: %+v", edits)
	}
	for _, dn := range edits.DeviceNodes {
		if dn.Type != "c" || dn.Major == 0 || dn.Path[:5] != "/dev/" {
			t.Errorf("device node %+v", dn)
		}
	}
}
