// SPDX-License-Identifier: Apache-2.0

package inventory

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// FuzzDevice lays out one USB sound interface whose uevent, product string
// and names come from the fuzzer, and checks that whatever Discover and
// Nodes make of them is something the API server and a container runtime
// take: a DNS-label name, attributes neither empty nor over 64 bytes, and
// node paths that stay below /dev.
func FuzzDevice(f *testing.F) {
	f.Add("3-1.1", "1.0", "Razer Kraken X USB", "MAJOR=116\nMINOR=7\nDEVNAME=snd/controlC0\n")
	f.Add("1-8.1", "1.0", strings.Repeat("x", 300), "MAJOR=116\nMINOR=7\nDEVNAME=../../etc/passwd\n")
	f.Add("9-9", "1.255", "\x00\xff\n\t ", "MAJOR=99999\nMINOR=-1\nDEVNAME=snd/x\n")
	f.Fuzz(func(t *testing.T, port, intf, product, ueventText string) {
		name := port + ":" + intf
		if !usbInterface.MatchString(name) || len(name) > 200 {
			return
		}
		root := t.TempDir()
		dev := filepath.Join(root, "devices", "pci0000:00", "0000:00:14.0", "usb1", port)
		dir := filepath.Join(dev, name)
		card := filepath.Join(dir, "sound", "card1")
		node := filepath.Join(card, "controlC1")
		for _, d := range []string{node, filepath.Join(root, "class", "sound"), filepath.Join(root, "bus", "usb", "drivers", "snd-usb-audio")} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		must := func(err error) {
			if err != nil {
				t.Fatal(err)
			}
		}
		must(os.WriteFile(filepath.Join(dev, "product"), []byte(product), 0o644))
		must(os.WriteFile(filepath.Join(node, "uevent"), []byte(ueventText), 0o644))
		must(os.Symlink(filepath.Join(root, "bus", "usb", "drivers", "snd-usb-audio"), filepath.Join(dir, "driver")))
		must(os.Symlink(dir, filepath.Join(card, "device")))
		must(os.Symlink(card, filepath.Join(root, "class", "sound", "card1")))

		scan, err := Discover(root, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, found := range scan.Devices {
			if errs := validation.IsDNS1123Label(found.Device.Name); len(errs) > 0 {
				t.Errorf("name %q: %v", found.Device.Name, errs)
			}
			for k, v := range found.Device.Attributes {
				if s := v.StringValue; s != nil && (*s == "" || len(*s) > resourceapi.DeviceAttributeMaxValueLength || !utf8.ValidString(*s)) {
					t.Errorf("attribute %s = %q", k, *s)
				}
			}
			nodes, err := Nodes(root, filepath.Join(root, "dev"), found)
			if err != nil {
				continue
			}
			for _, n := range nodes {
				if !filepath.IsLocal(n.Name) || strings.Contains(n.Name, "..") {
					t.Errorf("node %q leaves /dev", n.Name)
				}
			}
		}
	})
}
