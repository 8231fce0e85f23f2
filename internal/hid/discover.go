// SPDX-License-Identifier: Apache-2.0

package hid

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
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
// Nodes are the device's evdev nodes, sorted by path; empty while no HID
// driver has bound or the driver made no input device.
type Device struct {
	Address string
	Adapter string
	Name    string
	Vendor  uint32
	Product uint32
	SysName string
	DevPath string
	Nodes   []Node
}

// Node is one evdev node: Path is its name below the /dev root
// ("/dev/input/event18"), Major and Minor the character device number the
// kernel gave it, which is what a container runtime creates the node from.
// The number names the device, the path only names whatever holds the
// number now: evdev gives a new input device the lowest free minor
// (input_get_new_minor in drivers/input/input.c), so once a device is gone
// its path and number are handed to the next input device that registers.
type Node struct {
	Path  string
	Major uint32
	Minor uint32
}

// String returns "PATH (c MAJOR:MINOR)".
func (n Node) String() string { return fmt.Sprintf("%s (c %d:%d)", n.Path, n.Major, n.Minor) }

// InputMajor is the character major of every evdev node (INPUT_MAJOR in
// include/uapi/linux/major.h).
const InputMajor = 13

// inputMinors bounds an evdev node's minor: the input core's minors end
// at INPUT_MAX_CHAR_DEVICES (drivers/input/input.c).
const inputMinors = 1024

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
	var paths []string
	for _, n := range s.Nodes(address, adapter) {
		paths = append(paths, n.Path)
	}
	return slices.Compact(paths)
}

// Nodes is EventNodes with each node's device number: the evdev nodes of
// every device with the given address (BlueZ spelling) on the given adapter
// ("" for any; devices with no known adapter are kept), sorted by path and
// number, without duplicates. It returns nil when there are none.
func (s Scan) Nodes(address, adapter string) []Node {
	var nodes []Node
	for _, d := range s.Devices {
		if d.Address != address || (adapter != "" && d.Adapter != "" && d.Adapter != adapter) {
			continue
		}
		nodes = append(nodes, d.Nodes...)
	}
	slices.SortFunc(nodes, compareNodes)
	return slices.Compact(nodes)
}

func compareNodes(a, b Node) int {
	return cmp.Or(strings.Compare(a.Path, b.Path), cmp.Compare(a.Major, b.Major), cmp.Compare(a.Minor, b.Minor))
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
		Address: addr,
		Adapter: adapter,
		Name:    u.Name,
		Vendor:  u.Vendor,
		Product: u.Product,
		SysName: name,
		DevPath: "/" + filepath.ToSlash(rel),
		Nodes:   nodes,
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
// uevent and numbered by its MAJOR and MINOR. Only this depth is searched,
// so that the nodes of a child HID device (a receiver's paired devices sit
// below it) are not counted twice.
func eventNodes(dir, devRoot string) ([]Node, []error) {
	inputs, err := os.ReadDir(filepath.Join(dir, "input"))
	if err != nil {
		// No input directory: no driver bound yet, or a driver that made
		// no input device (hidraw only).
		return nil, nil
	}
	var nodes []Node
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
	slices.SortFunc(nodes, compareNodes)
	return nodes, problems
}

// evdevNode reads an eventM directory's uevent and returns devRoot/DEVNAME
// with the node's number. The number comes from the same read as the name:
// the driver core writes MAJOR, MINOR and DEVNAME into the uevent of every
// device with a device number (dev_uevent in drivers/base/core.c), the
// same number the directory's dev attribute prints, so name and number
// are one snapshot of one device. A number that is not an evdev number
// (major 13, minor below 1024) is refused: the node is handed to
// containers by this number, and a bad tree must not turn a disk's into
// a gamepad's.
func evdevNode(path, devRoot string) (Node, error) {
	data, err := readSmall(path)
	if err != nil {
		return Node{}, err
	}
	return parseEvdevNode(data, devRoot)
}

// parseEvdevNode decodes an eventM directory's uevent file into the node
// devRoot/DEVNAME and its number; errors as evdevNode's.
func parseEvdevNode(data []byte, devRoot string) (Node, error) {
	vars, err := parseVars(data)
	if err != nil {
		return Node{}, err
	}
	name := vars["DEVNAME"]
	if !evdevNamePattern.MatchString(name) {
		return Node{}, fmt.Errorf("DEVNAME %q is not input/eventN", clipString(name))
	}
	// A Linux device number has a 12-bit major and a 20-bit minor
	// (MAJOR and MINOR in include/linux/kdev_t.h).
	major, err := deviceNumber(vars, "MAJOR", 1<<12)
	if err != nil {
		return Node{}, err
	}
	minor, err := deviceNumber(vars, "MINOR", 1<<20)
	if err != nil {
		return Node{}, err
	}
	if major != InputMajor || minor >= inputMinors {
		return Node{}, fmt.Errorf("%s is char %d:%d, not an evdev number (major %d, minor below %d)", name, major, minor, InputMajor, inputMinors)
	}
	return Node{Path: filepath.Join(devRoot, name), Major: major, Minor: minor}, nil
}

// deviceNumber parses a uevent's MAJOR or MINOR: a decimal below limit.
func deviceNumber(vars map[string]string, key string, limit uint64) (uint32, error) {
	v, ok := vars[key]
	if !ok {
		return 0, fmt.Errorf("uevent has no %s", key)
	}
	n, err := strconv.ParseUint(v, 10, 32)
	if err != nil || n >= limit {
		return 0, fmt.Errorf("%s %q is not a decimal below %d", key, clipString(v), limit)
	}
	return uint32(n), nil
}

// readSmall reads a sysfs attribute: a regular file of at most one page
// (regularfile.Read refuses anything else before opening it, since a named
// pipe in a bad root would stall every pass).
func readSmall(path string) ([]byte, error) {
	return regularfile.Read(path, maxUeventFile)
}
