// SPDX-License-Identifier: Apache-2.0

package inventory

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/liken-sh/operators/test/fakesys"
)

// A class link that loops, a bus entry that loops, and a card whose device
// link leads out of the tree are each left out with a line that names
// them; the desktop's devices are all still found.
func TestDiscoverBadTrees(t *testing.T) {
	d, err := fakesys.LayOutDesktop(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{
		"class/sound/card7":       "card7",
		"bus/usb/devices/9-9:1.0": "../../../bus/usb/devices/9-9:1.0",
		"class/sound/card8":       "/",
	} {
		if err := os.Symlink(target, filepath.Join(d.Sys, link)); err != nil {
			t.Fatal(err)
		}
	}
	scan, err := Discover(d.Sys, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(scan.Devices) != 3 {
		t.Errorf("devices %q", names(scan))
	}
	joined := strings.Join(scan.Problems, "\n")
	for _, want := range []string{"sound card card7: ", "card7: the links loop", "USB interface 9-9:1.0", "sound card card8: ", "outside"} {
		if !strings.Contains(joined, want) {
			t.Errorf("problems %q lack %q", scan.Problems, want)
		}
	}
}

// Names: punctuation is one dash, the cut is at 63 with no dash at the
// end, and attribute text is printable, single-spaced and at most 64
// bytes, cut on a character.
func TestNamesAndText(t *testing.T) {
	for _, c := range []struct{ bus, addr, want string }{
		{"pci", "0000:00:1f.3", "pci-0000-00-1f-3"},
		{"usb", "1-8.1-0", "usb-1-8-1-0"},
		{"platform", "snd_aloop.0", "platform-snd-aloop-0"},
		{"platform", "MSFT0101:00", "platform-msft0101-00"},
		{"platform", strings.Repeat("a", 61) + ".b", "platform-" + strings.Repeat("a", 54)},
		{"platform", "::", "platform"},
	} {
		if got := DeviceName(c.bus, c.addr); got != c.want {
			t.Errorf("DeviceName(%q, %q) = %q, want %q", c.bus, c.addr, got, c.want)
		}
	}
	if got := DeviceName("platform", strings.Repeat("b", 53)+"-"+strings.Repeat("c", 20)); strings.HasSuffix(got, "-") || len(got) > 63 {
		t.Errorf("cut name %q", got)
	}
	for in, want := range map[string]string{
		"  Razer\tKraken\n X ":  "Razer Kraken X",
		"\x00\x01":              "",
		"Caf\xc3\xa9 \xff":      "Café",
		strings.Repeat("é", 40): strings.Repeat("é", 32),
	} {
		got, ok := attributeText(in)
		if got != want || ok != (want != "") {
			t.Errorf("attributeText(%q) = %q %v, want %q", in, got, ok, want)
		}
	}
}
