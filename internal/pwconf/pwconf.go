// SPDX-License-Identifier: Apache-2.0

// Package pwconf reads PipeWire's and WirePlumber's configuration files,
// which are written in SPA-JSON: JSON relaxed so that the top level is an
// object without braces, keys and simple values need no quotes, "=" may
// stand for ":", commas are optional and "#" starts a comment. It reads
// enough of them to say which modules a configuration loads and which of
// those it cannot run without.
package pwconf

import (
	"fmt"
	"strings"
)

// Object is an SPA-JSON object: its members in file order (a key may
// repeat, as PipeWire's fragments rely on).
type Object []Member

// Member is one key and its value: an Object, an Array, or a string
// (quoted or bare; numbers and booleans stay text).
type Member struct {
	Key   string
	Value any
}

// Array is an SPA-JSON array.
type Array []any

// Get returns the value of the last member named key.
func (o Object) Get(key string) (any, bool) {
	for i := len(o) - 1; i >= 0; i-- {
		if o[i].Key == key {
			return o[i].Value, true
		}
	}
	return nil, false
}

// String returns the value of key when it is a string.
func (o Object) String(key string) string {
	v, _ := o.Get(key)
	s, _ := v.(string)
	return s
}

// Parse reads a configuration file: the members of its top-level object.
func Parse(data []byte) (Object, error) {
	p := &parser{src: data}
	obj, err := p.members(0)
	if err != nil {
		return nil, fmt.Errorf("pwconf: line %d: %w", p.line(), err)
	}
	return obj, nil
}

type parser struct {
	src []byte
	pos int
}

func (p *parser) line() int { return 1 + strings.Count(string(p.src[:p.pos]), "\n") }

// skip passes whitespace, separators and comments.
func (p *parser) skip() {
	for p.pos < len(p.src) {
		switch c := p.src[p.pos]; {
		case c == '#':
			for p.pos < len(p.src) && p.src[p.pos] != '\n' {
				p.pos++
			}
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ',' || c == ':' || c == '=':
			p.pos++
		default:
			return
		}
	}
}

// members reads key-value pairs up to close (0 for the end of input).
func (p *parser) members(close byte) (Object, error) {
	var obj Object
	for {
		p.skip()
		if p.pos >= len(p.src) {
			if close != 0 {
				return nil, fmt.Errorf("missing %q", close)
			}
			return obj, nil
		}
		if p.src[p.pos] == close {
			p.pos++
			return obj, nil
		}
		key, err := p.value()
		if err != nil {
			return nil, err
		}
		k, ok := key.(string)
		if !ok {
			return nil, fmt.Errorf("an object or array where a key belongs")
		}
		p.skip()
		if p.pos >= len(p.src) {
			return nil, fmt.Errorf("key %q has no value", k)
		}
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		obj = append(obj, Member{Key: k, Value: v})
	}
}

// value reads one value at the current position.
func (p *parser) value() (any, error) {
	switch p.src[p.pos] {
	case '{':
		p.pos++
		return p.members('}')
	case '[':
		p.pos++
		var arr Array
		for {
			p.skip()
			if p.pos >= len(p.src) {
				return nil, fmt.Errorf("missing ']'")
			}
			if p.src[p.pos] == ']' {
				p.pos++
				return arr, nil
			}
			v, err := p.value()
			if err != nil {
				return nil, err
			}
			arr = append(arr, v)
		}
	case '}', ']':
		return nil, fmt.Errorf("unexpected %q", p.src[p.pos])
	case '"':
		return p.quoted()
	}
	start := p.pos
	for p.pos < len(p.src) && !strings.ContainsRune(" \t\r\n,:={}[]#\"", rune(p.src[p.pos])) {
		p.pos++
	}
	return string(p.src[start:p.pos]), nil
}

// quoted reads a double-quoted string with backslash escapes.
func (p *parser) quoted() (string, error) {
	p.pos++
	var b strings.Builder
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		p.pos++
		switch c {
		case '"':
			return b.String(), nil
		case '\\':
			if p.pos >= len(p.src) {
				return "", fmt.Errorf("unterminated string")
			}
			e := p.src[p.pos]
			p.pos++
			switch e {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			default:
				b.WriteByte(e)
			}
		default:
			b.WriteByte(c)
		}
	}
	return "", fmt.Errorf("unterminated string")
}
