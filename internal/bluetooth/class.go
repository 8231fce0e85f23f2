// SPDX-License-Identifier: Apache-2.0

package bluetooth

import "strings"

// Class is a Class of Device/Service value as BR/EDR devices send it in
// inquiry responses and BlueZ reports it in Device1.Class: 24 bits, of
// which format #1 (format type bits 1..0 = 00) defines service bits 23..13,
// a major device class in bits 12..8 and a minor device class in bits 7..2
// that is read under the major class. Source: Bluetooth Assigned Numbers,
// section 2.8 "Class of Device".
type Class uint32

// Valid reports whether c is a non-zero 24-bit value in format #1, the only
// format defined. Other values decode to nothing.
func (c Class) Valid() bool { return c != 0 && c <= 0xFFFFFF && c&0x3 == 0 }

func (c Class) major() uint32 { return uint32(c>>8) & 0x1F }
func (c Class) minor() uint32 { return uint32(c>>2) & 0x3F }

// Major device classes (bits 12..8).
var majorClasses = map[uint32]string{
	0x00: "miscellaneous",
	0x01: "computer",
	0x02: "phone",
	0x03: "lan-access-point",
	0x04: "audio-video",
	0x05: "peripheral",
	0x06: "imaging",
	0x07: "wearable",
	0x08: "toy",
	0x09: "health",
	0x1F: "uncategorized",
}

// Major returns the major device class name, or "" for a reserved value
// or an invalid class.
func (c Class) Major() string {
	if !c.Valid() {
		return ""
	}
	return majorClasses[c.major()]
}

// Minor device classes by major class (bits 7..2 as one number), for the
// majors whose minor is a plain enumeration. Peripheral and imaging are
// bit fields and are decoded in Minor; LAN access points carry a load
// factor there, which changes with traffic and is no durable fact.
var minorClasses = map[uint32]map[uint32]string{
	0x01: { // computer
		0x01: "desktop", 0x02: "server", 0x03: "laptop", 0x04: "handheld",
		0x05: "palm", 0x06: "wearable", 0x07: "tablet",
	},
	0x02: { // phone
		0x01: "cellular", 0x02: "cordless", 0x03: "smartphone", 0x04: "wired-modem", 0x05: "isdn",
	},
	0x04: { // audio-video
		0x01: "wearable-headset", 0x02: "hands-free", 0x04: "microphone", 0x05: "loudspeaker",
		0x06: "headphones", 0x07: "portable-audio", 0x08: "car-audio", 0x09: "set-top-box",
		0x0A: "hifi-audio", 0x0B: "vcr", 0x0C: "video-camera", 0x0D: "camcorder",
		0x0E: "video-monitor", 0x0F: "video-display-loudspeaker", 0x10: "video-conferencing",
		0x12: "gaming",
	},
	0x07: { // wearable
		0x01: "wristwatch", 0x02: "pager", 0x03: "jacket", 0x04: "helmet", 0x05: "glasses",
	},
	0x08: { // toy
		0x01: "robot", 0x02: "vehicle", 0x03: "doll", 0x04: "controller", 0x05: "game",
	},
	0x09: { // health
		0x01: "blood-pressure", 0x02: "thermometer", 0x03: "weighing-scale", 0x04: "glucose",
		0x05: "pulse-oximeter", 0x06: "heart-rate", 0x07: "health-data-display",
		0x08: "step-counter", 0x09: "body-composition", 0x0A: "peak-flow",
		0x0B: "medication-monitor", 0x0C: "knee-prosthesis", 0x0D: "ankle-prosthesis",
		0x0E: "health-manager", 0x0F: "personal-mobility",
	},
}

// Peripheral minor class: bits 5..2 name the device, bits 7..6 whether it
// is a keyboard and/or a pointing device.
var (
	peripheralTypes = map[uint32]string{
		0x1: "joystick", 0x2: "gamepad", 0x3: "remote-control", 0x4: "sensing-device",
		0x5: "digitizer-tablet", 0x6: "card-reader", 0x7: "digital-pen",
		0x8: "handheld-scanner", 0x9: "gestural-input",
	}
	peripheralInputs = map[uint32]string{0x1: "keyboard", 0x2: "pointing-device", 0x3: "keyboard-pointing"}
)

// Imaging minor class: bits 7..4 are independent flags.
var imagingFlags = []struct {
	bit  uint32
	name string
}{{4, "display"}, {5, "camera"}, {6, "scanner"}, {7, "printer"}}

// Minor returns the minor device class name under the major class, or ""
// when it is uncategorized, reserved, not durable or the class is invalid.
//
// A peripheral's device type (bits 5..2, e.g. "gamepad") takes precedence
// over its keyboard/pointing bits, which name it only when the type is
// uncategorized: a gamepad is what a consumer selects, whatever buttons it
// reports. An imaging device names each of its flags, joined by "+"
// ("scanner+printer").
func (c Class) Minor() string {
	if !c.Valid() {
		return ""
	}
	m := c.minor()
	switch c.major() {
	case 0x05:
		if name, ok := peripheralTypes[m&0xF]; ok {
			return name
		}
		if m&0xF == 0 {
			return peripheralInputs[m>>4]
		}
		return ""
	case 0x06:
		var names []string
		for _, f := range imagingFlags {
			if uint32(c)&(1<<f.bit) != 0 {
				names = append(names, f.name)
			}
		}
		return strings.Join(names, "+")
	}
	return minorClasses[c.major()][m]
}

// Service class bits and the attribute each one sets. Bit 13 (limited
// discoverable mode) is left out on purpose: a device sets it only while
// it is discoverable for a short time, and the slice would churn with it.
// Bit 15 is reserved.
var serviceBits = []struct {
	bit  uint32
	name string
}{
	{14, "serviceLEAudio"},
	{16, "servicePositioning"},
	{17, "serviceNetworking"},
	{18, "serviceRendering"},
	{19, "serviceCapturing"},
	{20, "serviceObjectTransfer"},
	{21, "serviceAudio"},
	{22, "serviceTelephony"},
	{23, "serviceInformation"},
}

// Services returns the attribute names of the service class bits set in c,
// in bit order; none for an invalid class.
func (c Class) Services() []string {
	if !c.Valid() {
		return nil
	}
	var out []string
	for _, s := range serviceBits {
		if uint32(c)&(1<<s.bit) != 0 {
			out = append(out, s.name)
		}
	}
	return out
}

// IsPeripheral reports whether the major class is peripheral (keyboards,
// pointing devices, gamepads and the like: devices that speak HID).
func (c Class) IsPeripheral() bool { return c.Valid() && c.major() == 0x05 }
