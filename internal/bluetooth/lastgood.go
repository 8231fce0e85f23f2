// SPDX-License-Identifier: Apache-2.0

package bluetooth

import (
	"errors"
	"fmt"
	"slices"

	"github.com/godbus/dbus/v5"

	"github.com/liken-sh/operators/internal/bluez"
)

// keepLastGood returns objs with the Paired, Bonded and Address of each
// device that this read has with the wrong D-Bus type (a
// *bluez.PropertyError among objs.Problems) taken from the previous read,
// when the previous read had the device. bluez reads such a property as
// absent, i.e. false or "", and that alone would take a published device
// out of the slice, stranding the claim that holds it; bluez.Objects
// promises that one odd property does not hide a device. Each value kept
// is described in the returned problems. objs itself is not modified.
func keepLastGood(prev []bluez.Device, objs bluez.Objects) (bluez.Objects, []error) {
	odd := map[dbus.ObjectPath][]string{}
	for _, p := range objs.Problems {
		var pe *bluez.PropertyError
		if !errors.As(p, &pe) || pe.Interface != bluez.DeviceInterface {
			continue
		}
		switch pe.Property {
		case "Paired", "Bonded", "Address":
			odd[pe.Path] = append(odd[pe.Path], pe.Property)
		}
	}
	if len(odd) == 0 {
		return objs, nil
	}
	last := map[dbus.ObjectPath]bluez.Device{}
	for _, d := range prev {
		last[d.Path] = d
	}
	var kept []error
	objs.Devices = slices.Clone(objs.Devices)
	for i := range objs.Devices {
		d := &objs.Devices[i]
		was, ok := last[d.Path]
		if !ok {
			continue
		}
		for _, property := range odd[d.Path] {
			var value any
			switch property {
			case "Paired":
				d.Paired, value = was.Paired, was.Paired
			case "Bonded":
				d.Bonded, value = was.Bonded, was.Bonded
			case "Address":
				d.Address, value = was.Address, fmt.Sprintf("%q", was.Address)
			}
			kept = append(kept, fmt.Errorf("device %s: %s unreadable in this read; kept %v from the previous one", d.Path, property, value))
		}
	}
	return objs, kept
}
