// SPDX-License-Identifier: Apache-2.0

package fakesys

import (
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
)

//go:embed desktop.tree
var desktopTree []byte

// Desktop is a desktop's raw hardware as the liken.sh driver reads it: an
// Intel HDA controller at PCI 0000:00:1f.3 with its card, jacks, timer and
// sequencer, and a Realtek Bluetooth adapter whose interfaces btusb binds
// at USB port 1-8.1 (desktop.tree says what else). Sys and Dev are the
// sysfs and /dev roots to point a driver at.
type Desktop struct {
	Sys, Dev string
}

// DesktopNodes are the /dev entries of Desktop, below Dev; each is a
// regular file standing in for the node, since a test may not mknod.
var DesktopNodes = []string{
	"snd/controlC0", "snd/pcmC0D0p", "snd/pcmC0D0c", "snd/pcmC0D3p", "snd/hwC0D0", "snd/hwC0D2",
	"snd/timer", "snd/seq", "input/event5", "input/event6", "bus/usb/001/005", "uinput", "uhid",
}

// LayOutDesktop writes Desktop under dir (dir/sys and dir/dev).
func LayOutDesktop(dir string) (Desktop, error) {
	d := Desktop{Sys: filepath.Join(dir, "sys"), Dev: filepath.Join(dir, "dev")}
	if err := BuildTree(desktopTree, d.Sys); err != nil {
		return d, err
	}
	for _, n := range DesktopNodes {
		p := filepath.Join(d.Dev, n)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return d, err
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			return d, err
		}
	}
	return d, nil
}

// desktopAdapter is the Bluetooth adapter's USB device in Desktop's
// sysfs, below Sys.
const desktopAdapter = "devices/pci0000:00/0000:00:14.0/usb1/1-8/1-8.1"

// DesktopAdapterDevnum is the adapter's USB device number on bus 1 as
// desktop.tree records it (/dev/bus/usb/001/005).
const DesktopAdapterDevnum = 5

// RenumberDesktopAdapter gives the adapter of the Desktop laid out in sys
// the USB device number devnum on bus 1, as the kernel would had it
// enumerated the adapter as that device: its devnum and dev attributes
// and its uevent (the usbfs minor is (bus-1)*128 + devnum-1,
// drivers/usb/core/hub.c usb_new_device). It returns the usbfs node's
// name below /dev (bus/usb/001/DDD) and its minor. devnum must be in
// 4..128, clear of the other devices on the tree's bus (1 to 3).
func RenumberDesktopAdapter(sys string, devnum int) (name string, minor uint32, err error) {
	if devnum < 4 || devnum > 128 {
		return "", 0, fmt.Errorf("fakesys: USB device number %d: the desktop's adapter takes 4..128 (1 to 3 are its hubs and keyboard)", devnum)
	}
	name = fmt.Sprintf("bus/usb/001/%03d", devnum)
	minor = uint32(devnum - 1)
	dir := filepath.Join(sys, desktopAdapter)
	files := map[string]string{
		"devnum": fmt.Sprintf("%d\n", devnum),
		"dev":    fmt.Sprintf("189:%d\n", minor),
		"uevent": fmt.Sprintf("MAJOR=189\nMINOR=%d\nDEVNAME=%s\nDEVTYPE=usb_device\nDRIVER=usb\nPRODUCT=bda/c821/200\nBUSNUM=001\nDEVNUM=%03d\n", minor, name, devnum),
	}
	for f, content := range files {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(content), 0o644); err != nil {
			return "", 0, err
		}
	}
	return name, minor, nil
}
