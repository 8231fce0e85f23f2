// SPDX-License-Identifier: Apache-2.0

package audio

import (
	"github.com/liken-sh/operators/internal/alsa"
	"github.com/liken-sh/operators/internal/dra"
)

// AttributeReference lists every attribute Devices can publish, in the
// order a person reads them. docs/reference/attributes.md is rendered from
// it, and a test checks that Devices publishes nothing it does not list.
var AttributeReference = []dra.AttributeDoc{
	{Name: "sink", Type: "string", Doc: "the output's device name; present on outputs only, which is how the `audio-sink` DeviceClass selects them"},
	{Name: "source", Type: "string", Doc: "the capture input's device name; present on inputs only (the `audio-source` DeviceClass)"},
	{Name: "card", Type: "int", Doc: "the ALSA card number on the node (`/dev/snd/controlC<card>`); it can change across boots, the device name does not"},
	{Name: "pcm", Type: "int", Doc: "the ALSA PCM device number on the card"},
	{Name: "connectionType", Type: "string", Doc: "`" + alsa.ConnHDMI + "`, `" + alsa.ConnDisplayPort + "` (from the monitor's ELD), `" + alsa.ConnAnalog + "`, `" + alsa.ConnUSB + "` or `" + alsa.ConnBluetooth + "` (a paired Bluetooth speaker); absent on a digital output whose kind is not known (no monitor yet)"},
	{Name: "nodeName", Type: "string", Doc: "the PipeWire node's `node.name`, what `PIPEWIRE_NODE` carries; absent while PipeWire holds no node for the output"},
	{Name: "manufacturer", Type: "string", Doc: "the monitor's three-letter PNP manufacturer id from its ELD (`GSM`, `SAM`); HDMI/DP outputs with a monitor only"},
	{Name: "product", Type: "string", Doc: "the monitor's product code, four lowercase hex digits (`5b09`)"},
	{Name: "monitorName", Type: "string", Doc: "the monitor's name as its EDID gives it (`U28E590`); absent when the monitor sends none or it is not printable text of at most 64 bytes"},
	{Name: "lpcmChannels", Type: "int", Doc: "the most PCM channels the monitor accepts"},
	{Name: "lpcmMaxRateHz", Type: "int", Doc: "the highest PCM sample rate the monitor accepts, in Hz"},
	{Name: "lpcmBitDepths", Type: "string", Doc: "the PCM sample sizes the monitor accepts, ascending and space-separated (`16 20 24`)"},
	{Name: "speakers", Type: "string", Doc: "the monitor's speaker allocation, in the kernel's names, space-separated (`FL/FR LFE FC RL/RR`)"},
	{Name: "eldVersion", Type: "int", Doc: "the ELD structure's version"},
	{Name: "portID", Type: "int", Doc: "the ELD's port id, which tells apart two outputs to one monitor"},
	{Name: "address", Type: "string", Doc: "a Bluetooth speaker's address as BlueZ spells it (`A0:AB:51:33:B7:12`); the device name is the same in lowercase with dashes"},
	{Name: "name", Type: "string", Doc: "a Bluetooth speaker's name, BlueZ's alias of it (a person's alias, else the name the speaker gave); absent when it is not printable text of at most 64 bytes"},
	{Name: "connected", Type: "bool", Doc: "whether a Bluetooth speaker's link is up; a speaker switched off stays published, tainted"},
	{Name: "codec", Type: "string", Doc: "the codec a Bluetooth speaker's stream runs (`sbc`, `aac`, `aptx`, `ldac`); absent while PipeWire holds no node for it"},
	{Name: "codecs", Type: "string", Doc: "what a claim's `codec` parameter may name, space-separated, whole names within 64 bytes: the codecs a Bluetooth speaker offers, in the bluez5 plugin's order (`sbc sbc_xq aac`); on an HDMI/DP output, the compressed formats its monitor's ELD lists that a player can pass through to it (`ac3 dts eac3 dts_hd truehd`: AC-3, DTS, E-AC-3, DTS-HD, TrueHD), absent when it lists none. Select one with `\"eac3\" in device.attributes[\"audio.liken.sh\"].codecs.split(\" \")`"},
	{Name: MonitorIDAttribute, Type: "string", Doc: "the monitor's identity shared with other drivers: manufacturer, product and lowercased name joined by dashes (`gsm-5b09-lg-ultrawide`)"},
}

// TaintReference lists every taint Devices can set.
var TaintReference = []dra.TaintDoc{
	{Key: TaintDisconnected, Effect: dra.TaintNoExecute, Doc: "nothing can play there now: a running PipeWire holds no node for a card's output, an HDMI/DP output has no monitor or a monitor that takes no PCM, or a Bluetooth speaker is not connected (a connected speaker whose node is being remade, for a codec switch or a WirePlumber restart, is only no-sink); running consumers are evicted after their toleration"},
	{Key: TaintNoMonitor, Effect: dra.TaintNoSchedule, Doc: "an HDMI/DP output with no valid ELD (no monitor plugged in, or it is off)"},
	{Key: TaintNoAudio, Effect: dra.TaintNoSchedule, Doc: "the monitor is present but lists no PCM format (speakers off in its menu, a bitstream-only receiver)"},
	{Key: TaintNoSink, Effect: dra.TaintNoSchedule, Doc: "PipeWire holds no node for the output (PipeWire is down or has not made it yet); while PipeWire is down this taint alone is set, so its restart evicts no consumer"},
}
