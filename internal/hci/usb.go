// SPDX-License-Identifier: Apache-2.0

package hci

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
)

// USBNode is a usbfs device node, /dev/bus/usb/BBB/DDD: BBB is the bus
// number and DDD the device number the USB core gave the device at
// enumeration, the same numbers sysfs shows in the device's busnum and
// devnum files (drivers/usb/core/sysfs.c).
type USBNode struct {
	// Path is the node's path as found, e.g. /dev/bus/usb/001/005.
	Path string
	// Busnum and Devnum are BBB and DDD as integers.
	Busnum, Devnum int
}

// String returns "BBB/DDD", the node's usbfs spelling.
func (n USBNode) String() string { return fmt.Sprintf("%03d/%03d", n.Busnum, n.Devnum) }

// usbNumber parses one usbfs path element: exactly three decimal digits,
// 1..999 (bus and device numbers start at 1; devnum is at most 127, busnum
// is bounded by how many host controllers there are).
func usbNumber(s string) (int, bool) {
	if len(s) != 3 {
		return 0, false
	}
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, _ := strconv.Atoi(s)
	return n, n > 0
}

// ParseUSBNode reads a usbfs node path, ".../bus/usb/BBB/DDD". It returns
// an error naming the path if its last three elements are not bus/usb/ and
// two three-digit numbers.
func ParseUSBNode(path string) (USBNode, error) {
	// Cleaned first: Base and Dir read a trailing slash differently, so
	// "bus/usb/001/" would otherwise read as bus 1, device 1.
	clean := filepath.Clean(path)
	dev, rest := filepath.Base(clean), filepath.Dir(clean)
	bus, rest := filepath.Base(rest), filepath.Dir(rest)
	b, ok1 := usbNumber(bus)
	d, ok2 := usbNumber(dev)
	if !ok1 || !ok2 || filepath.Base(rest) != "usb" || filepath.Base(filepath.Dir(rest)) != "bus" {
		return USBNode{}, fmt.Errorf("%q is not a usbfs node (want .../bus/usb/BBB/DDD)", path)
	}
	return USBNode{Path: path, Busnum: b, Devnum: d}, nil
}

// ClaimedUSBNodes lists the usbfs nodes under <dev>/bus/usb. Inside a
// container, /dev holds only what the runtime put there, and a claim on a
// USB adapter adds exactly that adapter's node, so this is the list of
// USB devices the pod claimed. Entries that are directories or whose names
// are not three-digit numbers are ignored; the node's file type is not
// checked, so a test tree may use plain files. A missing <dev>/bus/usb
// returns an empty list, not an error. The list is sorted by bus, then
// device.
func ClaimedUSBNodes(dev string) ([]USBNode, error) {
	root := filepath.Join(dev, "bus", "usb")
	buses, err := os.ReadDir(root)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list usbfs nodes: %w", err)
	}
	var nodes []USBNode
	for _, bus := range buses {
		b, ok := usbNumber(bus.Name())
		if !ok || !bus.IsDir() {
			continue
		}
		devices, err := os.ReadDir(filepath.Join(root, bus.Name()))
		if err != nil {
			return nil, fmt.Errorf("list usbfs nodes: %w", err)
		}
		for _, d := range devices {
			n, ok := usbNumber(d.Name())
			if !ok || d.IsDir() {
				continue
			}
			nodes = append(nodes, USBNode{Path: filepath.Join(root, bus.Name(), d.Name()), Busnum: b, Devnum: n})
		}
	}
	sort.Slice(nodes, func(i, j int) bool {
		if nodes[i].Busnum != nodes[j].Busnum {
			return nodes[i].Busnum < nodes[j].Busnum
		}
		return nodes[i].Devnum < nodes[j].Devnum
	})
	return nodes, nil
}
