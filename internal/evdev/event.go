// SPDX-License-Identifier: Apache-2.0

package evdev

import (
	"encoding/binary"
	"fmt"
	"time"
)

// Event is one struct input_event: the time the kernel stamped it, its
// type (EV_*), code and value.
type Event struct {
	Time  time.Time
	Type  uint16
	Code  uint16
	Value int32
}

// String renders an event as "type:code=value" in hex type and code.
func (e Event) String() string { return fmt.Sprintf("%#x:%#x=%d", e.Type, e.Code, e.Value) }

// DecodeEvents appends to dst the events in b, which holds whole
// EventSize records in the host's byte order (what a read of an event
// node or of /dev/uinput returns). Trailing bytes that do not make a
// whole record are an error, since the kernel never returns part of one.
func DecodeEvents(dst []Event, b []byte) ([]Event, error) {
	if len(b)%EventSize != 0 {
		return dst, fmt.Errorf("input events: %d bytes is not a whole number of %d-byte records", len(b), EventSize)
	}
	for ; len(b) > 0; b = b[EventSize:] {
		sec := int64(binary.NativeEndian.Uint64(b[0:]))
		usec := int64(binary.NativeEndian.Uint64(b[8:]))
		dst = append(dst, Event{
			Time:  time.Unix(sec, usec*1000),
			Type:  binary.NativeEndian.Uint16(b[16:]),
			Code:  binary.NativeEndian.Uint16(b[18:]),
			Value: int32(binary.NativeEndian.Uint32(b[20:])),
		})
	}
	return dst, nil
}

// AppendEvent appends the EventSize record of e to b; a zero Time is
// written as zeros. The time of a record written to /dev/uinput or to an
// event node is ignored: the input core stamps an event when it passes
// it on (drivers/input/input.c, input_handle_event).
func AppendEvent(b []byte, e Event) []byte {
	var sec, usec int64
	if !e.Time.IsZero() {
		sec, usec = e.Time.Unix(), int64(e.Time.Nanosecond()/1000)
	}
	b = binary.NativeEndian.AppendUint64(b, uint64(sec))
	b = binary.NativeEndian.AppendUint64(b, uint64(usec))
	b = binary.NativeEndian.AppendUint16(b, e.Type)
	b = binary.NativeEndian.AppendUint16(b, e.Code)
	return binary.NativeEndian.AppendUint32(b, uint32(e.Value))
}
