// SPDX-License-Identifier: Apache-2.0

package eld

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// Proc is the content of a /proc/asound/card<N>/eld#<codec>.<pin> file.
type Proc struct {
	// MonitorPresent is the pin's presence detect.
	MonitorPresent bool
	// ELDValid says the codec holds a valid block.
	ELDValid bool
	// ELD is the block the file describes; nil when ELDValid is false.
	// Fields the file leaves out (old kernels print fewer) are zero.
	ELD *ELD
}

// Rate bits of the proc file's sadN_rates mask: ALSA's SNDRV_PCM_RATE_*
// bits (include/sound/pcm.h), indexed by the CEA rate bit they stand for.
var procRateBits = [7]uint{5, 6, 7, 9, 10, 11, 12}

// Depth bits of sadN_bits: the HDA AC_SUPPCM_BITS_16/20/24 bits
// (include/sound/hda_verbs.h).
var procDepthBits = [3]uint{17, 18, 19}

// ParseProc reads the text form. Lines are "key value" separated by
// spaces or tabs; unknown keys (codec_pin_nid and the like) are ignored.
// monitor_present and eld_valid are required; when eld_valid is 0 nothing
// else is read, so the short form current kernels print for an invalid
// block is accepted. When it is 1, eld_version, connection_type,
// manufacture_id, product_id, speakers, sad_count and each descriptor's
// coding type, channels, rates (and bits, for LPCM) are required.
//
// The speaker allocation 0xffff, the kernel's stand-in for an allocation
// of 0, is read back as 0. Errors wrap ErrInvalid and name the line or key.
func ParseProc(text []byte) (Proc, error) {
	kv := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		key, value := line, ""
		if i := strings.IndexAny(line, " \t"); i >= 0 {
			key, value = line[:i], line[i:]
		}
		if !validKey(key) {
			return Proc{}, invalid("line %d: %q is not a key", n, key)
		}
		if _, dup := kv[key]; dup {
			return Proc{}, invalid("line %d: key %s appears twice", n, key)
		}
		kv[key] = strings.TrimSpace(value)
	}
	if err := sc.Err(); err != nil {
		return Proc{}, invalid("%v", err)
	}
	p := procReader{kv: kv}
	out := Proc{MonitorPresent: p.flag("monitor_present", true), ELDValid: p.flag("eld_valid", true)}
	if p.err != nil || !out.ELDValid {
		return out, p.err
	}

	e := &ELD{}
	e.Version = int(p.bracketed("eld_version", true))
	e.CEAEDIDVersion = int(p.bracketed("edid_version", false))
	e.MonitorName = kv["monitor_name"]
	switch ct := p.get("connection_type", true); ct {
	case "HDMI":
		e.Connection = ConnHDMI
	case "DisplayPort":
		e.Connection = ConnDisplayPort
	case "2-reserved":
		e.Connection = 2
	case "3-reserved":
		e.Connection = 3
	case "":
	default:
		p.fail("connection_type %q is none of HDMI, DisplayPort, 2-reserved, 3-reserved", ct)
	}
	e.ManufacturerCode = uint16(p.number("manufacture_id", true, 16))
	e.ProductCode = uint16(p.number("product_id", true, 16))
	e.PortID = p.number("port_id", false, 64)
	e.HDCP = p.flag("support_hdcp", false)
	e.AI = p.flag("support_ai", false)
	e.AudioSyncDelayMs = int(p.number("audio_sync_delay", false, 16))
	switch spk := p.bracketed("speakers", true); {
	case spk == 0xffff:
		e.SpeakerAllocation = 0
	case spk > 0x7f:
		p.fail("speakers [%#x] has bits past the ELD's seven", spk)
	default:
		e.SpeakerAllocation = uint8(spk)
	}
	count := int(p.number("sad_count", true, 8))
	if p.err == nil && count > 15 {
		p.fail("sad_count %d is more than the ELD's 4-bit field holds", count)
	}
	if p.err != nil {
		return Proc{}, p.err
	}
	if e.Version != VersionCEA861D && e.Version != VersionPartial {
		return Proc{}, invalid("eld_version %d: only %d and %d are defined", e.Version, VersionCEA861D, VersionPartial)
	}
	if len(e.MonitorName) > MaxMonitorNameLen {
		return Proc{}, invalid("monitor_name %q is longer than %d bytes", e.MonitorName, MaxMonitorNameLen)
	}
	for i := range count {
		e.SADs = append(e.SADs, p.sad(i))
	}
	if p.err != nil {
		return Proc{}, p.err
	}
	out.ELD = e
	return out, nil
}

// ParseProcBlocks reads text holding one or more proc ELD files one after
// the other, as `cat /proc/asound/card0/eld#*` prints them (or a bug
// report pastes them), usually with a blank line between. A block starts
// at each monitor_present line; each is read by ParseProc. It returns the
// blocks in order, or the first error, naming the block (1-based) and its
// first line. Text with no monitor_present line is an error.
func ParseProcBlocks(text []byte) ([]Proc, error) {
	var starts []int
	for i := 0; i < len(text); {
		end := bytes.IndexByte(text[i:], '\n')
		if end < 0 {
			end = len(text) - i
		}
		fields := bytes.Fields(text[i : i+end])
		if len(fields) > 0 && string(fields[0]) == "monitor_present" {
			starts = append(starts, i)
		}
		i += end + 1
	}
	if len(starts) == 0 {
		return nil, invalid("no monitor_present line: not an ELD file")
	}
	blocks := make([]Proc, 0, len(starts))
	for n, start := range starts {
		end := len(text)
		if n+1 < len(starts) {
			end = starts[n+1]
		}
		p, err := ParseProc(text[start:end])
		if err != nil {
			return nil, fmt.Errorf("block %d (line %d): %w", n+1, 1+bytes.Count(text[:start], []byte("\n")), err)
		}
		blocks = append(blocks, p)
	}
	if lead := bytes.TrimSpace(text[:starts[0]]); len(lead) > 0 {
		return nil, invalid("text before the first monitor_present line: %q", clip(lead))
	}
	return blocks, nil
}

// clip shortens b for an error message.
func clip(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "..."
	}
	return string(b)
}

func validKey(k string) bool {
	if k == "" {
		return false
	}
	for _, c := range k {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// procReader reads typed values out of the key map and keeps the first
// error, so ParseProc reads every field in a straight line.
type procReader struct {
	kv  map[string]string
	err error
}

func (p *procReader) fail(format string, args ...any) {
	if p.err == nil {
		p.err = invalid(format, args...)
	}
}

func (p *procReader) get(key string, required bool) string {
	v, ok := p.kv[key]
	if !ok && required {
		p.fail("%s is missing", key)
	}
	return v
}

// number reads a decimal or 0x-prefixed hex value of at most bits bits.
func (p *procReader) number(key string, required bool, bits int) uint64 {
	v := p.get(key, required)
	if v == "" {
		if _, ok := p.kv[key]; ok {
			p.fail("%s has no value", key)
		}
		return 0
	}
	n, err := strconv.ParseUint(v, 0, bits)
	if err != nil {
		p.fail("%s %q is not a %d-bit number", key, v, bits)
	}
	return n
}

func (p *procReader) flag(key string, required bool) bool {
	switch v := p.get(key, required); v {
	case "1":
		return true
	case "0":
		return false
	case "":
		if _, ok := p.kv[key]; ok {
			p.fail("%s has no value", key)
		}
		return false
	default:
		p.fail("%s %q is neither 0 nor 1", key, v)
		return false
	}
}

// bracketed reads the hex number in "[0x4f] FL/FR LFE ...".
func (p *procReader) bracketed(key string, required bool) uint64 {
	v := p.get(key, required)
	if v == "" {
		if _, ok := p.kv[key]; ok {
			p.fail("%s has no value", key)
		}
		return 0
	}
	inner, ok := strings.CutPrefix(v, "[")
	if ok {
		inner, _, ok = strings.Cut(inner, "]")
	}
	var n uint64
	var err error
	if ok {
		n, err = strconv.ParseUint(inner, 0, 32)
	}
	if !ok || err != nil {
		p.fail("%s %q does not start with a [0x...] number", key, v)
	}
	return n
}

func (p *procReader) sad(i int) SAD {
	key := func(name string) string { return fmt.Sprintf("sad%d_%s", i, name) }
	coding := p.bracketed(key("coding_type"), true)
	channels := p.number(key("channels"), true, 8)
	rates := p.bracketed(key("rates"), true)
	if p.err != nil {
		return SAD{}
	}
	// The kernel numbers the extended types (HE-AAC and later) from 15 on,
	// 14 plus their extension code.
	if coding > 14+31 {
		p.fail("%s %d is not a coding type", key("coding_type"), coding)
	}
	if channels < 1 || channels > 8 {
		p.fail("%s %d is outside 1..8", key("channels"), channels)
	}
	d := SAD{Coding: Coding(min(coding, 15)), Channels: int(channels)}
	if coding >= 15 {
		d.ExtendedCoding = uint8(coding - 14)
	}
	rest := rates
	for bit, alsaBit := range procRateBits {
		if rates&(1<<alsaBit) != 0 {
			d.RateMask |= 1 << bit
			rest &^= 1 << alsaBit
		}
	}
	if rest != 0 {
		p.fail("%s [%#x] names rates no ELD carries (bits %#x)", key("rates"), rates, rest)
	}
	if d.Coding == CodingLPCM {
		bits := p.bracketed(key("bits"), true)
		rest := bits
		for bit, hdaBit := range procDepthBits {
			if bits&(1<<hdaBit) != 0 {
				d.DepthMask |= 1 << bit
				rest &^= 1 << hdaBit
			}
		}
		if rest != 0 {
			p.fail("%s [%#x] names sample sizes no ELD carries (bits %#x)", key("bits"), bits, rest)
		}
	}
	d.MaxBitrate = int(p.number(key("max_bitrate"), false, 31))
	return d
}
