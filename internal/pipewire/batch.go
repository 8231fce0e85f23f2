// SPDX-License-Identifier: Apache-2.0

package pipewire

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// Bounds of what the graph reader holds. Every client of a PipeWire can
// create objects and set their properties, so the size of a pw-dump is in
// the hands of whoever connects; the reader keeps at most MaxObjectBytes
// of any one object and reads at most MaxBatchBytes of one batch.
// Measured with PipeWire 1.4.2: a declared ALSA sink prints as about
// 5 KiB, a whole graph of 46 objects as about 90 KiB.
const (
	// MaxObjectBytes bounds one element of a pw-dump array. A longer one
	// is skipped (Graph.Skipped names it), and the rest of the batch is
	// read.
	MaxObjectBytes = 1 << 20
	// MaxBatchBytes bounds one pw-dump array. A longer one is a failed
	// read (ErrBadDump): a graph that size is past what the operator can
	// hold.
	MaxBatchBytes = 32 << 20
)

// element is one member of a top-level pw-dump array: its text, or only
// its size when it was longer than the object bound.
type element struct {
	raw      []byte
	size     int
	oversize bool
}

// maxDepth bounds the nesting of one element; encoding/json refuses
// deeper than 10000 too.
const maxDepth = 10000

// splitter cuts a byte stream into top-level JSON arrays and each array
// into its elements without decoding them, so that one element can be
// skipped (too long, or not pw-dump's shape) and the others kept, and so
// that no more than the bounds is ever held. It only tracks nesting and
// strings, and a bracket closed by the other kind ends the read; each
// element is decoded, and so validated, by its caller.
// encoding/json's Decoder reads a whole value into memory before the
// caller sees any of it, which is why it does not fit here.
type splitter struct {
	r         *bufio.Reader
	maxBatch  int
	maxObject int
}

func newSplitter(r io.Reader, maxBatch, maxObject int) *splitter {
	return &splitter{r: bufio.NewReaderSize(r, 64<<10), maxBatch: maxBatch, maxObject: maxObject}
}

// errCutShort is wrapped when the input ends inside an array.
var errCutShort = errors.New("unexpected end of JSON input")

// next returns the elements of the next array. It returns io.EOF when
// the input ends before an array starts (only whitespace was left), and
// an error when something other than an array starts, the input ends
// inside one, or the array passes the batch bound.
func (s *splitter) next() ([]element, error) {
	c, err := s.skipSpace()
	if err != nil {
		return nil, err
	}
	if c != '[' {
		return nil, fmt.Errorf("not a JSON array (starts with %q)", c)
	}
	total := 1
	var out []element
	for {
		c, err := s.skipSpace()
		if err != nil {
			return nil, cutShort(err)
		}
		total++
		if c == ']' && len(out) == 0 {
			return out, nil
		}
		if err := s.r.UnreadByte(); err != nil {
			return nil, err
		}
		total--
		e, end, err := s.element(s.maxBatch - total)
		total += e.size + 1
		if err != nil {
			return nil, err
		}
		out = append(out, e)
		if end == ']' {
			return out, nil
		}
	}
}

// element reads one array element and the ',' or ']' after it, which it
// returns. budget is what is left of the batch bound. It scans what the
// reader has buffered a slice at a time.
func (s *splitter) element(budget int) (element, byte, error) {
	var e element
	var open []byte // the brackets open in the element, innermost last
	inString, escaped := false, false
	for {
		if _, err := s.r.Peek(1); err != nil {
			return e, 0, cutShort(err)
		}
		buf, _ := s.r.Peek(s.r.Buffered())
		for i, c := range buf {
			if !inString && len(open) == 0 && (c == ',' || c == ']') {
				e.size += i
				s.keep(&e, buf[:i])
				_, _ = s.r.Discard(i + 1)
				if e.size > budget {
					return e, 0, fmt.Errorf("the array is longer than %d bytes", s.maxBatch)
				}
				e.raw = trimSpaceRight(e.raw)
				if e.size == 0 {
					return e, 0, fmt.Errorf("invalid character %q where an array element belongs", c)
				}
				return e, c, nil
			}
			switch {
			case inString:
				switch {
				case escaped:
					escaped = false
				case c == '\\':
					escaped = true
				case c == '"':
					inString = false
				}
			case c == '"':
				inString = true
			case c == '{' || c == '[':
				if len(open) >= maxDepth {
					return e, 0, fmt.Errorf("an array element nests deeper than %d", maxDepth)
				}
				open = append(open, c)
			case c == '}' || c == ']':
				if len(open) == 0 || open[len(open)-1] != c-2 {
					// '{'+2 is '}' and '['+2 is ']'.
					return e, 0, fmt.Errorf("invalid character %q in an array element", c)
				}
				open = open[:len(open)-1]
			}
		}
		e.size += len(buf)
		s.keep(&e, buf)
		_, _ = s.r.Discard(len(buf))
		if e.size > budget {
			return e, 0, fmt.Errorf("the array is longer than %d bytes", s.maxBatch)
		}
	}
}

// keep appends b to e's text while it stays within the object bound, and
// otherwise drops the text and marks e oversize.
func (s *splitter) keep(e *element, b []byte) {
	if e.oversize {
		return
	}
	if len(e.raw)+len(b) > s.maxObject {
		e.oversize, e.raw = true, nil
		return
	}
	e.raw = append(e.raw, b...)
}

// skipSpace returns the next byte that is not JSON whitespace.
func (s *splitter) skipSpace() (byte, error) {
	for {
		c, err := s.r.ReadByte()
		if err != nil {
			return 0, err
		}
		if !isSpace(c) {
			return c, nil
		}
	}
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func trimSpaceRight(b []byte) []byte {
	for len(b) > 0 && isSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

func cutShort(err error) error {
	if errors.Is(err, io.EOF) {
		return errCutShort
	}
	return err
}
