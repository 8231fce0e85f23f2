// SPDX-License-Identifier: Apache-2.0

package pwtest

import (
	"fmt"
	"strconv"

	"github.com/liken-sh/operators/internal/pipewire"
)

// IEC958PCM is the ALSA PCM IEC958FileConfig defines. PipeWire 1.4.2's
// ALSA sink offers IEC 958 formats, and takes iec958Codecs in its Props,
// only on a PCM whose name starts with "hdmi" or "iec958"
// (spa/plugins/alsa/alsa-pcm.c, is_hdmi and is_iec958), and opens it for
// an IEC 958 format with the channel status appended as arguments
// (",AES0=0x6,AES1=0x82,AES2=0x0,AES3=0x2"), so the PCM is named like
// ALSA's own hdmi PCM and takes those arguments.
const IEC958PCM = "hdmi_liken_file"

// IEC958FileConfig returns alsa-lib configuration (Options.ALSAConfig)
// defining IEC958PCM: ALSA's file plugin over its null device, which
// writes every frame played, unchanged (format raw), to file. DEV is a
// dummy argument, there so the PCM's name carries a ':' that the channel
// status arguments can follow; the AES arguments are taken and ignored.
func IEC958FileConfig(file string) string {
	return fmt.Sprintf(`pcm.%s {
	@args [ DEV AES0 AES1 AES2 AES3 ]
	@args.DEV { type integer default 0 }
	@args.AES0 { type integer default 4 }
	@args.AES1 { type integer default 130 }
	@args.AES2 { type integer default 0 }
	@args.AES3 { type integer default 2 }
	type file
	slave.pcm null
	file %s
	format raw
}
`, IEC958PCM, strconv.Quote(file))
}

// IEC958FileOutput is NullOutput on IEC958PCM instead of the null device:
// an HDMI-like playback output whose frames go to the file
// IEC958FileConfig names, following the Dummy-Driver as LikeHardware
// makes null outputs do (the file plugin's slave has no clock either).
func IEC958FileOutput(card, device int, name string) pipewire.Output {
	o := NullOutput(card, device, name)
	o.Path = IEC958PCM + ":DEV=0"
	// The null device takes any rate up to 2^32-1, which PipeWire 1.4.2
	// offers as an IEC 958 rate range whose maximum overflows (-1), so
	// WirePlumber finds no rate in common with a stream and links none;
	// allowed rates make the offer 48 kHz alone, as a card's would hold
	// its rates.
	o.Extra = map[string]string{"node.group": DummyDriverGroup, "clock.name": MonotonicClockName, "audio.allowed-rates": "[ 48000 ]"}
	return o
}
