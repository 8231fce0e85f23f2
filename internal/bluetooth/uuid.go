// SPDX-License-Identifier: Apache-2.0

package bluetooth

import (
	"slices"
	"strconv"
	"strings"
)

// baseUUIDSuffix ends every UUID in the Bluetooth base range
// 0000xxxx-0000-1000-8000-00805F9B34FB, in which the SIG assigns 16-bit
// UUIDs (Bluetooth Core, Vol 3 Part B section 2.5.1).
const baseUUIDSuffix = "-0000-1000-8000-00805f9b34fb"

// UUID16 returns the 16-bit short form of a 128-bit UUID in the Bluetooth
// base range, written as BlueZ writes Device1.UUIDs (36 characters, either
// case). Any other string, including a UUID of the 32-bit range or outside
// the base range, gives false.
func UUID16(uuid string) (uint16, bool) {
	if len(uuid) != 36 || uuid[:4] != "0000" || !strings.EqualFold(uuid[8:], baseUUIDSuffix) {
		return 0, false
	}
	n, err := strconv.ParseUint(uuid[4:8], 16, 16)
	if err != nil {
		return 0, false
	}
	return uint16(n), true
}

// profileFlags maps 16-bit service UUIDs to the profile flag they set
// (Assigned Numbers section 3.3 "Service Class" and section 3.4 "GATT Service").
var profileFlags = map[uint16]string{
	0x1101: "serialPort",      // SerialPort
	0x1108: "headset",         // Headset
	0x1131: "headset",         // Headset - HS, the headset role's own class
	0x110A: "audioSource",     // AudioSource (A2DP source)
	0x110B: "audioSink",       // AudioSink (A2DP sink)
	0x110C: "avrcpTarget",     // A/V_RemoteControlTarget
	0x110E: "avrcpController", // A/V_RemoteControl, every AVRCP controller's class
	0x110F: "avrcpController", // A/V_RemoteControlController (AVRCP 1.4 and later)
	0x111E: "handsfree",       // Handsfree (the HF role, not the audio gateway)
	0x1124: "input",           // HumanInterfaceDeviceService (classic HID)
	0x1812: "input",           // Human Interface Device (HID over GATT)
	0x180F: "battery",         // Battery (GATT service)
}

// Profiles returns the profile flags set by a device's service UUIDs,
// each once, sorted. UUIDs it does not know are ignored.
func Profiles(uuids []string) []string {
	var out []string
	for _, u := range uuids {
		if n, ok := UUID16(u); ok {
			if name, ok := profileFlags[n]; ok {
				out = append(out, name)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
