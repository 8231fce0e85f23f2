// SPDX-License-Identifier: Apache-2.0

package alsa

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// SysfsRoot is where sysfs is mounted.
const SysfsRoot = "/sys"

// CardIdentity is a card's hardware identity, read from sysfs: what stays
// the same across boots where the card number may not.
type CardIdentity struct {
	// Card is the card number this boot.
	Card int
	// ID is /sys/class/sound/card<N>/id, the card id ("PCH", "Loopback").
	ID string
	// Bus and Location place the hardware: the nearest PCI function or USB
	// device at or above the card's device. Bus "pci" with Location the
	// function address ("0000:00:1f.3"); Bus "usb" with Location the
	// device's port path ("3-1.1"). A SOF or other ASoC machine device
	// hangs below its PCI controller, so it is placed by that controller.
	// A card with neither above it (snd-aloop, snd-dummy) has its device's
	// own bus and name ("platform", "snd_aloop.0"); a card with no device
	// link has both empty.
	Bus, Location string
	// DeviceBus is the bus of the card's own device ("platform" for a SOF
	// machine driver; "usb" for a USB interface).
	DeviceBus string
	// Driver is the kernel driver bound to the card's device
	// ("snd_hda_intel", "snd-usb-audio", "sof_sdw", "snd_aloop"); "" when
	// none is bound.
	Driver string
	// USBVendor and USBProduct are a USB card's idVendor and idProduct (4
	// lowercase hex digits); USBSerial its serial string, "" when the
	// device has none; USBManufacturer and USBProductName its strings.
	USBVendor, USBProduct, USBSerial string
	USBManufacturer, USBProductName  string
	// DevicePath is the real sysfs directory of the card's device.
	DevicePath string
}

// ReadCardIdentity reads card's identity from the sysfs tree mounted at
// sysfs (normally SysfsRoot): /sys/class/sound/card<N>, its device link
// resolved, and the device's ancestors. A card the tree does not have
// wraps fs.ErrNotExist; an unreadable attribute is an error naming it.
func ReadCardIdentity(sysfs string, card int) (CardIdentity, error) {
	id := CardIdentity{Card: card}
	cardDir := filepath.Join(sysfs, "class", "sound", "card"+strconv.Itoa(card))
	if _, err := os.Stat(cardDir); err != nil {
		return id, fmt.Errorf("card %d in sysfs: %w", card, err)
	}
	var err error
	if id.ID, err = readAttr(filepath.Join(cardDir, "id")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return id, err
	}
	dev, err := filepath.EvalSymlinks(filepath.Join(cardDir, "device"))
	if errors.Is(err, fs.ErrNotExist) {
		return id, nil // a virtual card: nothing places it
	}
	if err != nil {
		return id, fmt.Errorf("card %d device in sysfs: %w", card, err)
	}
	devices, err := filepath.EvalSymlinks(filepath.Join(sysfs, "devices"))
	if err != nil {
		return id, fmt.Errorf("sysfs at %s: %w", sysfs, err)
	}
	id.DevicePath = dev
	id.DeviceBus = linkBase(filepath.Join(dev, "subsystem"))
	if id.Driver, err = boundDriver(dev); err != nil {
		return id, err
	}
	for d := dev; d != devices && strings.HasPrefix(d, devices+string(filepath.Separator)); d = filepath.Dir(d) {
		switch linkBase(filepath.Join(d, "subsystem")) {
		case "pci":
			id.Bus, id.Location = "pci", filepath.Base(d)
			return id, nil
		case "usb":
			if _, err := os.Stat(filepath.Join(d, "idVendor")); err != nil {
				continue // an interface; its device is above
			}
			id.Bus, id.Location = "usb", filepath.Base(d)
			for _, a := range []struct {
				file     string
				dst      *string
				optional bool
			}{
				{"idVendor", &id.USBVendor, false}, {"idProduct", &id.USBProduct, false},
				{"serial", &id.USBSerial, true}, {"manufacturer", &id.USBManufacturer, true},
				{"product", &id.USBProductName, true},
			} {
				v, err := readAttr(filepath.Join(d, a.file))
				if err != nil && !(a.optional && errors.Is(err, fs.ErrNotExist)) {
					return id, err
				}
				*a.dst = v
			}
			id.USBVendor, id.USBProduct = strings.ToLower(id.USBVendor), strings.ToLower(id.USBProduct)
			return id, nil
		}
	}
	id.Bus, id.Location = id.DeviceBus, filepath.Base(dev)
	return id, nil
}

// readAttr reads a one-line sysfs attribute, trimmed.
func readAttr(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	return strings.TrimSpace(string(b)), nil
}

// linkBase is the last element of a symlink's target ("pci" for
// subsystem -> ../../../bus/pci), "" when there is no link.
func linkBase(path string) string {
	target, err := os.Readlink(path)
	if err != nil {
		return ""
	}
	return filepath.Base(target)
}

// boundDriver is the device's driver: the driver link, else DRIVER= in its
// uevent file (the kernel writes both).
func boundDriver(dev string) (string, error) {
	if d := linkBase(filepath.Join(dev, "driver")); d != "" {
		return d, nil
	}
	f, err := os.Open(filepath.Join(dev, "uevent"))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read %s: %w", filepath.Join(dev, "uevent"), err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "DRIVER="); ok {
			return v, nil
		}
	}
	return "", sc.Err()
}
