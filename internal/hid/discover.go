// SPDX-License-Identifier: Apache-2.0

package hid

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/liken-sh/operators/internal/regularfile"
)

// Default roots: the host's sysfs and device directory.
const (
	DefaultSysRoot = "/sys"
	DefaultDevRoot = "/dev"
)

// Device is one Bluetooth HID device registered with the kernel.
//
// Address is the peer's address (HID_UNIQ) in BlueZ's spelling. Adapter is
// the local adapter's address (HID_PHYS) in the same spelling, or "" when
// HID_PHYS is not an address. Name is HID_NAME verbatim. Vendor and Product
// come from HID_ID. SysName is the HID bus name ("0005:VVVV:PPPP.NNNN"),
// which changes at every connection. DevPath is the device directory below
// the sysfs root with a leading slash, the form of a uevent's DEVPATH.
// EventNodes are the device's evdev nodes below the /dev root, sorted
// (e.g. "/dev/input/event18"); empty while no HID driver has bound or the
// driver made no input device.
type Device struct {
	Address    string
	Adapter    string
	Name       string
	Vendor     uint32
	Product    uint32
	SysName    string
	DevPath    string
	EventNodes []string
}

// Scan is the result of one Discover pass.
//
// Devices are sorted by Address, then DevPath. Skipped holds one error per
// Bluetooth HID entry, or per evdev node of one, that could not be read or
// parsed; the entry (or node) is left out and the rest of the scan is
// complete. An entry that vanished while being read (the device went away;
// its removal uevent follows) is left out silently.
type Scan struct {
	Devices []Device
	Skipped []error
}

// EntryError names the sysfs path that a Skipped problem was found at.
type EntryError struct {
	Path string
	Err  error
}

// Error returns "hid: PATH: reason".
func (e *EntryError) Error() string { return fmt.Sprintf("hid: %s: %v", e.Path, e.Err) }

// Unwrap returns the underlying error.
func (e *EntryError) Unwrap() error { return e.Err }

// EventNodes returns the evdev nodes of every device with the given address
// (BlueZ spelling), merged, sorted and without duplicates; a device that
// reconnected quickly can be listed twice for a moment. When adapter is not
// "", devices whose Adapter is a different address are left out; devices
// with no known adapter are kept. It returns nil when there are none, which
// is the operator's "no input node" condition.
func (s Scan) EventNodes(address, adapter string) []string {
	var nodes []string
	for _, d := range s.Devices {
		if d.Address != address || (adapter != "" && d.Adapter != "" && d.Adapter != adapter) {
			continue
		}
		nodes = append(nodes, d.EventNodes...)
	}
	slices.Sort(nodes)
	return slices.Compact(nodes)
}

// sysNamePattern is the HID bus name, "%04X:%04X:%04X.%04X" in hid-core.c;
// the instance counter can grow past four digits.
var sysNamePattern = regexp.MustCompile(`^[0-9A-F]{4}:[0-9A-F]{4}:[0-9A-F]{4}\.[0-9A-F]{4,8}$`)

// bluetoothPrefix starts the bus name of every Bluetooth HID device.
const bluetoothPrefix = "0005:"

// Discover lists the Bluetooth HID devices under sysRoot (normally
// DefaultSysRoot): every entry of <sysRoot>/bus/hid/devices whose name starts
// with "0005:", whatever directory it links to. Evdev nodes are the
// input/inputN/eventM directories below the device, named by their DEVNAME
// under devRoot (normally DefaultDevRoot); joystick (jsN), mouse (mouseN) and
// hidraw nodes are not evdev and are never returned.
//
// It returns an error only when sysRoot is not a readable sysfs (no
// <sysRoot>/bus directory) or the HID bus directory cannot be listed. A
// kernel with no HID bus registered yet (hid module not loaded) has no
// bus/hid and gives an empty Scan. Problems with single entries go to
// Scan.Skipped.
func Discover(sysRoot, devRoot string) (Scan, error) {
	if fi, err := os.Stat(filepath.Join(sysRoot, "bus")); err != nil || !fi.IsDir() {
		if err == nil {
			err = errors.New("not a directory")
		}
		return Scan{}, fmt.Errorf("hid: %s is not a sysfs root: %w", sysRoot, err)
	}
	realRoot, err := filepath.EvalSymlinks(sysRoot)
	if err != nil {
		return Scan{}, fmt.Errorf("hid: resolve sysfs root %s: %w", sysRoot, err)
	}
	busDir := filepath.Join(sysRoot, "bus", "hid", "devices")
	entries, err := os.ReadDir(busDir)
	if errors.Is(err, fs.ErrNotExist) {
		return Scan{}, nil
	}
	if err != nil {
		return Scan{}, fmt.Errorf("hid: list %s: %w", busDir, err)
	}
	var scan Scan
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, bluetoothPrefix) {
			continue
		}
		entry := filepath.Join(busDir, name)
		dev, problems, err := readDevice(realRoot, entry, name, devRoot)
		scan.Skipped = append(scan.Skipped, problems...)
		if err != nil {
			if _, lerr := os.Lstat(entry); errors.Is(lerr, fs.ErrNotExist) {
				continue // removed while we read it
			}
			scan.Skipped = append(scan.Skipped, &EntryError{Path: entry, Err: err})
			continue
		}
		scan.Devices = append(scan.Devices, dev)
	}
	slices.SortFunc(scan.Devices, func(a, b Device) int {
		if c := strings.Compare(a.Address, b.Address); c != 0 {
			return c
		}
		return strings.Compare(a.DevPath, b.DevPath)
	})
	return scan, nil
}

// readDevice reads one bus entry. err means the entry is left out; problems
// are evdev nodes left out of a device that is kept.
func readDevice(realRoot, entry, name, devRoot string) (Device, []error, error) {
	if !sysNamePattern.MatchString(name) {
		return Device{}, nil, fmt.Errorf("name is not a HID bus name BBBB:VVVV:PPPP.NNNN")
	}
	dir, err := filepath.EvalSymlinks(entry)
	if err != nil {
		return Device{}, nil, err
	}
	rel, err := filepath.Rel(realRoot, dir)
	if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
		return Device{}, nil, fmt.Errorf("links to %s, outside the sysfs root %s", dir, realRoot)
	}
	data, err := readSmall(filepath.Join(dir, "uevent"))
	if err != nil {
		return Device{}, nil, err
	}
	u, err := ParseUevent(data)
	if err != nil {
		return Device{}, nil, err
	}
	if u.Bus != BusBluetooth {
		return Device{}, nil, fmt.Errorf("HID_ID bus %04X disagrees with the bus name", u.Bus)
	}
	addr, err := normalizeAddress(u.Uniq)
	if err != nil {
		return Device{}, nil, fmt.Errorf("HID_UNIQ: %w", err)
	}
	adapter, _ := normalizeAddress(u.Phys) // not every transport puts an address there
	nodes, problems := eventNodes(dir, devRoot)
	return Device{
		Address:    addr,
		Adapter:    adapter,
		Name:       u.Name,
		Vendor:     u.Vendor,
		Product:    u.Product,
		SysName:    name,
		DevPath:    "/" + filepath.ToSlash(rel),
		EventNodes: nodes,
	}, problems, nil
}

var (
	inputDirPattern = regexp.MustCompile(`^input[0-9]+$`)
	eventDirPattern = regexp.MustCompile(`^event[0-9]+$`)
	// evdev names its nodes "input/event%d" (evdev_devnode and
	// evdev_connect in drivers/input/evdev.c).
	evdevNamePattern = regexp.MustCompile(`^input/event[0-9]+$`)
)

// eventNodes returns the evdev nodes of the input devices directly below a
// HID device: <dir>/input/inputN/eventM, each named by the DEVNAME of its
// uevent. Only this depth is searched, so that the nodes of a child HID
// device (a receiver's paired devices sit below it) are not counted twice.
func eventNodes(dir, devRoot string) ([]string, []error) {
	inputs, err := os.ReadDir(filepath.Join(dir, "input"))
	if err != nil {
		// No input directory: no driver bound yet, or a driver that made
		// no input device (hidraw only).
		return nil, nil
	}
	var nodes []string
	var problems []error
	for _, in := range inputs {
		if !inputDirPattern.MatchString(in.Name()) {
			continue
		}
		children, err := os.ReadDir(filepath.Join(dir, "input", in.Name()))
		if err != nil {
			continue // removed while we read it
		}
		for _, c := range children {
			if !eventDirPattern.MatchString(c.Name()) {
				continue
			}
			path := filepath.Join(dir, "input", in.Name(), c.Name(), "uevent")
			node, err := evdevNode(path, devRoot)
			if err != nil {
				if !errors.Is(err, fs.ErrNotExist) {
					problems = append(problems, &EntryError{Path: path, Err: err})
				}
				continue
			}
			nodes = append(nodes, node)
		}
	}
	slices.Sort(nodes)
	return nodes, problems
}

// evdevNode reads an eventM directory's uevent and returns devRoot/DEVNAME.
func evdevNode(path, devRoot string) (string, error) {
	data, err := readSmall(path)
	if err != nil {
		return "", err
	}
	vars, err := parseVars(data)
	if err != nil {
		return "", err
	}
	name := vars["DEVNAME"]
	if !evdevNamePattern.MatchString(name) {
		return "", fmt.Errorf("DEVNAME %q is not input/eventN", clipString(name))
	}
	return filepath.Join(devRoot, name), nil
}

// readSmall reads a sysfs attribute: a regular file of at most one page
// (regularfile.Read refuses anything else before opening it, since a named
// pipe in a bad root would stall every pass).
func readSmall(path string) ([]byte, error) {
	return regularfile.Read(path, maxUeventFile)
}
