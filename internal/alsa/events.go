// SPDX-License-Identifier: Apache-2.0

package alsa

import (
	"encoding/binary"
	"fmt"
)

// ParseEvents decodes the records a read() on a subscribed control node
// returns: struct snd_ctl_event, 72 bytes each (int type; unsigned int
// mask; the 64-byte element id), host byte order. A buffer that is not a
// whole number of records is an error naming its length.
func ParseEvents(buf []byte) ([]Event, error) {
	if len(buf)%ctlEventSize != 0 {
		return nil, fmt.Errorf("control events: %d bytes is not a multiple of the %d-byte record", len(buf), ctlEventSize)
	}
	out := make([]Event, 0, len(buf)/ctlEventSize)
	for off := 0; off < len(buf); off += ctlEventSize {
		r := buf[off : off+ctlEventSize]
		out = append(out, Event{
			Type: int32(binary.NativeEndian.Uint32(r[0:])),
			Mask: EventMask(binary.NativeEndian.Uint32(r[4:])),
			ID:   decodeID(r[8:72]),
		})
	}
	return out, nil
}

// appendEvent encodes e as the kernel does; the recorded backend and tests
// use it.
func appendEvent(buf []byte, e Event) []byte {
	var r [ctlEventSize]byte
	binary.NativeEndian.PutUint32(r[0:], uint32(e.Type))
	binary.NativeEndian.PutUint32(r[4:], uint32(e.Mask))
	id := fromID(e.ID)
	binary.NativeEndian.PutUint32(r[8:], id.numid)
	binary.NativeEndian.PutUint32(r[12:], id.iface)
	binary.NativeEndian.PutUint32(r[16:], id.device)
	binary.NativeEndian.PutUint32(r[20:], id.subdevice)
	copy(r[24:68], id.name[:])
	binary.NativeEndian.PutUint32(r[68:], id.index)
	return append(buf, r[:]...)
}
