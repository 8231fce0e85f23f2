// SPDX-License-Identifier: Apache-2.0

//go:build vmtier

package inventory

import (
	"context"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/liken-sh/operators/internal/uevent"
	"github.com/liken-sh/operators/test/vm/guest"
)

// The VM tier's test (test/vm): discovery over a real kernel's sysfs with
// three real sound drivers, snd-dummy and snd-aloop (board devices) and
// snd-hda-intel on qemu's intel-hda controller (a PCI function), and the
// real uevents of a card leaving and coming back.
func TestVMDiscoverSoundCards(t *testing.T) {
	if err := guest.LoadSoundCards(); err != nil {
		t.Fatal(err)
	}
	scan, err := Discover("/sys", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range scan.Problems {
		t.Errorf("problem: %s", p)
	}
	drivers := map[string]string{}
	var hda Found
	for _, f := range scan.Devices {
		t.Logf("%s %v", f.Device.Name, attrs(f.Device))
		drivers[f.Device.Name] = attrs(f.Device)["driver"]
		if attrs(f.Device)["driver"] == "snd_hda_intel" {
			hda = f
		}
	}
	if drivers["platform-snd-dummy-0"] != "snd_dummy" || drivers["platform-snd-aloop-0"] != "snd_aloop" || hda.Path == "" {
		t.Fatalf("sound controllers %v, want snd_dummy.0, snd_aloop.0 and a PCI function bound to snd_hda_intel", drivers)
	}
	a := attrs(hda.Device)
	if a["bus"] != "pci" || a["classCode"] != "040300" || a["class"] != "multimedia" || a["vendor"] != "8086" ||
		a["resource.kubernetes.io/pciBusID"] != a["address"] || !strings.HasPrefix(hda.Device.Name, "pci-0000-00-") {
		t.Errorf("HDA controller %s: %v", hda.Device.Name, a)
	}
	for _, f := range scan.Devices {
		nodes, err := Nodes("/sys", "/dev", f)
		if err != nil {
			t.Errorf("%s: %v", f.Device.Name, err)
			continue
		}
		var names []string
		for _, n := range nodes {
			names = append(names, n.Name)
		}
		t.Logf("%s delivers %v", f.Device.Name, names)
		if !slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "snd/controlC") }) ||
			!slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "snd/pcmC") }) ||
			!slices.Contains(names, "snd/timer") {
			t.Errorf("%s delivers %v, want its control and PCM nodes and the timer", f.Device.Name, names)
		}
		// Every node is the one devtmpfs made, number for number.
		for _, dn := range Edits(nodes, "/dev").DeviceNodes {
			if dn.FileMode == nil {
				t.Errorf("%s: %s is not the host's node %d:%d", f.Device.Name, dn.Path, dn.Major, dn.Minor)
			}
		}
	}

	// snd-aloop unloaded and loaded again: its uevents are relevant, a
	// network device's are not, and discovery follows.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	l, err := uevent.Listen(ctx, uevent.Options{})
	if err != nil {
		t.Fatal(err)
	}
	relevant := func(action string, then func()) {
		t.Helper()
		then()
		for {
			select {
			case ev := <-l.Events():
				if ev.Subsystem == "net" && Relevant(ev) {
					t.Errorf("network uevent %s %s is relevant", ev.Action, ev.DevPath)
				}
				if ev.Subsystem == "sound" && ev.Action == action {
					if !Relevant(ev) {
						t.Errorf("%s %s (sound) is not relevant", ev.Action, ev.DevPath)
					}
					return
				}
			case <-ctx.Done():
				t.Fatalf("no sound %s uevent", action)
			}
		}
	}
	relevant("remove", func() {
		if out, err := exec.Command("rmmod", "snd-aloop").CombinedOutput(); err != nil {
			t.Fatalf("rmmod snd-aloop: %v: %s", err, out)
		}
		if err := guest.Modprobe("dummy"); err != nil { // a network device's add
			t.Fatal(err)
		}
	})
	if s, _ := Discover("/sys", nil); slices.Contains(names(s), "platform-snd-aloop-0") {
		t.Errorf("snd-aloop unloaded, still found: %v", names(s))
	}
	relevant("add", func() {
		if err := guest.Modprobe("snd-aloop"); err != nil {
			t.Fatal(err)
		}
	})
	if !guest.WaitFor(30*time.Second, func() bool {
		s, _ := Discover("/sys", nil)
		return slices.Contains(names(s), "platform-snd-aloop-0")
	}) {
		t.Error("snd-aloop loaded again, not found")
	}
}

// btvirt's controllers are what the VM tier has of Bluetooth: hci_vhci
// registers them under /sys/devices/virtual/bluetooth, with no USB device
// and no btusb, so they show that the driver publishes no adapter for a
// controller that is not a btusb interface (a claim could deliver no usbfs
// node for it). They cannot show a btusb interface's discovery, its usbfs
// node or an adapter claim's delivery; the recorded trees of the unit
// tests do. uhid, loaded here, shows that /dev/uhid is found where the
// kernel has it.
func TestVMBtvirtIsNoAdapter(t *testing.T) {
	b, err := guest.StartBtvirt(1)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Stop()
	scan, err := Discover("/sys", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range scan.Devices {
		if f.Kind == BluetoothAdapter {
			t.Errorf("btvirt's controller published as %s", f.Device.Name)
		}
	}
	if !guest.Exists("/sys/class/bluetooth/hci" + itoa(int(b.Controllers[0]))) {
		t.Errorf("btvirt's hci%d is not in /sys/class/bluetooth", b.Controllers[0])
	}
	if err := guest.Modprobe("uhid"); err != nil {
		t.Fatal(err)
	}
	s, err := openSysfs("/sys")
	if err != nil {
		t.Fatal(err)
	}
	if !s.hasMisc("/sys", "/dev", "uhid", uhidMinor) {
		t.Error("uhid loaded, /dev/uhid not found")
	}
}
