// SPDX-License-Identifier: Apache-2.0

package inventory

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
	cdispec "tags.cncf.io/container-device-interface/specs-go"

	"github.com/liken-sh/operators/internal/dra"
)

// Node is a character device node a claim delivers.
type Node struct {
	// Name is the node's path below /dev, as the kernel's DEVNAME gives
	// it: "snd/controlC0", "input/event12", "bus/usb/001/005".
	Name string
	// Major and Minor are its device numbers.
	Major, Minor uint32
}

// Device numbers the kernel fixes (include/linux/miscdevice.h UINPUT_MINOR
// and UHID_MINOR on the misc major 10; drivers/input/evdev.c EVDEV_MINOR_BASE
// on the input major 13, whose first 32 minors are the legacy eventN nodes).
const (
	miscMajor        = 10
	uinputMinor      = 223
	uhidMinor        = 239
	inputMajor       = 13
	legacyEventBase  = 64
	legacyEventNodes = 32
)

// Limits of one walk of a controller's subtree, so that a tree that is not
// the kernel's (a test root, a bind-mount loop) cannot stall prepare.
const (
	walkEntries = 20000
	walkDepth   = 16
)

var errWalkLimit = errors.New("more entries than a device's subtree holds")

// Nodes returns what a claim on f delivers, read from the sysfs at root
// now, sorted by name.
//
// A sound controller delivers every /dev/snd and /dev/input/event* node in
// its subtree (the card's control, PCM and hwdep nodes, and its jacks'
// input nodes), plus /dev/snd/timer and /dev/snd/seq where the kernel has
// them. A Bluetooth adapter delivers its USB device's usbfs node,
// /dev/uinput, /dev/uhid where sysfs or devRoot shows it, and
// /dev/input/event0 to event31 by number.
//
// Errors: a sound controller with no node in its subtree (the card is
// going away), an adapter whose USB device shows no usbfs node, a subtree
// larger than a device's.
func Nodes(root, devRoot string, f Found) ([]Node, error) {
	s, err := openSysfs(root)
	if err != nil {
		return nil, err
	}
	var nodes []Node
	switch f.Kind {
	case SoundController:
		nodes, err = subtreeNodes(f.Path, func(name string) bool {
			return strings.HasPrefix(name, "snd/") || strings.HasPrefix(name, "input/event")
		})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.Device.Name, err)
		}
		if len(nodes) == 0 {
			return nil, fmt.Errorf("%s: no sound device node below %s", f.Device.Name, f.Path)
		}
		for _, global := range []string{"timer", "seq"} {
			if dir, err := s.resolve(filepath.Join(root, "class", "sound", global)); err == nil {
				if n, ok := nodeOf(dir); ok {
					nodes = append(nodes, n)
				}
			}
		}
	case BluetoothAdapter:
		usb, ok := usbfsNode(f.USBDevice)
		if !ok {
			return nil, fmt.Errorf("%s: the USB device %s shows no usbfs node", f.Device.Name, f.USBDevice)
		}
		nodes = append(nodes, usb, Node{Name: "uinput", Major: miscMajor, Minor: uinputMinor})
		if s.hasMisc(root, devRoot, "uhid", uhidMinor) {
			nodes = append(nodes, Node{Name: "uhid", Major: miscMajor, Minor: uhidMinor})
		}
		for i := range legacyEventNodes {
			nodes = append(nodes, Node{Name: "input/event" + strconv.Itoa(i), Major: inputMajor, Minor: uint32(legacyEventBase + i)})
		}
	default:
		return nil, fmt.Errorf("%s: unknown kind %d", f.Device.Name, f.Kind)
	}
	slices.SortFunc(nodes, func(a, b Node) int { return strings.Compare(a.Name, b.Name) })
	return slices.CompactFunc(nodes, func(a, b Node) bool { return a.Name == b.Name }), nil
}

// subtreeNodes walks dir, without following links and not into a
// bluetooth subtree (a connected peripheral's nodes belong to the
// peripheral), collecting the device nodes whose name keep accepts.
func subtreeNodes(dir string, keep func(name string) bool) ([]Node, error) {
	var nodes []Node
	visited := 0
	depth0 := strings.Count(dir, string(filepath.Separator))
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // gone while walking: the next pass sees it
		}
		if visited++; visited > walkEntries {
			return fmt.Errorf("%s: %w (stopped at %d)", dir, errWalkLimit, walkEntries)
		}
		if !d.IsDir() {
			return nil
		}
		if d.Name() == "bluetooth" || strings.Count(path, string(filepath.Separator))-depth0 > walkDepth {
			return filepath.SkipDir
		}
		if n, ok := nodeOf(path); ok && keep(n.Name) {
			nodes = append(nodes, n)
		}
		return nil
	})
	return nodes, err
}

// nodeOf reads a device directory's node from its uevent (DEVNAME, MAJOR
// and MINOR, drivers/base/core.c dev_uevent).
func nodeOf(dir string) (Node, bool) {
	env := ueventVars(dir)
	return parseNode(env["DEVNAME"], env["MAJOR"], env["MINOR"])
}

// parseNode checks a DEVNAME and its numbers: a clean relative path that
// stays below /dev, and decimal numbers that fit the kernel's dev_t (12
// bits of major, 20 of minor).
func parseNode(name, major, minor string) (Node, bool) {
	if name == "" || !filepath.IsLocal(name) || filepath.Clean(name) != name || strings.ContainsAny(name, "\x00\n") {
		return Node{}, false
	}
	ma, err1 := strconv.ParseUint(major, 10, 12)
	mi, err2 := strconv.ParseUint(minor, 10, 20)
	if err1 != nil || err2 != nil {
		return Node{}, false
	}
	return Node{Name: name, Major: uint32(ma), Minor: uint32(mi)}, true
}

// usbfsNode is a USB device's /dev/bus/usb/BBB/DDD node: from its uevent,
// else from its dev, busnum and devnum attributes (drivers/usb/core/usb.c
// usb_devnode names it from the two numbers).
func usbfsNode(dev string) (Node, bool) {
	if n, ok := nodeOf(dev); ok && strings.HasPrefix(n.Name, "bus/usb/") {
		return n, true
	}
	numbers, ok1 := attr(dev, "dev")
	bus, ok2 := attr(dev, "busnum")
	num, ok3 := attr(dev, "devnum")
	if !ok1 || !ok2 || !ok3 {
		return Node{}, false
	}
	major, minor, _ := strings.Cut(numbers, ":")
	b, err1 := strconv.Atoi(bus)
	d, err2 := strconv.Atoi(num)
	if err1 != nil || err2 != nil || b < 1 || b > 999 || d < 1 || d > 999 {
		return Node{}, false
	}
	return parseNode(fmt.Sprintf("bus/usb/%03d/%03d", b, d), major, minor)
}

// hasMisc reports whether the kernel has the misc device name: registered
// (/sys/class/misc/<name>), or a node of that number in devRoot (a static
// node kmod made for a module that loads when the node is opened).
func (s sysfs) hasMisc(root, devRoot, name string, minor uint32) bool {
	if _, err := s.resolve(filepath.Join(root, "class", "misc", name)); err == nil {
		return true
	}
	var st unix.Stat_t
	if err := unix.Stat(filepath.Join(devRoot, name), &st); err != nil {
		return false
	}
	return st.Mode&unix.S_IFMT == unix.S_IFCHR && unix.Major(st.Rdev) == miscMajor && unix.Minor(st.Rdev) == minor
}

// Edits are the CDI container edits that deliver nodes and nothing else:
// each a character device at /dev/<name> with the kernel's numbers, so the
// runtime creates it whether or not the host has the node yet. Where the
// host's node (seen under devRoot, the host's /dev as this process sees
// it) is that very device, its permissions and owner are carried over, so
// a consumer's group membership works as on the host.
func Edits(nodes []Node, devRoot string) dra.ContainerEdits {
	var edits dra.ContainerEdits
	for _, n := range nodes {
		host := filepath.Join(devRoot, n.Name)
		dn := &cdispec.DeviceNode{Path: "/dev/" + n.Name, Type: "c", Major: int64(n.Major), Minor: int64(n.Minor)}
		var st unix.Stat_t
		if unix.Stat(host, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFCHR &&
			unix.Major(st.Rdev) == n.Major && unix.Minor(st.Rdev) == n.Minor {
			mode := os.FileMode(st.Mode & 0o777)
			uid, gid := st.Uid, st.Gid
			dn.FileMode, dn.UID, dn.GID = &mode, &uid, &gid
		}
		edits.DeviceNodes = append(edits.DeviceNodes, dn)
	}
	return edits
}

// Absent are the edits of a device that is gone, made from the edits it
// was prepared with: the same node paths without their numbers. The
// runtime then looks each node up on the host, finds none, and the
// claim's next container does not start, rather than being given, by
// number, whatever device took the number since (a USB device number and
// an evdev minor are reused). When the device returns, the next pass
// writes its nodes again.
func Absent(prepared dra.ContainerEdits) dra.ContainerEdits {
	var edits dra.ContainerEdits
	for _, dn := range prepared.DeviceNodes {
		edits.DeviceNodes = append(edits.DeviceNodes, &cdispec.DeviceNode{Path: dn.Path})
	}
	return edits
}
