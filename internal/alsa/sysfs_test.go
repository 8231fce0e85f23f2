// SPDX-License-Identifier: Apache-2.0

package alsa_test

import (
	"errors"
	"io/fs"
	"os"
	"strings"
	"testing"

	"github.com/liken-sh/operators/internal/alsa"
	"github.com/liken-sh/operators/test/fakesys"
)

// buildTree lays out under root what a testdata/sysfs/*.tree manifest
// says (fakesys.BuildTree's format).
func buildTree(t testing.TB, root, manifest string) {
	t.Helper()
	data, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	if err := fakesys.BuildTree(data, root); err != nil {
		t.Fatalf("%s: %v", manifest, err)
	}
}

// loadGrepDump writes the files of a "PATH: VALUE" dump (the uevent
// fixture's form) under root.
func loadGrepDump(t testing.TB, root, dump string) {
	t.Helper()
	if err := fakesys.LoadGrepDumpFile(dump, root); err != nil {
		t.Fatal(err)
	}
}

func xpsSysfs(t testing.TB) string {
	root := t.TempDir()
	buildTree(t, root, "testdata/sysfs/xps9700.tree")
	return root
}

func TestReadCardIdentity(t *testing.T) {
	xps := xpsSysfs(t)
	aloop := t.TempDir()
	loadGrepDump(t, aloop, "../../testdata/fixtures/uevent/sysfs-grep-dump-snd_aloop-and-lis3lv02d-excerpt.txt")
	buildTree(t, aloop, "testdata/sysfs/aloop-links.tree")
	hda := t.TempDir()
	buildTree(t, hda, "testdata/sysfs/hda-pci.tree")

	for _, tc := range []struct {
		name  string
		sysfs string
		card  int
		want  alsa.CardIdentity
	}{
		{"SOF machine device below its PCI controller", xps, 0, alsa.CardIdentity{Card: 0, ID: "sofsoundwire",
			Bus: "pci", Location: "0000:00:1f.3", DeviceBus: "platform", Driver: "sof_sdw"}},
		{"USB headset", xps, 1, alsa.CardIdentity{Card: 1, ID: "USB", Bus: "usb", Location: "3-1.1", DeviceBus: "usb",
			Driver: "snd-usb-audio", USBVendor: "1532", USBProduct: "0526", USBSerial: "00000000",
			USBManufacturer: "Razer", USBProductName: "Razer Kraken X USB"}},
		{"USB dock behind two hubs", xps, 2, alsa.CardIdentity{Card: 2, ID: "Dock", Bus: "usb", Location: "3-2.3.4", DeviceBus: "usb",
			Driver: "snd-usb-audio", USBVendor: "0bda", USBProduct: "402e", USBSerial: "200901010001",
			USBManufacturer: "Generic", USBProductName: "USB Audio"}},
		{"snd-aloop (recorded files)", aloop, 2, alsa.CardIdentity{Card: 2, ID: "Loopback", Bus: "platform",
			Location: "snd_aloop.0", DeviceBus: "platform", Driver: "snd_aloop"}},
		{"HDA on the PCI function", hda, 0, alsa.CardIdentity{Card: 0, ID: "PCH", Bus: "pci", Location: "0000:00:1f.3",
			DeviceBus: "pci", Driver: "snd_hda_intel"}},
		{"no device link", hda, 9, alsa.CardIdentity{Card: 9, ID: "Virtual"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := alsa.ReadCardIdentity(tc.sysfs, tc.card)
			if err != nil {
				t.Fatal(err)
			}
			if tc.want.Bus != "" && !strings.HasPrefix(got.DevicePath, tc.sysfs) {
				t.Errorf("DevicePath %q is not under the tree", got.DevicePath)
			}
			got.DevicePath = ""
			if got != tc.want {
				t.Errorf("\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
	if _, err := alsa.ReadCardIdentity(xps, 5); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing card: %v; want ErrNotExist", err)
	}
}

// xpsCard is one recorded XPS 17 card.
func xpsCard(t testing.TB, card int) *alsa.Recorded {
	t.Helper()
	r, err := alsa.NewDumpDir("testdata/xps9700").Recorded(card)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestReadCardUSB: the Razer's read-only channel map (3 4 = FL FR) gives
// its layout; the dock's (0 0) says nothing.
func TestReadCardUSB(t *testing.T) {
	sysfs := xpsSysfs(t)
	for _, tc := range []struct {
		card   int
		layout string
	}{{1, "FL,FR"}, {2, ""}} {
		c := xpsCard(t, tc.card).Open()
		card, err := alsa.ReadCard(c)
		c.Close()
		if err != nil {
			t.Fatal(err)
		}
		ident, err := alsa.ReadCardIdentity(sysfs, tc.card)
		if err != nil {
			t.Fatal(err)
		}
		p := card.PCM(0, alsa.Playback)
		if got := alsa.ConnectionType(*p, card.Info, ident); got != alsa.ConnUSB {
			t.Errorf("card %d: %q", tc.card, got)
		}
		// The card driver alone says USB too, with no sysfs.
		if got := alsa.ConnectionType(*p, card.Info, alsa.CardIdentity{}); got != alsa.ConnUSB {
			t.Errorf("card %d without sysfs: %q", tc.card, got)
		}
		l := alsa.ChooseLayout(*p, alsa.ConnUSB)
		if l.Position() != tc.layout || (tc.layout != "" && (l.Channels != 2 || l.Source != alsa.LayoutChannelMap)) {
			t.Errorf("card %d: layout %+v", tc.card, l)
		}
		if p.Info.ID != "USB Audio" || p.HasELD {
			t.Errorf("card %d: %+v", tc.card, p.Info)
		}
	}
	c := xpsCard(t, 1).Open()
	defer c.Close()
	if pi, err := c.PCMInfo(0, 0, alsa.Playback); err != nil || pi.SubdevicesAvail != 0 || pi.Subname != "subdevice #0" {
		t.Errorf("busy Razer PCM: %+v %v", pi, err)
	}
}
