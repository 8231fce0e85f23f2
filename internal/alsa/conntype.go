// SPDX-License-Identifier: Apache-2.0

package alsa

import "regexp"

// Values of the connectionType attribute of an audio device.
const (
	ConnHDMI        = "hdmi"
	ConnDisplayPort = "displayport"
	ConnAnalog      = "analog"
	ConnUSB         = "usb"
	// ConnBluetooth is a Bluetooth speaker's, which no PCM has.
	ConnBluetooth = "bluetooth"
)

// usbAudioDriver is the ALSA card driver name of snd-usb-audio (CARD_INFO's
// driver field).
const usbAudioDriver = "USB-Audio"

// digitalPCM matches PCM ids and names of digital outputs that are not
// analog even without an ELD element: HDMI, DisplayPort, S/PDIF.
var digitalPCM = regexp.MustCompile(`(?i)\b(hdmi|displayport|dp|iec958|s/?pdif)\b`)

// ConnectionType classifies a PCM for the connectionType attribute and
// returns one of the Conn* values or "" when it cannot tell:
//
//   - "usb" for a card on the USB bus (identity from sysfs) or driven by
//     snd-usb-audio;
//   - for an output with a valid ELD, the ELD's connection type: "hdmi" or
//     "displayport" ("" for the reserved values);
//   - "" for an output that has an ELD element but no valid block: an
//     HDMI/DP port with no monitor cannot say which of the two it is;
//   - "" for a PCM whose id or name says HDMI, DisplayPort, IEC958 or
//     S/PDIF but that has no ELD element;
//   - "analog" otherwise.
//
// id may be the zero CardIdentity when sysfs could not be read.
func ConnectionType(p PCM, card CardInfo, id CardIdentity) string {
	switch {
	case id.Bus == "usb" || card.Driver == usbAudioDriver:
		return ConnUSB
	case p.ELD.Valid():
		return p.ELD.ELD.Connection.String()
	case p.HasELD:
		return ""
	case digitalPCM.MatchString(p.Info.ID) || digitalPCM.MatchString(p.Info.Name):
		return ""
	}
	return ConnAnalog
}
