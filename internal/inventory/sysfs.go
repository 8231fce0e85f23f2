// SPDX-License-Identifier: Apache-2.0

package inventory

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"

	"github.com/liken-sh/operators/internal/pciids"
	"github.com/liken-sh/operators/internal/regularfile"
)

// maxAttribute bounds a sysfs attribute read: the kernel fills at most one
// page (fs/sysfs/file.c, sysfs_kf_seq_show).
const maxAttribute = 4096

// Shapes of the kernel's device names (drivers/pci/probe.c pci_setup_device
// "%04x:%02x:%02x.%d"; drivers/usb/core/message.c usb_set_configuration
// "%d-%s:%d.%d" for an interface, drivers/usb/core/usb.c "%d-%s" for a
// device below a root hub).
var (
	pciAddress   = regexp.MustCompile(`^[0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$`)
	usbInterface = regexp.MustCompile(`^([0-9]+-[0-9]+(?:\.[0-9]+)*):([0-9]+)\.([0-9]+)$`)
)

// sysfs reads one sysfs tree, normally mounted at /sys.
type sysfs struct {
	root    string
	devices string     // <root>/devices with every link resolved
	pci     *pciids.DB // PCI devices' names; nil: none
}

func openSysfs(root string) (sysfs, error) {
	devices, err := filepath.EvalSymlinks(filepath.Join(root, "devices"))
	if err != nil {
		return sysfs{}, fmt.Errorf("sysfs at %s: %w", root, err)
	}
	return sysfs{root: root, devices: devices}, nil
}

// inside reports whether dir is a device directory of this tree.
func (s sysfs) inside(dir string) bool {
	return strings.HasPrefix(dir, s.devices+string(filepath.Separator))
}

// resolve follows the links of a class or bus entry to the device
// directory. A loop of links, a link out of <root>/devices, and a dangling
// link are errors naming the entry.
func (s sysfs) resolve(entry string) (string, error) {
	dir, err := filepath.EvalSymlinks(entry)
	if err != nil {
		// filepath.EvalSymlinks gives up after 255 links with a bare
		// "too many links", the kernel's open with ELOOP.
		if errors.Is(err, syscall.ELOOP) || strings.Contains(err.Error(), "too many links") {
			return "", fmt.Errorf("%s: the links loop (%w)", entry, err)
		}
		return "", err
	}
	if !s.inside(dir) {
		return "", fmt.Errorf("%s leads to %s, outside %s", entry, dir, s.devices)
	}
	return dir, nil
}

// attr returns a sysfs attribute of dir, trimmed; ok is false when the
// attribute is absent, unreadable, not a regular file or empty.
func attr(dir, name string) (string, bool) {
	b, err := regularfile.Read(filepath.Join(dir, name), maxAttribute)
	if err != nil {
		return "", false
	}
	v := strings.TrimSpace(string(b))
	return v, v != ""
}

// ueventVars returns the KEY=VALUE lines of dir's uevent attribute
// (lib/kobject_uevent.c writes them for a read of the file, one a line).
func ueventVars(dir string) map[string]string {
	out := map[string]string{}
	b, err := regularfile.Read(filepath.Join(dir, "uevent"), maxAttribute)
	if err != nil {
		return out
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && k != "" {
			out[k] = v
		}
	}
	return out
}

// linkBase is the last element of the target of the link dir/name: the
// bus of a subsystem link, the driver of a driver link.
func linkBase(dir, name string) string {
	target, err := os.Readlink(filepath.Join(dir, name))
	if err != nil {
		return ""
	}
	return filepath.Base(target)
}

// driverOf is the driver bound to dir: its driver link, else the DRIVER
// its uevent states (a tree recorded without links).
func driverOf(dir string) string {
	if d := linkBase(dir, "driver"); d != "" {
		return d
	}
	return ueventVars(dir)["DRIVER"]
}

// busOf is the bus a device directory is on: its subsystem link, else
// what its name's shape says (a recording without links).
func busOf(dir string) string {
	if bus := linkBase(dir, "subsystem"); bus != "" {
		return bus
	}
	name := filepath.Base(dir)
	switch {
	case pciAddress.MatchString(name):
		return "pci"
	case usbInterface.MatchString(name):
		return "usb"
	}
	return ""
}
