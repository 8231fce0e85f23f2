// SPDX-License-Identifier: Apache-2.0

package bluezsim

import (
	"encoding/binary"
	"fmt"
	"math/bits"
)

// Codec is an A2DP codec a simulated speaker's stream endpoint offers, by
// the name PipeWire's bluez5 plugin gives it (api.bluez5.codec).
type Codec string

// The codecs a simulated speaker can offer: the ones Debian's
// libspa-0.2-bluetooth 1.4 can encode (its codec plugins sbc, aptx, ldac).
// PipeWire offers "sbc_xq" on its own for a speaker whose SBC endpoint
// allows a high bitpool; it is not a separate endpoint.
const (
	SBC    Codec = "sbc"
	AptX   Codec = "aptx"
	AptXHD Codec = "aptx_hd"
	LDAC   Codec = "ldac"
)

// A2DP media codec types (A2DP specification 1.3.2, section 4.2: the
// Codec byte of org.bluez.MediaEndpoint1 and MediaTransport1).
const (
	codecTypeSBC    byte = 0x00
	codecTypeVendor byte = 0xff
)

// Vendor codecs: the Bluetooth SIG company identifier and the vendor's
// codec id, each little-endian at the start of the information element.
type vendorCodec struct {
	vendor uint32
	id     uint16
}

var (
	vendorAptX   = vendorCodec{0x0000004f, 0x0001} // APT Licensing Ltd.
	vendorAptXHD = vendorCodec{0x000000d7, 0x0024} // Qualcomm Technologies
	vendorLDAC   = vendorCodec{0x0000012d, 0x00aa} // Sony Corporation
)

// Capabilities returns the A2DP codec type and the codec information
// element (AVDTP Media Codec capability) that a speaker offering c
// advertises on its sink endpoint: every rate and channel mode the codec
// defines for a stereo speaker, and for SBC bitpools 2 to 53, the range
// the A2DP specification recommends for high quality joint stereo at 48
// kHz. The error names an unknown codec.
func (c Codec) Capabilities() (codecType byte, info []byte, err error) {
	switch c {
	case SBC:
		// Octet 0: rates 16, 32, 44.1, 48 kHz (bits 7-4) and channel
		// modes mono, dual, stereo, joint (bits 3-0). Octet 1: block
		// lengths 4, 8, 12, 16, subbands 4 and 8, loudness and SNR
		// allocation. Octets 2 and 3: minimum and maximum bitpool.
		return codecTypeSBC, []byte{0xff, 0xff, 2, 53}, nil
	case AptX:
		// aptX: rates 16 to 48 kHz (bits 7-4), stereo (bit 1).
		return codecTypeVendor, append(vendorAptX.bytes(), 0xf2), nil
	case AptXHD:
		// aptX HD: aptX's octet, then four reserved octets.
		return codecTypeVendor, append(vendorAptXHD.bytes(), 0xf2, 0, 0, 0, 0), nil
	case LDAC:
		// LDAC: rates 44.1, 48, 88.2, 96 kHz (bits 5-2), then channel
		// modes mono, dual, stereo (bits 2-0).
		return codecTypeVendor, append(vendorLDAC.bytes(), 0x3c, 0x07), nil
	}
	return 0, nil, fmt.Errorf("bluezsim: codec %q is not one of sbc, aptx, aptx_hd, ldac", c)
}

func (v vendorCodec) bytes() []byte {
	b := binary.LittleEndian.AppendUint32(nil, v.vendor)
	return binary.LittleEndian.AppendUint16(b, v.id)
}

// Configuration is one codec configuration, as a transport's Configuration
// property carries it: the information element with exactly one option
// chosen in each field.
type Configuration struct {
	// Codec is the codec's name.
	Codec Codec
	// RateHz is the sample rate.
	RateHz int
	// Channels is 1 or 2.
	Channels int
	// ChannelMode is "mono", "dual", "stereo" or "joint" (SBC only).
	ChannelMode string
	// Blocks, Subbands and Allocation ("snr" or "loudness") are SBC's
	// frame parameters; zero and empty for other codecs.
	Blocks, Subbands int
	Allocation       string
	// MinBitpool and MaxBitpool are SBC's bitpool range.
	MinBitpool, MaxBitpool int
}

// ParseConfiguration decodes a codec configuration: codecType is the
// transport's Codec byte and info its Configuration. It accepts the
// codecs Capabilities knows, and fails, naming the field, when a field
// has no option or more than one chosen, when info is shorter or longer
// than the codec's element, or when an SBC bitpool range is empty or
// outside 2 to 250 (A2DP specification 1.3.2, section 4.3.2.6).
func ParseConfiguration(codecType byte, info []byte) (Configuration, error) {
	switch codecType {
	case codecTypeSBC:
		return parseSBC(info)
	case codecTypeVendor:
		if len(info) < 6 {
			return Configuration{}, fmt.Errorf("vendor codec configuration of %d bytes, want at least 6 (vendor and codec id)", len(info))
		}
		v := vendorCodec{binary.LittleEndian.Uint32(info[:4]), binary.LittleEndian.Uint16(info[4:6])}
		switch v {
		case vendorAptX:
			return parseAptX(AptX, info[6:], 1)
		case vendorAptXHD:
			return parseAptX(AptXHD, info[6:], 5)
		case vendorLDAC:
			return parseLDAC(info[6:])
		}
		return Configuration{}, fmt.Errorf("vendor codec %08x:%04x is not aptX, aptX HD or LDAC", v.vendor, v.id)
	}
	return Configuration{}, fmt.Errorf("codec type 0x%02x is not SBC (0x00) or a vendor codec (0xff)", codecType)
}

// one returns the index (from the most significant of width bits) of the
// single bit set in field, or an error naming what when none or several
// are.
func one(field byte, width int, what string) (int, error) {
	field &= byte(1<<width - 1)
	if bits.OnesCount8(field) != 1 {
		return 0, fmt.Errorf("%s: %d options chosen (bits %08b), want exactly one", what, bits.OnesCount8(field), field)
	}
	return width - 1 - bits.TrailingZeros8(field), nil
}

func parseSBC(info []byte) (Configuration, error) {
	if len(info) != 4 {
		return Configuration{}, fmt.Errorf("SBC configuration of %d bytes, want 4", len(info))
	}
	c := Configuration{Codec: SBC}
	i, err := one(info[0]>>4, 4, "SBC sampling frequency")
	if err != nil {
		return c, err
	}
	c.RateHz = []int{16000, 32000, 44100, 48000}[i]
	if i, err = one(info[0], 4, "SBC channel mode"); err != nil {
		return c, err
	}
	c.ChannelMode = []string{"mono", "dual", "stereo", "joint"}[i]
	c.Channels = 2
	if c.ChannelMode == "mono" {
		c.Channels = 1
	}
	if i, err = one(info[1]>>4, 4, "SBC block length"); err != nil {
		return c, err
	}
	c.Blocks = []int{4, 8, 12, 16}[i]
	if i, err = one(info[1]>>2, 2, "SBC subbands"); err != nil {
		return c, err
	}
	c.Subbands = []int{4, 8}[i]
	if i, err = one(info[1], 2, "SBC allocation method"); err != nil {
		return c, err
	}
	c.Allocation = []string{"snr", "loudness"}[i]
	c.MinBitpool, c.MaxBitpool = int(info[2]), int(info[3])
	if c.MinBitpool < 2 || c.MaxBitpool > 250 || c.MinBitpool > c.MaxBitpool {
		return c, fmt.Errorf("SBC bitpool %d to %d is not a range within 2 to 250", c.MinBitpool, c.MaxBitpool)
	}
	return c, nil
}

// parseAptX decodes aptX's and aptX HD's octet after the ids; rest is
// how many octets the element has after the ids.
func parseAptX(codec Codec, b []byte, rest int) (Configuration, error) {
	if len(b) != rest {
		return Configuration{}, fmt.Errorf("%s configuration of %d bytes, want %d", codec, len(b)+6, rest+6)
	}
	c := Configuration{Codec: codec}
	i, err := one(b[0]>>4, 4, string(codec)+" sampling frequency")
	if err != nil {
		return c, err
	}
	c.RateHz = []int{16000, 32000, 44100, 48000}[i]
	// Bit 0 is mono, bit 1 stereo; the upper two bits are reserved.
	if i, err = one(b[0], 2, string(codec)+" channel mode"); err != nil {
		return c, err
	}
	c.ChannelMode = []string{"stereo", "mono"}[i]
	c.Channels = 2 - i
	return c, nil
}

func parseLDAC(b []byte) (Configuration, error) {
	if len(b) != 2 {
		return Configuration{}, fmt.Errorf("ldac configuration of %d bytes, want 8", len(b)+6)
	}
	c := Configuration{Codec: LDAC}
	i, err := one(b[0], 6, "ldac sampling frequency")
	if err != nil {
		return c, err
	}
	c.RateHz = []int{44100, 48000, 88200, 96000, 176400, 192000}[i]
	if i, err = one(b[1], 3, "ldac channel mode"); err != nil {
		return c, err
	}
	c.ChannelMode = []string{"mono", "dual", "stereo"}[i]
	c.Channels = 2
	if i == 0 {
		c.Channels = 1
	}
	return c, nil
}
