// SPDX-License-Identifier: Apache-2.0

package alsatest

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/liken-sh/operators/internal/alsa"
)

// Reading alsactl's state files ("alsactl store", and the "Alsactl output"
// of alsa-info.sh): alsa-lib's configuration syntax, a tree of keys whose
// values are words, quoted strings or braced subtrees.

// confNode is one key of a configuration tree: a value or a subtree.
type confNode struct {
	key      string
	value    string
	quoted   bool
	children []*confNode // non-nil for a subtree
	line     int
}

// confLexer splits configuration text into tokens.
type confLexer struct {
	s    string
	pos  int
	line int
}

type confToken struct {
	kind   byte // 'w' word, 's' string, '{', '}', 0 at the end
	text   string
	line   int
	quoted bool
}

func (l *confLexer) next() (confToken, error) {
	for l.pos < len(l.s) {
		c := l.s[l.pos]
		switch {
		case c == '\n':
			l.line++
			l.pos++
		case c == ' ' || c == '\t' || c == '\r' || c == ';' || c == ',' || c == '=':
			l.pos++
		case c == '#':
			for l.pos < len(l.s) && l.s[l.pos] != '\n' {
				l.pos++
			}
		case c == '{' || c == '}':
			l.pos++
			return confToken{kind: c, line: l.line}, nil
		case c == '[' || c == ']':
			return confToken{}, fmt.Errorf("line %d: arrays are not part of alsactl's state syntax", l.line)
		case c == '\'' || c == '"':
			return l.quoted(c)
		default:
			start := l.pos
			for l.pos < len(l.s) && !strings.ContainsRune(" \t\r\n{}[]'\",;=#", rune(l.s[l.pos])) {
				l.pos++
			}
			return confToken{kind: 'w', text: l.s[start:l.pos], line: l.line}, nil
		}
	}
	return confToken{line: l.line}, nil
}

// quoted reads a string in quote q with alsa-lib's escapes.
func (l *confLexer) quoted(q byte) (confToken, error) {
	line := l.line
	l.pos++
	var b strings.Builder
	for l.pos < len(l.s) {
		c := l.s[l.pos]
		l.pos++
		switch {
		case c == q:
			return confToken{kind: 's', text: b.String(), line: line, quoted: true}, nil
		case c == '\n':
			l.line++
			b.WriteByte(c)
		case c == '\\' && l.pos < len(l.s):
			e := l.s[l.pos]
			l.pos++
			switch e {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'v':
				b.WriteByte('\v')
			case 'b':
				b.WriteByte('\b')
			case 'r':
				b.WriteByte('\r')
			case 'f':
				b.WriteByte('\f')
			case '0', '1', '2', '3', '4', '5', '6', '7':
				n := int(e - '0')
				for i := 0; i < 2 && l.pos < len(l.s) && l.s[l.pos] >= '0' && l.s[l.pos] <= '7'; i++ {
					n = n*8 + int(l.s[l.pos]-'0')
					l.pos++
				}
				if n > 0xff {
					return confToken{}, fmt.Errorf("line %d: octal escape above \\377", line)
				}
				b.WriteByte(byte(n))
			default:
				b.WriteByte(e)
			}
		default:
			b.WriteByte(c)
		}
	}
	return confToken{}, fmt.Errorf("line %d: unterminated string", line)
}

// maxConfDepth bounds nesting (alsactl's state is four deep).
const maxConfDepth = 16

// parseConf reads a whole tree.
func parseConf(text string, firstLine int) (*confNode, error) {
	l := &confLexer{s: text, line: firstLine}
	root := &confNode{children: []*confNode{}}
	if err := parseConfBody(l, root, 0); err != nil {
		return nil, err
	}
	return root, nil
}

func parseConfBody(l *confLexer, parent *confNode, depth int) error {
	for {
		t, err := l.next()
		if err != nil {
			return err
		}
		switch t.kind {
		case 0:
			if depth > 0 {
				return fmt.Errorf("line %d: %d unclosed braces at the end", t.line, depth)
			}
			return nil
		case '}':
			if depth == 0 {
				return fmt.Errorf("line %d: '}' with no '{'", t.line)
			}
			return nil
		case '{':
			return fmt.Errorf("line %d: '{' with no key", t.line)
		}
		n := &confNode{key: t.text, line: t.line}
		v, err := l.next()
		if err != nil {
			return err
		}
		switch v.kind {
		case 'w', 's':
			n.value, n.quoted = v.text, v.quoted
		case '{':
			if depth+1 > maxConfDepth {
				return fmt.Errorf("line %d: nested deeper than %d", v.line, maxConfDepth)
			}
			n.children = []*confNode{}
			if err := parseConfBody(l, n, depth+1); err != nil {
				return err
			}
		default:
			return fmt.Errorf("line %d: key %q has no value", t.line, t.text)
		}
		parent.children = append(parent.children, n)
	}
}

// ImportAlsactlState reads alsactl's state text (one or more "state.<id> {
// control.<numid> { ... } }" blocks) into controls per card id. Every
// element becomes a DumpControl with its numid, id fields, type, access,
// count, range (min, max, step), enumerated items, value(s), dB range and
// TLV (when the state carries one as comment.tlv). An element the dump
// format cannot hold is an error naming its line.
func ImportAlsactlState(text string) (map[string][]alsa.DumpControl, error) {
	return importAlsactlState(text, 1)
}

func importAlsactlState(text string, firstLine int) (map[string][]alsa.DumpControl, error) {
	root, err := parseConf(text, firstLine)
	if err != nil {
		return nil, fmt.Errorf("alsactl state: %w", err)
	}
	out := map[string][]alsa.DumpControl{}
	for _, st := range root.children {
		id, ok := strings.CutPrefix(st.key, "state.")
		if !ok || id == "" || st.children == nil {
			return nil, fmt.Errorf("alsactl state line %d: %q is not a state.<card id> block", st.line, st.key)
		}
		if _, dup := out[id]; dup {
			return nil, fmt.Errorf("alsactl state line %d: state.%s appears twice", st.line, id)
		}
		controls := []alsa.DumpControl{}
		for _, c := range st.children {
			dc, err := importAlsactlControl(c)
			if err != nil {
				return nil, fmt.Errorf("alsactl state.%s line %d: %w", id, c.line, err)
			}
			controls = append(controls, dc)
		}
		out[id] = controls
	}
	return out, nil
}

var alsactlRange = regexp.MustCompile(`^(-?[0-9]+) - (-?[0-9]+)(?: \(step ([0-9]+)\))?$`)

func importAlsactlControl(c *confNode) (alsa.DumpControl, error) {
	num, ok := strings.CutPrefix(c.key, "control.")
	if !ok || c.children == nil {
		return alsa.DumpControl{}, fmt.Errorf("%q is not a control.<numid> block", c.key)
	}
	numid, err := strconv.ParseUint(num, 10, 32)
	if err != nil || numid == 0 {
		return alsa.DumpControl{}, fmt.Errorf("%q: numid is not a number above 0", c.key)
	}
	dc := alsa.DumpControl{NumID: uint32(numid)}
	values := map[int]*confNode{}
	comment := &confNode{}
	seen := map[string]bool{}
	for _, n := range c.children {
		if seen[n.key] {
			return dc, fmt.Errorf("%s appears twice", n.key)
		}
		seen[n.key] = true
		u32 := func(dst *uint32) error {
			v, err := strconv.ParseUint(n.value, 10, 32)
			if err != nil || n.children != nil {
				return fmt.Errorf("%s %q is not a number", n.key, n.value)
			}
			*dst = uint32(v)
			return nil
		}
		switch {
		case n.key == "iface":
			dc.Iface = n.value
		case n.key == "name":
			dc.Name = n.value
		case n.key == "device":
			err = u32(&dc.Device)
		case n.key == "subdevice":
			err = u32(&dc.Subdevice)
		case n.key == "index":
			err = u32(&dc.Index)
		case n.key == "comment" && n.children != nil:
			comment = n
		case n.key == "value":
			values[0] = n
		case strings.HasPrefix(n.key, "value."):
			i, perr := strconv.Atoi(strings.TrimPrefix(n.key, "value."))
			if perr != nil || i < 0 || i >= alsa.TypeBytes.MaxCount() {
				return dc, fmt.Errorf("%s is not value.<index>", n.key)
			}
			values[i] = n
		default:
			return dc, fmt.Errorf("unknown key %s", n.key)
		}
		if err != nil {
			return dc, err
		}
	}
	if dc.Iface == "" {
		dc.Iface = "MIXER" // alsactl's default
	}

	// The comment block describes the element.
	items := map[int]string{}
	for _, n := range comment.children {
		if n.children != nil {
			continue // e.g. a ctl.<x> subtree of an old alsactl: not ours
		}
		switch {
		case n.key == "access":
			dc.Access = n.value
		case n.key == "type":
			dc.Type = n.value
		case n.key == "count":
			if dc.Count, err = strconv.Atoi(n.value); err != nil {
				return dc, fmt.Errorf("comment.count %q", n.value)
			}
		case n.key == "range":
			m := alsactlRange.FindStringSubmatch(n.value)
			if m == nil {
				return dc, fmt.Errorf("comment.range %q is not 'min - max [(step n)]'", n.value)
			}
			dc.Min, _ = strconv.ParseInt(m[1], 10, 64)
			dc.Max, _ = strconv.ParseInt(m[2], 10, 64)
			if m[3] != "" {
				dc.Step, _ = strconv.ParseInt(m[3], 10, 64)
			}
		case n.key == "dbmin" || n.key == "dbmax":
			v, err := strconv.ParseInt(n.value, 10, 64)
			if err != nil {
				return dc, fmt.Errorf("comment.%s %q", n.key, n.value)
			}
			if n.key == "dbmin" {
				dc.DBMin = &v
			} else {
				dc.DBMax = &v
			}
		case strings.HasPrefix(n.key, "item."):
			i, err := strconv.Atoi(strings.TrimPrefix(n.key, "item."))
			if err != nil || i < 0 || i >= alsa.MaxEnumItems {
				return dc, fmt.Errorf("comment.%s is not item.<index>", n.key)
			}
			items[i] = n.value
		case n.key == "tlv":
			b, err := hex.DecodeString(n.value)
			if err != nil || len(b)%4 != 0 {
				return dc, fmt.Errorf("comment.tlv is not hex of whole 32-bit words")
			}
			for i := 0; i < len(b); i += 4 {
				dc.TLV = append(dc.TLV, binary.NativeEndian.Uint32(b[i:]))
			}
		}
		// dbvalue.N and other comments are derived; not kept.
	}
	typ, err := alsa.ParseElemType(dc.Type)
	if err != nil {
		return dc, err
	}
	if len(dc.TLV) > 0 && !strings.Contains(" "+dc.Access+" ", " tlv_read ") {
		dc.Access = strings.TrimSpace(dc.Access + " tlv_read")
	}
	for i := range len(items) {
		name, ok := items[i]
		if !ok {
			return dc, fmt.Errorf("comment.item.%d missing", i)
		}
		dc.Items = append(dc.Items, name)
	}

	// The values, by type.
	if typ == alsa.TypeBytes || typ == alsa.TypeIEC958 {
		if len(values) > 1 {
			return dc, fmt.Errorf("%s element with %d values", typ, len(values))
		}
		if v := values[0]; v != nil {
			if _, err := hex.DecodeString(v.value); err != nil {
				return dc, fmt.Errorf("value of a %s element is not hex", typ)
			}
			dc.Bytes = v.value
		}
		return dc, nil
	}
	if len(values) != dc.Count {
		return dc, fmt.Errorf("%d values for count %d", len(values), dc.Count)
	}
	for i := range dc.Count {
		v := values[i]
		if v == nil {
			return dc, fmt.Errorf("value.%d missing", i)
		}
		var x int64
		switch {
		case typ == alsa.TypeBoolean && v.value == "true":
			x = 1
		case typ == alsa.TypeBoolean && v.value == "false":
			x = 0
		case typ == alsa.TypeEnumerated && (v.quoted || slices.Contains(dc.Items, v.value)):
			i := slices.Index(dc.Items, v.value)
			if i < 0 {
				return dc, fmt.Errorf("value %q is not one of the items", v.value)
			}
			x = int64(i)
		default:
			x, err = strconv.ParseInt(v.value, 10, 64)
			if err != nil {
				return dc, fmt.Errorf("value %q of a %s element", v.value, typ)
			}
		}
		dc.Values = append(dc.Values, x)
	}
	return dc, nil
}
