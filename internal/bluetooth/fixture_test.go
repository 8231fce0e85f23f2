// SPDX-License-Identifier: Apache-2.0

package bluetooth

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/godbus/dbus/v5"
	"github.com/liken-sh/operators/internal/bluez"
)

// readInfo reads the groups of a BlueZ key file (GLib key-file syntax)
// that the tests need; nothing here validates it.
func readInfo(t *testing.T, path string) map[string]map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]map[string]string{}
	group := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			group = line[1 : len(line)-1]
			out[group] = map[string]string{}
		default:
			k, v, ok := strings.Cut(line, "=")
			if ok && group != "" {
				out[group][k] = v
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// deviceFromInfo builds the Device1 value bluetoothd reports for a bond
// it loaded from an info file (BlueZ src/device.c: the Class, Appearance,
// Services and DeviceID groups become Class, Appearance, UUIDs and
// Modalias; an LE "static" address is reported as AddressType "random").
func deviceFromInfo(t *testing.T, path, address string, connected bool) bluez.Device {
	t.Helper()
	info := readInfo(t, path)
	g := info["General"]
	d := bluez.Device{
		Path:        dbus.ObjectPath("/org/bluez/hci0/dev_" + strings.ReplaceAll(address, ":", "_")),
		Adapter:     "/org/bluez/hci0",
		Address:     address,
		Name:        g["Name"],
		Alias:       g["Name"],
		Paired:      true,
		Bonded:      true,
		Trusted:     g["Trusted"] == "true",
		Connected:   connected,
		AddressType: "public",
	}
	if g["AddressType"] == "static" {
		d.AddressType = "random"
	}
	if c := g["Class"]; c != "" {
		n, err := strconv.ParseUint(c, 0, 32)
		if err != nil {
			t.Fatalf("%s: Class %q: %v", path, c, err)
		}
		d.Class = uint32(n)
	}
	if a := g["Appearance"]; a != "" {
		n, err := strconv.ParseUint(a, 0, 16)
		if err != nil {
			t.Fatalf("%s: Appearance %q: %v", path, a, err)
		}
		d.Appearance = uint16(n)
	}
	for _, u := range strings.Split(g["Services"], ";") {
		if u != "" {
			d.UUIDs = append(d.UUIDs, u)
		}
	}
	if id, ok := info["DeviceID"]; ok {
		num := func(k string) uint64 {
			n, err := strconv.ParseUint(id[k], 10, 16)
			if err != nil {
				t.Fatalf("%s: DeviceID %s %q: %v", path, k, id[k], err)
			}
			return n
		}
		source := map[uint64]string{1: "bluetooth", 2: "usb"}[num("Source")]
		d.Modalias = fmt.Sprintf("%s:v%04Xp%04Xd%04X", source, num("Vendor"), num("Product"), num("Version"))
	}
	return d
}

const (
	padAddress   = "E4:17:D8:C5:67:6D"
	mouseAddress = "F4:3C:2A:19:8B:07" // random static; the fixture does not publish the real one
)

func nesPad(t *testing.T, connected bool) bluez.Device {
	d := deviceFromInfo(t, "../../testdata/fixtures/bluez/8bitdo-nes30-pro.info", padAddress, connected)
	d.Icon = "input-gaming"
	return d
}

func basilisk(t *testing.T, connected bool) bluez.Device {
	d := deviceFromInfo(t, "../../testdata/fixtures/bluez/razer-basilisk-x-hyperspeed.info", mouseAddress, connected)
	d.Icon = "input-mouse"
	return d
}

func TestFixturesReadAsBlueZReportsThem(t *testing.T) {
	pad := nesPad(t, true)
	if pad.Class != 0x002508 || pad.Modalias != "usb:v2DC8p3820d0100" || pad.Name != "8Bitdo NES30 Pro" {
		t.Errorf("8BitDo: %+v", pad)
	}
	mouse := basilisk(t, true)
	if mouse.Appearance != 0x03c2 || mouse.Modalias != "usb:v1532p0082d0001" || mouse.AddressType != "random" {
		t.Errorf("Basilisk: %+v", mouse)
	}
}
