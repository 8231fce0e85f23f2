// SPDX-License-Identifier: Apache-2.0

package hci

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/liken-sh/operators/internal/regularfile"
)

// ErrNoAdapter is wrapped by FindAdapter's error when no hciN hangs below
// the USB device (yet: btusb registers it while probing, moments after the
// USB device itself appears).
var ErrNoAdapter = errors.New("no Bluetooth adapter below the USB device")

// hciName matches an adapter's entry in /sys/class/bluetooth. The class
// also holds the adapter's connections, named "hciN:handle", which are not
// adapters.
var hciName = regexp.MustCompile(`^hci([0-9]{1,5})$`)

// Found is an adapter located in sysfs.
type Found struct {
	// Index is the N of hciN, the dev_id HCIGETDEVINFO takes.
	Index uint16
	// Name is "hciN".
	Name string
	// Path is the adapter's real sysfs directory, e.g.
	// <sysfs>/devices/pci0000:00/0000:00:14.0/usb1/1-8/1-8.1/1-8.1:1.0/bluetooth/hci0.
	Path string
	// USBDevice is the real sysfs directory of the USB device above it,
	// the one whose busnum and devnum matched.
	USBDevice string
}

// FindAdapter returns the adapter that the kernel registered below the USB
// device of node, looking in the sysfs tree mounted at sysfs (normally
// /sys). Every <sysfs>/class/bluetooth/hciN is resolved to its real
// directory and walked up to the nearest ancestor with a devnum file (a
// USB device; its interfaces have none); the adapter matches when that
// ancestor's busnum and devnum are node's. It does not take the lowest
// index: a node with two adapters maps each claim to its own.
//
// No match returns an error wrapping ErrNoAdapter; more than one match (two
// adapters on one USB device) is an error too, since the bonds could not
// be told apart.
func FindAdapter(sysfs string, node USBNode) (Found, error) {
	class := filepath.Join(sysfs, "class", "bluetooth")
	entries, err := os.ReadDir(class)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return Found{}, fmt.Errorf("list %s: %w", class, err)
	}
	devices, err := filepath.EvalSymlinks(filepath.Join(sysfs, "devices"))
	if err != nil {
		return Found{}, fmt.Errorf("sysfs at %s: %w", sysfs, err)
	}
	var found []Found
	for _, e := range entries {
		m := hciName.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		index, err := strconv.ParseUint(m[1], 10, 16)
		if err != nil {
			continue
		}
		dir, err := filepath.EvalSymlinks(filepath.Join(class, e.Name()))
		if err != nil {
			// Unregistered between the listing and now.
			continue
		}
		usb, ok, err := usbAncestor(devices, dir)
		if err != nil {
			return Found{}, err
		}
		if !ok || usb.Busnum != node.Busnum || usb.Devnum != node.Devnum {
			continue
		}
		found = append(found, Found{Index: uint16(index), Name: e.Name(), Path: dir, USBDevice: usb.Path})
	}
	switch len(found) {
	case 0:
		return Found{}, fmt.Errorf("usbfs node %s: %w (looked in %s)", node, ErrNoAdapter, class)
	case 1:
		return found[0], nil
	}
	names := make([]string, len(found))
	for i, f := range found {
		names[i] = f.Name
	}
	return Found{}, fmt.Errorf("usbfs node %s has %d adapters below it (%s); cannot tell which holds the bonds", node, len(found), strings.Join(names, ", "))
}

// usbAncestor walks up from dir, staying inside devices, to the nearest
// directory with a devnum file, and reads its busnum and devnum. ok is
// false when there is none (a virtual or UART adapter).
func usbAncestor(devices, dir string) (node USBNode, ok bool, err error) {
	for d := filepath.Dir(dir); strings.HasPrefix(d, devices+string(filepath.Separator)); d = filepath.Dir(d) {
		devnum, err := readSysfsInt(filepath.Join(d, "devnum"))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return USBNode{}, false, err
		}
		busnum, err := readSysfsInt(filepath.Join(d, "busnum"))
		if err != nil {
			return USBNode{}, false, err
		}
		return USBNode{Path: d, Busnum: busnum, Devnum: devnum}, true, nil
	}
	return USBNode{}, false, nil
}

// maxAttribute bounds a sysfs attribute read: the kernel fills at most one
// page (fs/sysfs/file.c).
const maxAttribute = 4096

// readSysfsInt reads a sysfs attribute holding one decimal number and a
// newline, as busnum and devnum do: a regular file of at most one page
// (regularfile.Read refuses a named pipe or device node in a bad root
// before opening it).
func readSysfsInt(path string) (int, error) {
	b, err := regularfile.Read(path, maxAttribute)
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("%s: %q is not a number", path, b)
	}
	return n, nil
}
