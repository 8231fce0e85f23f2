// SPDX-License-Identifier: Apache-2.0

package hid

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// maxUeventFile is the largest sysfs uevent file accepted, in bytes: a sysfs
// attribute is one page (PAGE_SIZE, 4096 on every architecture this runs on).
const maxUeventFile = 4096

// BusBluetooth is the HID bus type of Bluetooth devices (BUS_BLUETOOTH,
// include/uapi/linux/input.h).
const BusBluetooth = 0x0005

// Uevent is the content of a HID device's sysfs uevent file, as written by
// hid_uevent in drivers/hid/hid-core.c (plus DRIVER= from the driver core
// once a driver is bound).
//
// Bus, Vendor and Product come from HID_ID ("%04X:%08X:%08X"). Name, Phys and
// Uniq are HID_NAME, HID_PHYS and HID_UNIQ verbatim (not unquoted: the HID
// core prints them bare, unlike the input core's NAME="..."). Driver is
// DRIVER, empty while no driver is bound. Vars holds every line.
type Uevent struct {
	Bus     uint16
	Vendor  uint32
	Product uint32
	Name    string
	Phys    string
	Uniq    string
	Driver  string
	Vars    map[string]string
}

// ParseUevent decodes a HID device's sysfs uevent file: "KEY=VALUE" lines,
// each ended by a newline (the last one may lack it).
//
// It returns an error naming the line for: a file over 4096 bytes, an empty
// line, a line without '=' or with an empty key, a repeated key, and a
// missing or malformed HID_ID. A repeated key is refused rather than
// resolved because a device-supplied HID_NAME holding a newline can forge a
// "KEY=" line; the kernel writes HID_UNIQ after HID_NAME, so a forged
// HID_UNIQ shows up as a repetition.
func ParseUevent(data []byte) (Uevent, error) {
	vars, err := parseVars(data)
	if err != nil {
		return Uevent{}, err
	}
	id, ok := vars["HID_ID"]
	if !ok {
		return Uevent{}, fmt.Errorf("uevent has no HID_ID")
	}
	bus, vendor, product, err := parseID(id)
	if err != nil {
		return Uevent{}, err
	}
	return Uevent{
		Bus:     bus,
		Vendor:  vendor,
		Product: product,
		Name:    vars["HID_NAME"],
		Phys:    vars["HID_PHYS"],
		Uniq:    vars["HID_UNIQ"],
		Driver:  vars["DRIVER"],
		Vars:    vars,
	}, nil
}

// parseVars decodes any sysfs uevent file into its variables. An empty file
// (a device with nothing to report) gives an empty map.
func parseVars(data []byte) (map[string]string, error) {
	if len(data) > maxUeventFile {
		return nil, fmt.Errorf("uevent file of %d bytes exceeds the %d-byte sysfs page", len(data), maxUeventFile)
	}
	vars := make(map[string]string, 8)
	data = bytes.TrimSuffix(data, []byte("\n"))
	if len(data) == 0 {
		return vars, nil
	}
	for i, line := range strings.Split(string(data), "\n") {
		n := i + 1
		if line == "" {
			return nil, fmt.Errorf("uevent line %d is empty", n)
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("uevent line %d %q has no '='", n, clipString(line))
		}
		if key == "" {
			return nil, fmt.Errorf("uevent line %d %q has an empty key", n, clipString(line))
		}
		if _, dup := vars[key]; dup {
			return nil, fmt.Errorf("uevent line %d repeats key %s", n, clipString(key))
		}
		vars[key] = value
	}
	return vars, nil
}

// parseID decodes HID_ID, "BBBB:VVVVVVVV:PPPPPPPP" in hex.
func parseID(id string) (bus uint16, vendor, product uint32, err error) {
	parts := strings.Split(id, ":")
	if len(parts) != 3 || len(parts[0]) != 4 || len(parts[1]) != 8 || len(parts[2]) != 8 {
		return 0, 0, 0, fmt.Errorf("HID_ID %q is not BBBB:VVVVVVVV:PPPPPPPP", clipString(id))
	}
	var v [3]uint64
	for i, p := range parts {
		if v[i], err = strconv.ParseUint(p, 16, 32); err != nil {
			return 0, 0, 0, fmt.Errorf("HID_ID %q: field %d %q is not hex", id, i+1, p)
		}
	}
	return uint16(v[0]), uint32(v[1]), uint32(v[2]), nil
}
