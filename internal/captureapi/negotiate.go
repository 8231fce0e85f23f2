// SPDX-License-Identifier: Apache-2.0

package captureapi

import (
	"strconv"
	"strings"
)

// Bounds on the Accept header Negotiate reads. No client needs more than a
// handful of media ranges; the bounds keep a hostile header from costing
// more than a glance.
const (
	MaxAcceptRanges = 64
	maxAcceptLen    = 4096
)

// mediaRange is one element of Accept.
type mediaRange struct {
	typ, sub string
	codecs   string // the codecs parameter, lowercase; empty when absent
	q        int    // quality in thousandths, 0..1000
}

// Negotiate chooses the format of a tap from the Accept header values
// accept (RFC 9110 section 12.5.1; several headers are one list), among
// candidates (Formats for a negotiated tap, one format for a fixed one).
// No Accept at all is the first candidate. Each candidate takes the
// quality of the most specific range that matches it (type/subtype over
// type/* over */*; a range with a codecs parameter matches only that
// codec), the highest positive quality wins, and ties go to the earlier
// candidate. tapPath is the negotiated tap's path (Match.TapPath), from
// which a 406 builds the href of each acceptable format.
//
// Why not github.com/munnerz/goautoneg, which the module graph holds: its
// ParseAccept drops a malformed range and reads a bad q as 0 without a
// word, where a client here is told which range was wrong (400); it
// splits a quoted parameter at a comma or semicolon inside the quotes,
// which the codecs parameter of an audio range carries ("opus, flac");
// and it has no bound on the ranges it allocates.
//
// Errors: 400 ProblemBadRequest for an Accept past 4096 bytes or
// MaxAcceptRanges ranges, or a range that is not type/subtype or whose q
// is not a qvalue; 406 ProblemNotAcceptable, listing every candidate as
// Acceptable, when no candidate has a positive quality.
func Negotiate(accept []string, candidates []Format, tapPath string) (Format, *Problem) {
	if len(accept) == 0 {
		return candidates[0], nil
	}
	joined := strings.Join(accept, ",")
	if len(joined) > maxAcceptLen {
		return Format{}, NewProblem(ProblemBadRequest, "Accept is %d bytes long; at most %d are read.", len(joined), maxAcceptLen)
	}
	ranges, p := parseAccept(joined)
	if p != nil {
		return Format{}, p
	}
	best, bestQ := -1, 0
	for i, f := range candidates {
		if q := quality(ranges, f); q > bestQ {
			best, bestQ = i, q
		}
	}
	if best < 0 {
		var names []string
		prob := NewProblem(ProblemNotAcceptable, "")
		for _, f := range candidates {
			names = append(names, f.MediaType)
			prob.Acceptable = append(prob.Acceptable, Acceptable{Type: f.MediaType, Href: tapPath + "." + f.Name})
		}
		prob.Detail = "Accept " + strconv.Quote(truncate(joined, 200)) + " allows none of " + strings.Join(names, ", ") + "."
		return Format{}, prob
	}
	return candidates[best], nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// parseAccept splits an Accept value into media ranges; empty elements
// (",,") are skipped as RFC 9110 section 5.6.1 asks of a recipient.
func parseAccept(v string) ([]mediaRange, *Problem) {
	var out []mediaRange
	for _, elem := range splitOutsideQuotes(v, ',') {
		elem = strings.TrimSpace(elem)
		if elem == "" {
			continue
		}
		if len(out) == MaxAcceptRanges {
			return nil, NewProblem(ProblemBadRequest, "Accept lists more than %d media ranges; send the formats wanted (%s).", MaxAcceptRanges, strings.Join(FormatNames(), ", "))
		}
		params := splitOutsideQuotes(elem, ';')
		typ, sub, ok := strings.Cut(strings.TrimSpace(params[0]), "/")
		typ, sub = strings.ToLower(strings.TrimSpace(typ)), strings.ToLower(strings.TrimSpace(sub))
		if !ok || !isToken(typ) || !isToken(sub) || (typ == "*" && sub != "*") {
			return nil, NewProblem(ProblemBadRequest, "Accept: %q is not a media range (type/subtype, type/* or */*).", truncate(elem, 100))
		}
		r := mediaRange{typ: typ, sub: sub, q: 1000}
		for _, param := range params[1:] {
			name, val, _ := strings.Cut(param, "=")
			name = strings.ToLower(strings.TrimSpace(name))
			val = strings.Trim(strings.TrimSpace(val), `"`)
			switch name {
			case "q":
				q, ok := parseQValue(val)
				if !ok {
					return nil, NewProblem(ProblemBadRequest, "Accept: %q has q=%s, which is not a qvalue (0 to 1, at most three decimals).", truncate(elem, 100), truncate(val, 20))
				}
				r.q = q
			case "codecs":
				r.codecs = strings.ToLower(val)
			}
		}
		out = append(out, r)
	}
	return out, nil
}

// splitOutsideQuotes splits s on sep where sep is not inside a
// quoted-string.
func splitOutsideQuotes(s string, sep byte) []string {
	var out []string
	start, quoted := 0, false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\' && quoted:
			i++
		case c == '"':
			quoted = !quoted
		case c == sep && !quoted:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

// isToken reports whether s is a non-empty RFC 9110 token.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0 {
			continue
		}
		return false
	}
	return true
}

// parseQValue parses an RFC 9110 section 12.4.2 qvalue into thousandths.
func parseQValue(s string) (int, bool) {
	whole, frac, _ := strings.Cut(s, ".")
	if (whole != "0" && whole != "1") || len(frac) > 3 || !allDigits(frac) {
		return 0, false
	}
	n := 0
	if whole == "1" {
		if strings.Trim(frac, "0") != "" {
			return 0, false
		}
		return 1000, true
	}
	for i := 0; i < 3; i++ {
		n *= 10
		if i < len(frac) {
			n += int(frac[i] - '0')
		}
	}
	return n, true
}

// quality returns f's quality under ranges: that of the most specific
// matching range, 0 when none matches.
func quality(ranges []mediaRange, f Format) int {
	bestSpec, q := -1, 0
	codec := f.codec()
	for _, r := range ranges {
		spec := -1
		switch {
		case r.typ == "*" && r.sub == "*":
			spec = 0
		case r.sub == "*" && r.typ == f.topType():
			spec = 1
		default:
			for _, mt := range f.mediaTypes() {
				if mt == r.typ+"/"+r.sub {
					spec = 2
				}
			}
		}
		if spec < 0 {
			continue
		}
		if r.codecs != "" {
			if r.codecs != codec {
				continue
			}
			spec++ // a parameter makes a range more specific
			if spec < 3 {
				spec = 3
			}
		}
		if spec > bestSpec {
			bestSpec, q = spec, r.q
		}
	}
	return q
}

// topType returns the top-level type of f's media type ("audio").
func (f Format) topType() string {
	t, _, _ := strings.Cut(f.MediaType, "/")
	return t
}

// codec returns the codec name a codecs parameter names f by: the
// parameter of its media type ("opus"), "1" (PCM, RFC 2361 section 3) for WAV,
// else its Name.
func (f Format) codec() string {
	if f.Name == WAV.Name {
		return "1"
	}
	if _, c, ok := strings.Cut(f.MediaType, "codecs="); ok {
		return strings.ToLower(strings.TrimSpace(c))
	}
	return f.Name
}
