// SPDX-License-Identifier: Apache-2.0

package captureapi

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// MaxBegin is the latest begin of a tap's span: the capture container
// holds a tap slot and a recorder while it waits for begin.
const MaxBegin = 60 * time.Second

// maxNPT bounds every time the parser reads, far past any capture a
// person asks for and well inside time.Duration.
const maxNPT = 100_000 * time.Hour

// Span is the half-open interval [Begin, End) of a tap, measured from the
// moment the capture container accepts the request.
type Span struct {
	// Begin is where the body starts, 0 ≤ Begin ≤ MaxBegin.
	Begin time.Duration
	// End is where the body ends; 0 for a tap that streams until the
	// client leaves, else End > Begin.
	End time.Duration
}

// Bounded reports whether the span has an end.
func (s Span) Bounded() bool { return s.End > 0 }

// Length returns End-Begin, or 0 for an unbounded span.
func (s Span) Length() time.Duration {
	if !s.Bounded() {
		return 0
	}
	return s.End - s.Begin
}

// String returns the span as a "t" value in seconds ("npt:2,4",
// "npt:2,"), as logs print it.
func (s Span) String() string {
	if !s.Bounded() {
		return "npt:" + sec(s.Begin) + ","
	}
	return "npt:" + sec(s.Begin) + "," + sec(s.End)
}

// sec formats d as decimal seconds, exactly ("2", "0.5", "1.000000001").
func sec(d time.Duration) string {
	whole := strconv.FormatInt(int64(d/time.Second), 10)
	ns := int64(d % time.Second)
	if ns == 0 {
		return whole
	}
	frac := strings.TrimRight(fmt.Sprintf("%09d", ns), "0")
	return whole + "." + frac
}

// Query returns s as the value of "t" the parser reads back, or "" for the
// whole (0, unbounded) span.
func (s Span) Query() string {
	if s == (Span{}) {
		return ""
	}
	v := strings.TrimPrefix(s.String(), "npt:")
	return strings.TrimSuffix(v, ",")
}

// ParseTime parses the value of a "t" parameter (already percent-decoded)
// as the temporal dimension of W3C Media Fragments URI 1.0 section 4.2.1 in
// Normal Play Time: an optional "npt:" prefix, then "begin,end", "begin"
// or ",end", each time in seconds ("12", "12.5"), "mm:ss[.f]" or
// "h:mm:ss[.f]" (minutes and seconds 00–59). begin defaults to 0 and an
// absent end leaves the span unbounded. Errors name what is wrong: the
// SMPTE and wall-clock formats (not served), a malformed time, begin past
// MaxBegin, a begin not before end, a time past 100,000 hours.
func ParseTime(v string) (Span, error) {
	if v == "" {
		return Span{}, fmt.Errorf("t is empty; give begin,end, begin or ,end in seconds")
	}
	if prefix, rest, ok := strings.Cut(v, ":"); ok && isLetters(prefix) {
		switch prefix {
		case "npt":
			v = rest
		case "smpte", "smpte-25", "smpte-30", "smpte-30-drop", "clock":
			return Span{}, fmt.Errorf("t=%s: only Normal Play Time (npt) is served, not %s", v, prefix)
		default:
			return Span{}, fmt.Errorf("t=%s: unknown time format %q; use npt", v, prefix)
		}
	}
	beginText, endText, hasComma := strings.Cut(v, ",")
	var s Span
	var err error
	if beginText != "" {
		if s.Begin, err = parseNPT(beginText); err != nil {
			return Span{}, fmt.Errorf("t: begin: %w", err)
		}
	} else if !hasComma {
		return Span{}, fmt.Errorf("t is empty; give begin,end, begin or ,end in seconds")
	}
	if hasComma {
		if endText == "" {
			return Span{}, fmt.Errorf("t=%s: a comma must be followed by the end", v)
		}
		if s.End, err = parseNPT(endText); err != nil {
			return Span{}, fmt.Errorf("t: end: %w", err)
		}
		if s.End <= s.Begin {
			return Span{}, fmt.Errorf("t=%s: begin must be before end (the span is half-open)", v)
		}
	}
	if s.Begin > MaxBegin {
		return Span{}, fmt.Errorf("t=%s: begin is %s; it may be at most %s after the request", v, s.Begin, MaxBegin)
	}
	return s, nil
}

func isLetters(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if (c < 'a' || c > 'z') && c != '-' && (c < '0' || c > '9') {
			return false
		}
	}
	return s[0] >= 'a' && s[0] <= 'z'
}

// parseNPT parses one npt-time: npt-sec, npt-mmss or npt-hhmmss.
func parseNPT(s string) (time.Duration, error) {
	whole, frac, hasFrac := strings.Cut(s, ".")
	if hasFrac && !allDigits(frac) {
		return 0, fmt.Errorf("%q: the fraction must be digits", s)
	}
	parts := strings.Split(whole, ":")
	if len(parts) > 3 {
		return 0, fmt.Errorf("%q is not seconds, mm:ss or h:mm:ss", s)
	}
	for i, p := range parts {
		if p == "" || !allDigits(p) {
			return 0, fmt.Errorf("%q is not seconds, mm:ss or h:mm:ss", s)
		}
		if i > 0 && len(p) != 2 {
			return 0, fmt.Errorf("%q: minutes and seconds after a colon are two digits", s)
		}
	}
	var total time.Duration
	unit := []time.Duration{time.Second, time.Minute, time.Hour}
	for i, p := range parts {
		pos := len(parts) - 1 - i
		// Bounded in its own unit, so that n times the unit cannot
		// overflow a Duration (ten million hours would).
		n, err := strconv.ParseUint(p, 10, 63)
		if err != nil || n > uint64(maxNPT/unit[pos]) {
			return 0, fmt.Errorf("%q is out of range (at most %d hours)", s, int64(maxNPT/time.Hour))
		}
		if i > 0 && n > 59 {
			return 0, fmt.Errorf("%q: minutes and seconds after a colon are 00 to 59", s)
		}
		total += time.Duration(n) * unit[pos]
		if total > maxNPT {
			return 0, fmt.Errorf("%q is out of range (at most %d hours)", s, int64(maxNPT/time.Hour))
		}
	}
	// The fraction to nanoseconds; digits past the ninth are below
	// resolution and dropped.
	if len(frac) > 9 {
		frac = frac[:9]
	}
	if frac != "" {
		n, _ := strconv.Atoi(frac)
		for i := len(frac); i < 9; i++ {
			n *= 10
		}
		total += time.Duration(n)
	}
	return total, nil
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// Bitrate bounds: opusenc(1) documents 6 to 256 kbit/s per channel, and
// Opus streams carry at most 255 channels (RFC 7845 section 5.1.1).
const (
	MinBitrate           = 6
	MaxBitratePerChannel = 256
	maxOpusChannels      = 255
)

// ParseBitrate parses the value of "bitrate": whole kbit/s, at least
// MinBitrate and at most MaxBitratePerChannel for each of 255 channels
// (CheckBitrate bounds it by a node's channels).
func ParseBitrate(v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || !allDigits(v) {
		return 0, fmt.Errorf("bitrate=%s is not a whole number of kbit/s", v)
	}
	if n < MinBitrate || n > MaxBitratePerChannel*maxOpusChannels {
		return 0, fmt.Errorf("bitrate=%s kbit/s is outside %d to %d per channel", v, MinBitrate, MaxBitratePerChannel)
	}
	return n, nil
}

// CheckBitrate returns a 400 problem when kbps (0: the encoder's choice)
// is more than MaxBitratePerChannel times channels, else nil.
func CheckBitrate(kbps, channels int) *Problem {
	if kbps == 0 || kbps <= MaxBitratePerChannel*channels {
		return nil
	}
	return NewProblem(ProblemBadRequest, "bitrate=%d kbit/s is more than %d per channel for this node's %d channels (at most %d).",
		kbps, MaxBitratePerChannel, channels, MaxBitratePerChannel*channels)
}

// TapQuery is the query of a tap.
type TapQuery struct {
	// Span bounds the body.
	Span Span
	// Bitrate is the Opus target in kbit/s; 0 leaves it to the encoder.
	Bitrate int
}

// Encode returns q as a raw query ("t=2,4&bitrate=96"), "" for the zero
// TapQuery; ParseTapQuery reads it back.
func (q TapQuery) Encode() string {
	var parts []string
	if t := q.Span.Query(); t != "" {
		parts = append(parts, "t="+t)
	}
	if q.Bitrate != 0 {
		parts = append(parts, "bitrate="+strconv.Itoa(q.Bitrate))
	}
	return strings.Join(parts, "&")
}

// maxQueryLen bounds the raw query ParseTapQuery and CheckNoQuery read.
const maxQueryLen = 512

// ParseTapQuery parses the raw query of a tap in format f. The query is
// split on "&" and "=" first and each name and value percent-decoded
// after (so t=10%2C20 is the span 10 to 20 s). Every error is a 400
// ProblemBadRequest naming the fault: a query past 512 bytes, bad
// percent-encoding, a parameter other than t and bitrate, one given
// twice, bitrate for a format other than Opus, or a value ParseTime or
// ParseBitrate refuses.
func ParseTapQuery(rawQuery string, f Format) (TapQuery, *Problem) {
	var q TapQuery
	if len(rawQuery) > maxQueryLen {
		return q, NewProblem(ProblemBadRequest, "The query is %d bytes long; at most %d are read.", len(rawQuery), maxQueryLen)
	}
	vals, err := url.ParseQuery(rawQuery)
	if err != nil {
		return q, NewProblem(ProblemBadRequest, "The query %q does not parse: %v.", rawQuery, err)
	}
	for name, vs := range vals {
		if len(vs) > 1 {
			return q, NewProblem(ProblemBadRequest, "The query names %q %d times; give it once.", name, len(vs))
		}
		switch name {
		case ParamTime.Name:
			if q.Span, err = ParseTime(vs[0]); err != nil {
				return q, NewProblem(ProblemBadRequest, "%v.", err)
			}
		case ParamBitrate.Name:
			if !f.Bitrate {
				return q, NewProblem(ProblemBadRequest, "bitrate applies to Opus only, and this tap is %s.", f.MediaType)
			}
			if q.Bitrate, err = ParseBitrate(vs[0]); err != nil {
				return q, NewProblem(ProblemBadRequest, "%v.", err)
			}
		default:
			return q, NewProblem(ProblemBadRequest, "Unknown query parameter %q; a tap takes %s.", name, tapParams(f))
		}
	}
	return q, nil
}

func tapParams(f Format) string {
	if f.Bitrate {
		return "t and bitrate"
	}
	return "t"
}

// CheckNoQuery returns a 400 problem when rawQuery is not empty: the
// documents and an endpoint's information take no parameter.
func CheckNoQuery(rawQuery string) *Problem {
	if rawQuery == "" {
		return nil
	}
	if len(rawQuery) > 64 {
		rawQuery = rawQuery[:64] + "…"
	}
	return NewProblem(ProblemBadRequest, "This route takes no query, and %q was given.", rawQuery)
}
