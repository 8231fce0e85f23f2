// SPDX-License-Identifier: Apache-2.0

// Package native speaks the part of PipeWire's native protocol that the
// audio operator's claim gate needs: connect to a daemon's socket, follow
// its registry, create a security context (a listening socket whose
// clients get properties they cannot change), set a client's
// permissions, follow a node's properties, and destroy an object; and
// the two messages a client uses to make a node of its own and change
// its properties afterwards, which the tests use to play a hostile
// client.
//
// The protocol is documented in PipeWire's doc/dox/internals/native-protocol.dox:
// each message is a 16-byte header (object id; opcode in the top 8 bits
// and payload size in the low 24; sequence number; number of file
// descriptors) and a payload that is one SPA POD Struct (spa/pod/pod.h),
// file descriptors travelling beside it as SCM_RIGHTS and named in the
// POD by their index. There is no Go implementation of the native
// protocol to use, and libpipewire through cgo would make the operator's
// static binary dynamic, so this package holds the few messages by hand.
// Facts measured with PipeWire 1.4.2 are stated where they are used.
package native

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// SPA POD types (spa/utils/type.h, enum spa_type).
const (
	podNone   = 1
	podBool   = 2
	podID     = 3
	podInt    = 4
	podLong   = 5
	podFloat  = 6
	podString = 8
	podArray  = 13
	podStruct = 14
	podObject = 15
	podFd     = 18
)

// Param and property ids of a node's volume (spa/param/param-types.h,
// spa/param/props.h).
const (
	// paramProps is SPA_PARAM_Props, and objectProps
	// SPA_TYPE_OBJECT_Props, the object type of that param.
	paramProps  = 2
	objectProps = 0x40002
	// propChannelVolumes is SPA_PROP_channelVolumes: an Array of Float,
	// one linear gain per channel.
	propChannelVolumes = 0x10008
	// maxChannels is SPA_AUDIO_MAX_CHANNELS.
	maxChannels = 64
)

var le = binary.LittleEndian

// builder writes one POD Struct.
type builder struct{ b []byte }

func pad8(n int) int { return (n + 7) &^ 7 }

func (w *builder) header(size, typ uint32) {
	w.b = le.AppendUint32(w.b, size)
	w.b = le.AppendUint32(w.b, typ)
}

func (w *builder) int32(v int32) {
	w.header(4, podInt)
	w.b = le.AppendUint32(w.b, uint32(v))
	w.b = le.AppendUint32(w.b, 0)
}

func (w *builder) uint32(v uint32) { w.int32(int32(v)) }

func (w *builder) int64(v int64) {
	w.header(8, podLong)
	w.b = le.AppendUint64(w.b, uint64(v))
}

// id writes an Id (an enum value of SPA's type system).
func (w *builder) id(v uint32) {
	w.header(4, podID)
	w.b = le.AppendUint32(w.b, v)
	w.b = le.AppendUint32(w.b, 0)
}

// object writes an Object of type typ and param id whose properties
// fill writes (property).
func (w *builder) object(typ, id uint32, fill func()) {
	start := len(w.b)
	w.header(0, podObject)
	w.b = le.AppendUint32(w.b, typ)
	w.b = le.AppendUint32(w.b, id)
	fill()
	le.PutUint32(w.b[start:], uint32(len(w.b)-start-8))
}

// property writes one property of an Object: its key, no flags, and the
// value value writes.
func (w *builder) property(key uint32, value func()) {
	w.b = le.AppendUint32(w.b, key)
	w.b = le.AppendUint32(w.b, 0)
	value()
}

// floats writes an Array of n Floats, each v, padded to 8 bytes.
func (w *builder) floats(v float32, n int) {
	w.header(uint32(8+4*n), podArray)
	w.b = le.AppendUint32(w.b, 4)
	w.b = le.AppendUint32(w.b, podFloat)
	for range n {
		w.b = le.AppendUint32(w.b, math.Float32bits(v))
	}
	for len(w.b)%8 != 0 {
		w.b = append(w.b, 0)
	}
}

func (w *builder) fd(index int64) {
	w.header(8, podFd)
	w.b = le.AppendUint64(w.b, uint64(index))
}

func (w *builder) string(s string) {
	w.header(uint32(len(s)+1), podString)
	w.b = append(w.b, s...)
	w.b = append(w.b, 0)
	for len(w.b)%8 != 0 {
		w.b = append(w.b, 0)
	}
}

// structure writes a Struct whose members fill writes.
func (w *builder) structure(fill func()) {
	start := len(w.b)
	w.header(0, podStruct)
	fill()
	le.PutUint32(w.b[start:], uint32(len(w.b)-start-8))
}

// dict writes a spa_dict as the protocol does: a Struct of the item
// count and then each key and value as Strings.
func (w *builder) dict(keys []string, props map[string]string) {
	w.structure(func() {
		w.int32(int32(len(keys)))
		for _, k := range keys {
			w.string(k)
			w.string(props[k])
		}
	})
}

// errPOD is wrapped by every error about a POD the daemon sent.
var errPOD = errors.New("malformed POD")

// parser reads the members of one POD Struct in order.
type parser struct{ b []byte }

// openStruct returns a parser over the members of the Struct at the
// start of b.
func openStruct(b []byte) (*parser, error) {
	size, typ, body, _, err := next(b)
	if err != nil {
		return nil, err
	}
	if typ != podStruct {
		return nil, fmt.Errorf("%w: type %d where a Struct belongs", errPOD, typ)
	}
	return &parser{b: body[:size]}, nil
}

// next splits the POD at the start of b into its size, type, body and
// what follows it.
func next(b []byte) (size, typ uint32, body, rest []byte, err error) {
	if len(b) < 8 {
		return 0, 0, nil, nil, fmt.Errorf("%w: %d bytes left, a header needs 8", errPOD, len(b))
	}
	size, typ = le.Uint32(b), le.Uint32(b[4:])
	if uint64(size) > uint64(len(b)-8) {
		return 0, 0, nil, nil, fmt.Errorf("%w: a body of %d bytes in %d", errPOD, size, len(b)-8)
	}
	end := min(8+pad8(int(size)), len(b))
	return size, typ, b[8 : 8+size], b[end:], nil
}

func (p *parser) member(want uint32) ([]byte, uint32, error) {
	size, typ, body, rest, err := next(p.b)
	if err != nil {
		return nil, 0, err
	}
	p.b = rest
	if want != 0 && typ != want {
		return nil, typ, fmt.Errorf("%w: type %d where %d belongs", errPOD, typ, want)
	}
	return body[:size], typ, nil
}

func (p *parser) int32() (int32, error) {
	body, _, err := p.member(podInt)
	if err != nil {
		return 0, err
	}
	if len(body) < 4 {
		return 0, fmt.Errorf("%w: an Int of %d bytes", errPOD, len(body))
	}
	return int32(le.Uint32(body)), nil
}

func (p *parser) int64() (int64, error) {
	body, _, err := p.member(podLong)
	if err != nil {
		return 0, err
	}
	if len(body) < 8 {
		return 0, fmt.Errorf("%w: a Long of %d bytes", errPOD, len(body))
	}
	return int64(le.Uint64(body)), nil
}

// id reads an Id.
func (p *parser) id() (uint32, error) {
	body, _, err := p.member(podID)
	if err != nil {
		return 0, err
	}
	if len(body) < 4 {
		return 0, fmt.Errorf("%w: an Id of %d bytes", errPOD, len(body))
	}
	return le.Uint32(body), nil
}

func (p *parser) uint32() (uint32, error) {
	v, err := p.int32()
	return uint32(v), err
}

// string reads a String; a None reads as "".
func (p *parser) string() (string, error) {
	body, typ, err := p.member(0)
	if err != nil {
		return "", err
	}
	switch typ {
	case podNone:
		return "", nil
	case podString:
		if len(body) == 0 || body[len(body)-1] != 0 {
			return "", fmt.Errorf("%w: a String with no terminating NUL", errPOD)
		}
		return string(body[:len(body)-1]), nil
	}
	return "", fmt.Errorf("%w: type %d where a String belongs", errPOD, typ)
}

// skip passes over one member of any type.
func (p *parser) skip() error {
	_, _, err := p.member(0)
	return err
}

// dict reads a spa_dict Struct. An item count past what the Struct can
// hold is an error, so a hostile count cannot make it allocate.
func (p *parser) dict() (map[string]string, error) {
	body, _, err := p.member(podStruct)
	if err != nil {
		return nil, err
	}
	q := &parser{b: body}
	n, err := q.int32()
	if err != nil {
		return nil, err
	}
	if n < 0 || int64(n) > int64(len(body)/16) || n > math.MaxInt32/2 {
		return nil, fmt.Errorf("%w: a dict of %d items in %d bytes", errPOD, n, len(body))
	}
	out := make(map[string]string, n)
	for range n {
		k, err := q.string()
		if err != nil {
			return nil, err
		}
		v, err := q.string()
		if err != nil {
			return nil, err
		}
		out[k] = v
	}
	return out, nil
}
