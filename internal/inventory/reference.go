// SPDX-License-Identifier: Apache-2.0

package inventory

import "github.com/liken-sh/operators/internal/dra"

// AttributeReference lists every attribute Discover can publish on a
// sound controller or a Bluetooth adapter, the attributes liken's own
// liken.sh driver publishes too. docs/reference/attributes.md is rendered
// from it, and a test checks that Discover publishes nothing it does not
// list. The driver sets no taints.
var AttributeReference = []dra.AttributeDoc{
	{Name: "bus", Type: "string", Doc: "`pci`, `usb` or `platform`: the bus of the device the driver is bound to"},
	{Name: "driver", Type: "string", Doc: "the kernel driver bound to it (`snd_hda_intel`, `snd-usb-audio`, `btusb`)"},
	{Name: "address", Type: "string", Doc: "its address on the bus: a PCI function (`0000:00:1f.3`), a USB port path (`1-8.1`) or a platform device name"},
	{Name: "resource.kubernetes.io/pciBusID", Type: "string", Doc: "the PCI function, under the name Kubernetes gives it; PCI only"},
	{Name: "classCode", Type: "string", Doc: "the PCI class code (six hex digits, `040300`) or the USB interface class (two, `e0`)"},
	{Name: "class", Type: "string", Doc: "the class's name (`multimedia`, `wireless`, `audio`); absent for a class the driver does not name"},
	{Name: "vendor", Type: "string", Doc: "the vendor id, four lowercase hex digits"},
	{Name: "product", Type: "string", Doc: "the product (PCI device) id, four lowercase hex digits"},
	{Name: "serial", Type: "string", Doc: "the USB device's serial number string; USB only"},
	{Name: "name", Type: "string", Doc: "on USB the device's product string, else the interface's; on PCI the device's name in the PCI ID database (absent when the database does not list it)"},
	{Name: "modalias", Type: "string", Doc: "the kernel's modalias for the device"},
	{Name: "subsystem", Type: "string", Doc: "`sound` on a sound controller"},
	{Name: "sound.liken.sh/supportsSound", Type: "bool", Doc: "true on a sound controller, which the audio operator's claim selects"},
}
