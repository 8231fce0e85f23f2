// SPDX-License-Identifier: Apache-2.0

package alsatest

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/liken-sh/operators/internal/alsa"
)

// amixerAccess is the letter amixer prints for each access bit, in its
// eight columns ("rw---R--"); alsa-utils amixer/amixer.c.
var amixerAccess = [8]struct {
	letter byte
	bit    alsa.Access
}{
	{'r', alsa.AccessRead}, {'w', alsa.AccessWrite}, {'i', alsa.AccessInactive}, {'v', alsa.AccessVolatile},
	{'l', alsa.AccessLock}, {'R', alsa.AccessTLVRead}, {'W', alsa.AccessTLVWrite}, {'C', alsa.AccessTLVCommand},
}

var (
	amixerItem    = regexp.MustCompile(`^; Item #([0-9]+) '(.*)'$`)
	amixerDBScale = regexp.MustCompile(`^\| dBscale-min=(-?[0-9]+\.[0-9]{2})dB,step=([0-9]+\.[0-9]{2})dB,mute=([01])$`)
	amixerIEC958  = regexp.MustCompile(`^\[AES0=0x([0-9a-f]{2}) AES1=0x([0-9a-f]{2}) AES2=0x([0-9a-f]{2}) AES3=0x([0-9a-f]{2})\]$`)
)

// ImportAmixerContents reads the output of `amixer contents` (or `amixer
// -c N contents`) into controls, in the order printed (not numid order):
//
//	numid=1,iface=MIXER,name='Master Playback Volume'
//	  ; type=INTEGER,access=rw---R--,values=2,min=0,max=87,step=0
//	  : values=75,75
//	  | dBscale-min=-65.25dB,step=0.75dB,mute=0
//
// "; Item #N 'name'" lines give an ENUMERATED element's items; a "|
// dBscale" line belongs to the element above it and becomes its TLV
// (SNDRV_CTL_TLVT_DB_SCALE: min and step in 0.01 dB, mute flag in bit 16 of
// the step word). Other TLV lines are refused rather than dropped. Errors
// name the line.
func ImportAmixerContents(text []byte) ([]alsa.DumpControl, error) {
	var out []alsa.DumpControl
	var cur *alsa.DumpControl
	sc := bufio.NewScanner(bytes.NewReader(text))
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for n := 1; sc.Scan(); n++ {
		raw := sc.Text()
		line := strings.TrimSpace(raw)
		fail := func(format string, args ...any) error {
			return fmt.Errorf("amixer contents line %d: %s", n, fmt.Sprintf(format, args...))
		}
		switch {
		case line == "":
		case strings.HasPrefix(line, "numid="):
			if cur != nil {
				out = append(out, *cur)
			}
			kv, err := amixerPairs(line)
			if err != nil {
				return nil, fail("%v", err)
			}
			dc := alsa.DumpControl{Iface: "MIXER"}
			for _, p := range kv {
				switch p[0] {
				case "numid", "device", "subdevice", "index":
					v, err := strconv.ParseUint(p[1], 10, 32)
					if err != nil {
						return nil, fail("%s=%q is not a number", p[0], p[1])
					}
					switch p[0] {
					case "numid":
						dc.NumID = uint32(v)
					case "device":
						dc.Device = uint32(v)
					case "subdevice":
						dc.Subdevice = uint32(v)
					default:
						dc.Index = uint32(v)
					}
				case "iface":
					dc.Iface = p[1]
				case "name":
					dc.Name = p[1]
				default:
					return nil, fail("unknown id field %q", p[0])
				}
			}
			cur = &dc
		case cur == nil:
			return nil, fail("%q before any numid= line", line)
		case strings.HasPrefix(line, "; type="):
			kv, err := amixerPairs(strings.TrimPrefix(line, "; "))
			if err != nil {
				return nil, fail("%v", err)
			}
			for _, p := range kv {
				var err error
				switch p[0] {
				case "type":
					cur.Type = p[1]
				case "access":
					cur.Access, err = amixerAccessWords(p[1])
				case "values":
					cur.Count, err = strconv.Atoi(p[1])
				case "min":
					cur.Min, err = strconv.ParseInt(p[1], 10, 64)
				case "max":
					cur.Max, err = strconv.ParseInt(p[1], 10, 64)
				case "step":
					cur.Step, err = strconv.ParseInt(p[1], 10, 64)
				case "items":
					// counted from the Item lines
				default:
					err = fmt.Errorf("unknown field")
				}
				if err != nil {
					return nil, fail("%s=%q: %v", p[0], p[1], err)
				}
			}
		case amixerItem.MatchString(line):
			m := amixerItem.FindStringSubmatch(line)
			if i, _ := strconv.Atoi(m[1]); i != len(cur.Items) {
				return nil, fail("item #%s out of order", m[1])
			}
			cur.Items = append(cur.Items, m[2])
		case strings.HasPrefix(line, ": values="):
			if err := amixerValues(cur, strings.TrimPrefix(line, ": values=")); err != nil {
				return nil, fail("%v", err)
			}
		case strings.HasPrefix(line, "| "):
			m := amixerDBScale.FindStringSubmatch(line)
			if m == nil {
				return nil, fail("TLV %q is not one this importer reads (dBscale only)", line)
			}
			min, err := centi(m[1])
			if err != nil || min < -1<<31 {
				return nil, fail("dBscale min %q", m[1])
			}
			step, err := centi(m[2])
			if err != nil || step > 0xffff {
				return nil, fail("dBscale step %q", m[2])
			}
			word := uint32(step)
			if m[3] == "1" {
				word |= 1 << 16
			}
			cur.TLV = []uint32{1, 8, uint32(int32(min)), word}
			if !strings.Contains(" "+cur.Access+" ", " tlv_read ") {
				cur.Access = strings.TrimSpace(cur.Access + " tlv_read")
			}
		default:
			return nil, fail("%q is not part of amixer's contents format", line)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("amixer contents: %w", err)
	}
	if cur != nil {
		out = append(out, *cur)
	}
	return out, nil
}

// amixerPairs splits "a=1,b='x,y',c=2" into pairs; quoted values may hold
// commas and backslash escapes.
func amixerPairs(s string) ([][2]string, error) {
	var out [][2]string
	for s != "" {
		eq := strings.IndexByte(s, '=')
		if eq <= 0 {
			return nil, fmt.Errorf("%q is not key=value", s)
		}
		key, rest := s[:eq], s[eq+1:]
		var value string
		if strings.HasPrefix(rest, "'") {
			var b strings.Builder
			i := 1
			for ; i < len(rest) && rest[i] != '\''; i++ {
				if rest[i] == '\\' && i+1 < len(rest) {
					i++
				}
				b.WriteByte(rest[i])
			}
			if i >= len(rest) {
				return nil, fmt.Errorf("unterminated quote in %q", s)
			}
			value, rest = b.String(), rest[i+1:]
		} else {
			end := strings.IndexByte(rest, ',')
			if end < 0 {
				end = len(rest)
			}
			value, rest = rest[:end], rest[end:]
		}
		out = append(out, [2]string{key, value})
		if rest != "" && rest[0] != ',' {
			return nil, fmt.Errorf("junk %q after %s", rest, key)
		}
		s = strings.TrimPrefix(rest, ",")
	}
	return out, nil
}

func amixerAccessWords(s string) (string, error) {
	if len(s) != len(amixerAccess) {
		return "", fmt.Errorf("not %d access columns", len(amixerAccess))
	}
	var a alsa.Access
	for i, col := range amixerAccess {
		switch s[i] {
		case col.letter:
			a |= col.bit
		case '-':
		default:
			return "", fmt.Errorf("column %d is %q, not %q or '-'", i+1, s[i], col.letter)
		}
	}
	return a.String(), nil
}

// amixerValues reads the ": values=" list by the element's type.
func amixerValues(dc *alsa.DumpControl, s string) error {
	switch dc.Type {
	case "IEC958":
		m := amixerIEC958.FindStringSubmatch(s)
		if m == nil {
			return fmt.Errorf("IEC958 value %q", s)
		}
		b := make([]byte, alsa.IEC958Size)
		for i := range 4 {
			v, _ := strconv.ParseUint(m[i+1], 16, 8)
			b[i] = byte(v)
		}
		dc.Bytes = hex.EncodeToString(b)
		return nil
	case "":
		return fmt.Errorf("values before the type line")
	}
	parts := strings.Split(s, ",")
	if s == "" {
		parts = nil
	}
	var raw []byte
	for _, p := range parts {
		var x int64
		var err error
		switch {
		case dc.Type == "BOOLEAN" && p == "on":
			x = 1
		case dc.Type == "BOOLEAN" && p == "off":
			x = 0
		default:
			x, err = strconv.ParseInt(p, 0, 64)
		}
		if err != nil {
			return fmt.Errorf("%s value %q", dc.Type, p)
		}
		if dc.Type == "BYTES" {
			if x < 0 || x > 0xff {
				return fmt.Errorf("BYTES value %q", p)
			}
			raw = append(raw, byte(x))
			continue
		}
		dc.Values = append(dc.Values, x)
	}
	if dc.Type == "BYTES" {
		dc.Bytes = hex.EncodeToString(raw)
	}
	return nil
}

// centi reads "-65.25" as -6525.
func centi(s string) (int64, error) {
	neg := strings.HasPrefix(s, "-")
	whole, frac, _ := strings.Cut(strings.TrimPrefix(s, "-"), ".")
	w, err := strconv.ParseInt(whole, 10, 32)
	if err != nil {
		return 0, err
	}
	f, err := strconv.ParseInt(frac, 10, 32)
	if err != nil || len(frac) != 2 {
		return 0, fmt.Errorf("%q is not a number with two decimals", s)
	}
	v := w*100 + f
	if neg {
		v = -v
	}
	return v, nil
}
