// SPDX-License-Identifier: Apache-2.0

package bonds

import (
	"bytes"
	"cmp"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// EndpointsGroup is the cache file's group in which bluetoothd keeps the
// A2DP stream endpoints (SEPs) an AVDTP discovery of the device found
// (profiles/audio/a2dp.c, store_remote_seps). At the next connection it
// loads them instead of discovering again, so a codec the device gained
// since (a firmware update) stays unseen while the group is there.
const EndpointsGroup = "Endpoints"

// Stream endpoint types, AVDTP's TSEP (AVDTP 1.3, 8.20.3).
const (
	SEPSource uint8 = 0x00
	SEPSink   uint8 = 0x01
)

// CachedEndpoint is one remote stream endpoint in a cache file's
// [Endpoints]: the key is its SEID in two hex digits, the value
// "TT:CC:DD:<capabilities>" (SEP type, codec type, delay reporting, each
// two hex digits, then the codec information element in hex), or
// "TT:CC:<capabilities>" as older BlueZ releases wrote it, without delay
// reporting.
type CachedEndpoint struct {
	// SEID is the endpoint's AVDTP stream endpoint identifier, 1 to 62.
	SEID uint8
	// Type is SEPSource or SEPSink.
	Type uint8
	// Codec is the A2DP codec type: 0x00 SBC, 0x01 MPEG-1,2, 0x02
	// MPEG-2,4 AAC, 0xff vendor-specific (A2DP 1.3, 4.2).
	Codec uint8
	// DelayReporting is the endpoint's delay reporting capability.
	DelayReporting bool
	// Capabilities is the codec information element; for a vendor codec
	// it starts with the vendor ID (4 bytes, little-endian) and the
	// vendor's codec ID (2 bytes).
	Capabilities []byte
}

// maxSEID is the largest SEID AVDTP allows (6 bits, 0x3E; 0x3F is
// reserved, 0 forbidden: AVDTP 1.3, 8.20.1).
const maxSEID = 0x3e

// ParseEndpoints reads the [Endpoints] group of a device's cache file
// (data is the whole file), in SEID order. A file without the group has
// no cached endpoints: nil and no error. The "LastUsed" key (the local
// and remote SEIDs of the last stream, "LL:RR") is checked and left out.
// Errors: a file ParseKeyFile refuses, a key that is no SEID in two hex
// digits (or out of AVDTP's 1 to 62), and a value that is not
// "TT:CC:DD:<hex>" or "TT:CC:<hex>" with a SEP type of 00 or 01, a delay
// flag of 00 or 01 and capabilities of an even number of hex digits;
// each names the key.
func ParseEndpoints(data []byte) ([]CachedEndpoint, error) {
	kf, err := ParseKeyFile(data)
	if err != nil {
		return nil, err
	}
	g := kf.Group(EndpointsGroup)
	if g == nil {
		return nil, nil
	}
	var out []CachedEndpoint
	for _, e := range g.Entries {
		if e.Key == "LastUsed" {
			if err := lastUsed(e.Value); err != nil {
				return nil, fmt.Errorf("[%s] LastUsed=%q (line %d): %w", EndpointsGroup, e.Value, e.Line, err)
			}
			continue
		}
		ep, err := parseEndpoint(e.Key, e.Value)
		if err != nil {
			return nil, fmt.Errorf("[%s] %s=%q (line %d): %w", EndpointsGroup, e.Key, e.Value, e.Line, err)
		}
		out = append(out, ep)
	}
	// SEIDs are keys, so unique: the order is total.
	slices.SortFunc(out, func(a, b CachedEndpoint) int { return cmp.Compare(a.SEID, b.SEID) })
	return out, nil
}

func parseEndpoint(key, value string) (CachedEndpoint, error) {
	seid, err := hexByte(key)
	if err != nil || seid == 0 || seid > maxSEID {
		return CachedEndpoint{}, fmt.Errorf("the key is not a stream endpoint ID (two hex digits, 01 to %02x)", maxSEID)
	}
	parts := strings.Split(value, ":")
	if len(parts) != 3 && len(parts) != 4 {
		return CachedEndpoint{}, fmt.Errorf("want TT:CC:DD:<capabilities> or TT:CC:<capabilities>, got %d fields", len(parts))
	}
	ep := CachedEndpoint{SEID: seid}
	if ep.Type, err = hexByte(parts[0]); err != nil || ep.Type > SEPSink {
		return CachedEndpoint{}, fmt.Errorf("SEP type %q is not 00 (source) or 01 (sink)", parts[0])
	}
	if ep.Codec, err = hexByte(parts[1]); err != nil {
		return CachedEndpoint{}, fmt.Errorf("codec type %q is not two hex digits", parts[1])
	}
	caps := parts[len(parts)-1]
	if len(parts) == 4 {
		delay, err := hexByte(parts[2])
		if err != nil || delay > 1 {
			return CachedEndpoint{}, fmt.Errorf("delay reporting %q is not 00 or 01", parts[2])
		}
		ep.DelayReporting = delay == 1
	}
	if ep.Capabilities, err = hex.DecodeString(caps); err != nil {
		return CachedEndpoint{}, fmt.Errorf("capabilities %q are not hex bytes", caps)
	}
	return ep, nil
}

func lastUsed(value string) error {
	l, r, ok := strings.Cut(value, ":")
	if !ok {
		return fmt.Errorf("want LL:RR, two SEIDs")
	}
	for _, s := range []string{l, r} {
		if n, err := hexByte(s); err != nil || n == 0 || n > maxSEID {
			return fmt.Errorf("%q is not a stream endpoint ID", s)
		}
	}
	return nil
}

// hexByte reads exactly two hex digits.
func hexByte(s string) (uint8, error) {
	if len(s) != 2 {
		return 0, fmt.Errorf("%q is not two hex digits", s)
	}
	n, err := strconv.ParseUint(s, 16, 8)
	return uint8(n), err
}

// WithoutEndpoints returns the cache file data without its [Endpoints]
// group (header, entries and the comments inside it), every other line
// byte for byte, and whether there was one to remove; bluetoothd then
// discovers the device's stream endpoints afresh at its next connection,
// and writes the group again. A file ParseKeyFile refuses is an error and
// is not changed: only a file read whole is edited.
func WithoutEndpoints(data []byte) ([]byte, bool, error) {
	if _, err := ParseKeyFile(data); err != nil {
		return nil, false, err
	}
	var out bytes.Buffer
	removed, inGroup := false, false
	for rest := data; len(rest) > 0; {
		line := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i+1], rest[i+1:]
		} else {
			rest = nil
		}
		text := strings.TrimLeft(strings.TrimRight(string(line), "\r\n"), " \t")
		if strings.HasPrefix(text, "[") {
			name, _ := groupName(text)
			inGroup = name == EndpointsGroup
			removed = removed || inGroup
		}
		if !inGroup {
			out.Write(line)
		}
	}
	return out.Bytes(), removed, nil
}
