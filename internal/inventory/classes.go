// SPDX-License-Identifier: Apache-2.0

package inventory

// pciClasses are one-word names of the PCI base classes (the first byte of
// a function's class code), after the PCI Code and ID Assignment
// Specification's class table.
var pciClasses = map[string]string{
	"00": "unclassified", "01": "storage", "02": "network", "03": "display",
	"04": "multimedia", "05": "memory", "06": "bridge", "07": "communication",
	"08": "system", "09": "input", "0a": "docking", "0b": "processor",
	"0c": "serial-bus", "0d": "wireless", "0e": "intelligent", "0f": "satellite",
	"10": "encryption", "11": "signal-processing", "12": "accelerator",
	"13": "instrumentation", "40": "coprocessor",
}

// usbClasses are one-word names of the USB interface classes (bInterfaceClass),
// after usb.org's "Defined Class Codes".
var usbClasses = map[string]string{
	"01": "audio", "02": "communications", "03": "hid", "05": "physical",
	"06": "image", "07": "printer", "08": "mass-storage", "09": "hub",
	"0a": "cdc-data", "0b": "smart-card", "0d": "content-security", "0e": "video",
	"0f": "personal-healthcare", "10": "audio-video", "11": "billboard",
	"12": "type-c-bridge", "dc": "diagnostic", "e0": "wireless",
	"ef": "miscellaneous", "fe": "application-specific", "ff": "vendor-specific",
}
