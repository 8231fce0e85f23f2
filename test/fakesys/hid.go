// SPDX-License-Identifier: Apache-2.0

// Package fakesys lays out, in a directory, the parts of sysfs the
// operators read, in the shapes the kernel gives them, for tests and the
// demo on machines without the hardware. The shapes are facts from the
// recorded captures in the project's fixtures.
package fakesys

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// BluetoothHID writes a Bluetooth HID device as BlueZ registers it through
// uhid: its directory under devices/virtual/misc/uhid (not under the
// adapter: uhid devices have no Bluetooth ancestry), the bus entry
// bus/hid/devices/<sysName> linking to it, its uevent (HID_ID bus 0005,
// HID_PHYS the adapter, HID_UNIQ the peer, lowercase as the kernel prints
// them), and one evdev node input/input<event>/event<event>. sysName is
// BBBB:VVVV:PPPP.NNNN, e.g. "0005:2DC8:3820.0001". It returns the device
// directory.
func BluetoothHID(sysRoot, sysName, name, peer, adapter string, event int) (string, error) {
	parts := strings.Split(strings.SplitN(sysName, ".", 2)[0], ":")
	if len(parts) != 3 || parts[0] != "0005" {
		return "", fmt.Errorf("fakesys: %q is not a Bluetooth HID name 0005:VVVV:PPPP.NNNN", sysName)
	}
	devDir := filepath.Join(sysRoot, "devices", "virtual", "misc", "uhid", sysName)
	evDir := filepath.Join(devDir, "input", fmt.Sprintf("input%d", event), fmt.Sprintf("event%d", event))
	busDir := filepath.Join(sysRoot, "bus", "hid", "devices")
	for _, d := range []string{evDir, busDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return "", err
		}
	}
	uevent := fmt.Sprintf("DRIVER=hid-generic\nHID_ID=0005:0000%s:0000%s\nHID_NAME=%s\nHID_PHYS=%s\nHID_UNIQ=%s\nMODALIAS=hid:b0005g0001v0000%sp0000%s\n",
		parts[1], parts[2], name, strings.ToLower(adapter), strings.ToLower(peer), parts[1], parts[2])
	if err := os.WriteFile(filepath.Join(devDir, "uevent"), []byte(uevent), 0o644); err != nil {
		return "", err
	}
	// evdev's nodes are char 13:64+N, named input/eventN (drivers/input/evdev.c).
	ev := fmt.Sprintf("MAJOR=13\nMINOR=%d\nDEVNAME=input/event%d\n", 64+event, event)
	if err := os.WriteFile(filepath.Join(evDir, "uevent"), []byte(ev), 0o644); err != nil {
		return "", err
	}
	link := filepath.Join(busDir, sysName)
	if err := os.Symlink(devDir, link); err != nil && !os.IsExist(err) {
		return "", err
	}
	return devDir, nil
}

// USBHID writes a USB HID device (a keyboard, say) as the kernel lays
// one out below its USB interface: the device directory under
// devices/pci0000:00/0000:00:14.0/usb1/1-<port>/1-<port>:1.0, the bus
// entry bus/hid/devices/<sysName> linking to it, its uevent (HID_ID bus
// 0003, an empty HID_UNIQ), and one evdev node input/input<event>/
// event<event> at evdev's number for it. sysName is BBBB:VVVV:PPPP.NNNN
// with bus 0003, e.g. "0003:046D:C31C.0001". It returns the device
// directory.
func USBHID(sysRoot, sysName, name string, port, event int) (string, error) {
	parts := strings.Split(strings.SplitN(sysName, ".", 2)[0], ":")
	if len(parts) != 3 || parts[0] != "0003" {
		return "", fmt.Errorf("fakesys: %q is not a USB HID name 0003:VVVV:PPPP.NNNN", sysName)
	}
	iface := fmt.Sprintf("1-%d/1-%d:1.0", port, port)
	devDir := filepath.Join(sysRoot, "devices", "pci0000:00", "0000:00:14.0", "usb1", iface, sysName)
	evDir := filepath.Join(devDir, "input", fmt.Sprintf("input%d", event), fmt.Sprintf("event%d", event))
	busDir := filepath.Join(sysRoot, "bus", "hid", "devices")
	for _, d := range []string{evDir, busDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return "", err
		}
	}
	uevent := fmt.Sprintf("DRIVER=hid-generic\nHID_ID=0003:0000%s:0000%s\nHID_NAME=%s\nHID_PHYS=usb-0000:00:14.0-%d/input0\nHID_UNIQ=\nMODALIAS=hid:b0003g0001v0000%sp0000%s\n",
		parts[1], parts[2], name, port, parts[1], parts[2])
	if err := os.WriteFile(filepath.Join(devDir, "uevent"), []byte(uevent), 0o644); err != nil {
		return "", err
	}
	ev := fmt.Sprintf("MAJOR=13\nMINOR=%d\nDEVNAME=input/event%d\n", 64+event, event)
	if err := os.WriteFile(filepath.Join(evDir, "uevent"), []byte(ev), 0o644); err != nil {
		return "", err
	}
	if err := os.Symlink(devDir, filepath.Join(busDir, sysName)); err != nil && !os.IsExist(err) {
		return "", err
	}
	return devDir, nil
}

// RemoveHID takes a HID device written by BluetoothHID or USBHID away, as
// the kernel does when it destroys the device: its directory and its bus
// entry.
func RemoveHID(sysRoot, devDir string) error {
	if err := os.RemoveAll(devDir); err != nil {
		return err
	}
	err := os.Remove(filepath.Join(sysRoot, "bus", "hid", "devices", filepath.Base(devDir)))
	if os.IsNotExist(err) {
		return nil
	}
	return err
}
