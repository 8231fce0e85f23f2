// SPDX-License-Identifier: Apache-2.0

package inventory

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/liken-sh/operators/internal/dra"
	"github.com/liken-sh/operators/internal/pciids"
)

// Kind tells the two kinds of device this driver publishes apart.
type Kind int

const (
	// SoundController is a PCI function, USB interface or board device
	// whose subtree holds an ALSA card.
	SoundController Kind = iota + 1
	// BluetoothAdapter is a USB interface bound to btusb.
	BluetoothAdapter
)

// BluetoothDriver is the kernel driver whose interfaces are published as
// Bluetooth adapters (drivers/bluetooth/btusb.c).
const BluetoothDriver = "btusb"

// Found is one device discovery published.
type Found struct {
	// Device is the name and attributes as published.
	Device dra.Device
	// Kind is what the device is.
	Kind Kind
	// Path is the device's sysfs directory, links resolved.
	Path string
	// USBDevice is, for a USB interface, the sysfs directory of the USB
	// device it belongs to (the one with the usbfs node); "" otherwise.
	USBDevice string
}

// Scan is one walk of sysfs.
type Scan struct {
	// Devices are sorted by name.
	Devices []Found
	// Problems say, one a line, what was left out and why (a link loop, a
	// name taken twice); they name the sysfs path.
	Problems []string
}

// Lookup returns the device of that name.
func (s Scan) Lookup(name string) (Found, bool) {
	i := slices.IndexFunc(s.Devices, func(f Found) bool { return f.Device.Name == name })
	if i < 0 {
		return Found{}, false
	}
	return s.Devices[i], true
}

// cardEntry is the name of a card in /sys/class/sound (sound/core/init.c,
// snd_card_init: "card%i").
var cardEntry = regexp.MustCompile(`^card[0-9]+$`)

// Discover walks the sysfs mounted at root (normally /sys) for sound
// controllers and btusb interfaces. A PCI device's name comes from pci
// (nil: PCI devices have no name). It fails only when root holds no
// devices directory; a device it cannot place is left out with a line in
// Problems.
func Discover(root string, pci *pciids.DB) (Scan, error) {
	s, err := openSysfs(root)
	if err != nil {
		return Scan{}, err
	}
	s.pci = pci
	var scan Scan
	byPath := map[string]bool{}
	add := func(f Found, ok bool, err error) {
		switch {
		case err != nil:
			scan.Problems = append(scan.Problems, err.Error())
		case ok && !byPath[f.Path]:
			byPath[f.Path] = true
			scan.Devices = append(scan.Devices, f)
		}
	}
	for _, card := range entries(filepath.Join(root, "class", "sound"), cardEntry) {
		add(s.soundController(filepath.Join(root, "class", "sound", card)))
	}
	for _, intf := range entries(filepath.Join(root, "bus", "usb", "devices"), usbInterface) {
		add(s.bluetoothAdapter(filepath.Join(root, "bus", "usb", "devices", intf)))
	}
	slices.SortFunc(scan.Devices, func(a, b Found) int { return strings.Compare(a.Device.Name, b.Device.Name) })
	// Two devices whose names cut to 63 characters agree: the first keeps
	// the name, the others are left out and said.
	scan.Devices = slices.CompactFunc(scan.Devices, func(a, b Found) bool {
		if a.Device.Name != b.Device.Name {
			return false
		}
		scan.Problems = append(scan.Problems, fmt.Sprintf("%s: its device name %q is %s's too; left out", b.Path, b.Device.Name, a.Path))
		return true
	})
	slices.Sort(scan.Problems)
	return scan, nil
}

// entries lists the names in dir that match shape, sorted; a missing or
// unreadable dir lists none.
func entries(dir string, shape *regexp.Regexp) []string {
	list, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range list {
		if shape.MatchString(e.Name()) {
			out = append(out, e.Name())
		}
	}
	return out
}

// soundController places the card of a /sys/class/sound entry: its device
// link, then up to the nearest PCI function or USB interface, else the
// nearest board (platform) device. ok is false for a card nothing places
// (a virtual card has no device link).
func (s sysfs) soundController(entry string) (Found, bool, error) {
	card, err := s.resolve(entry)
	if err != nil {
		return Found{}, false, fmt.Errorf("sound card %s: %w", filepath.Base(entry), err)
	}
	if _, err := os.Lstat(filepath.Join(card, "device")); err != nil {
		return Found{}, false, nil
	}
	dev, err := s.resolve(filepath.Join(card, "device"))
	if err != nil {
		return Found{}, false, fmt.Errorf("sound card %s: %w", filepath.Base(entry), err)
	}
	var platform string
	for d := dev; s.inside(d); d = filepath.Dir(d) {
		switch busOf(d) {
		case "pci":
			return s.found(SoundController, d, "pci")
		case "usb":
			if usbInterface.MatchString(filepath.Base(d)) {
				return s.found(SoundController, d, "usb")
			}
		case "platform":
			if platform == "" {
				platform = d
			}
		}
	}
	if platform == "" {
		return Found{}, false, fmt.Errorf("sound card %s: no PCI, USB or platform device above %s", filepath.Base(entry), dev)
	}
	return s.found(SoundController, platform, "platform")
}

// bluetoothAdapter is a /sys/bus/usb/devices entry if it is an interface
// bound to btusb.
func (s sysfs) bluetoothAdapter(entry string) (Found, bool, error) {
	dir, err := s.resolve(entry)
	if err != nil {
		return Found{}, false, fmt.Errorf("USB interface %s: %w", filepath.Base(entry), err)
	}
	if driverOf(dir) != BluetoothDriver {
		return Found{}, false, nil
	}
	return s.found(BluetoothAdapter, dir, "usb")
}

// found names a device and reads its attributes. A device with no driver
// bound is not published (ok false).
func (s sysfs) found(kind Kind, dir, bus string) (Found, bool, error) {
	driver := driverOf(dir)
	if driver == "" {
		return Found{}, false, nil
	}
	base := filepath.Base(dir)
	attrs := dra.Attributes{"bus": dra.String(bus)}
	set := func(name dra.QualifiedName, value string) {
		if v, ok := attributeText(value); ok {
			attrs[name] = dra.String(v)
		}
	}
	set("driver", driver)
	f := Found{Kind: kind, Path: dir}
	switch bus {
	case "pci":
		f.Device.Name = DeviceName("pci", base)
		set("address", base)
		set("resource.kubernetes.io/pciBusID", base)
		if class, ok := attr(dir, "class"); ok {
			code := strings.ToLower(strings.TrimPrefix(class, "0x"))
			if len(code) == 6 {
				set("classCode", code)
				set("class", pciClasses[code[:2]])
			}
		}
		vendor, product := hexID(dir, "vendor"), hexID(dir, "device")
		set("vendor", vendor)
		set("product", product)
		v, verr := strconv.ParseUint(vendor, 16, 16)
		d, derr := strconv.ParseUint(product, 16, 16)
		if verr == nil && derr == nil {
			if n, ok := s.pci.Names(uint16(v), uint16(d)); ok {
				set("name", n.Device)
			}
		}
	case "usb":
		m := usbInterface.FindStringSubmatch(base)
		if m == nil {
			return Found{}, false, fmt.Errorf("%s: not a USB interface name", dir)
		}
		port, number := m[1], m[3]
		if n, ok := attr(dir, "bInterfaceNumber"); ok {
			if v, err := strconv.ParseUint(n, 16, 8); err == nil {
				number = strconv.FormatUint(v, 10)
			}
		}
		f.Device.Name = DeviceName("usb", port+"-"+number)
		f.USBDevice = filepath.Dir(dir)
		set("address", port)
		if class, ok := attr(dir, "bInterfaceClass"); ok {
			code := strings.ToLower(class)
			if len(code) == 2 {
				set("classCode", code)
				set("class", usbClasses[code])
			}
		}
		set("vendor", hexID(f.USBDevice, "idVendor"))
		set("product", hexID(f.USBDevice, "idProduct"))
		if v, ok := attr(f.USBDevice, "serial"); ok {
			set("serial", v)
		}
		if v, ok := attr(f.USBDevice, "product"); ok {
			set("name", v)
		} else if v, ok := attr(dir, "interface"); ok {
			set("name", v)
		}
	case "platform":
		f.Device.Name = DeviceName("platform", base)
		set("address", base)
	}
	if f.Device.Name == "" {
		return Found{}, false, fmt.Errorf("%s: nothing of a device name is left of %q", dir, base)
	}
	if v, ok := attr(dir, "modalias"); ok {
		set("modalias", v)
	} else if v := ueventVars(dir)["MODALIAS"]; v != "" {
		set("modalias", v)
	}
	if kind == SoundController {
		set("subsystem", "sound")
		attrs["sound.liken.sh/supportsSound"] = dra.Bool(true)
	}
	f.Device.Attributes = attrs
	return f, true, nil
}

// hexID reads a vendor or product id (PCI "0x8086", USB "8086") as
// lowercase hex with no prefix; "" when absent or not hex.
func hexID(dir, name string) string {
	v, ok := attr(dir, name)
	if !ok {
		return ""
	}
	v = strings.ToLower(strings.TrimPrefix(strings.TrimPrefix(v, "0x"), "0X"))
	if _, err := strconv.ParseUint(v, 16, 32); err != nil {
		return ""
	}
	return v
}
