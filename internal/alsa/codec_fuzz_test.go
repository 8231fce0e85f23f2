// SPDX-License-Identifier: Apache-2.0

package alsa

import (
	"reflect"
	"testing"
)

// FuzzDecodeValue: the value union of struct snd_ctl_elem_value
// (include/uapi/sound/asound.h) comes from the kernel, and its type and
// count from the element's info, also the kernel's. Whatever they are,
// decoding never reads past the union, refuses a count the type cannot
// hold, and what it accepts encodes back to a value that decodes equal.
func FuzzDecodeValue(f *testing.F) {
	f.Add(uint8(TypeInteger), 2, []byte{0x9c, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x10})
	f.Add(uint8(TypeEnumerated), 128, []byte{1, 0, 0, 0, 2})
	f.Add(uint8(TypeBytes), 512, []byte("ELD"))
	f.Add(uint8(TypeIEC958), 1, []byte{4})
	f.Add(uint8(TypeInteger64), 65, []byte{})
	f.Add(uint8(99), 1, []byte{})
	f.Fuzz(func(t *testing.T, typ uint8, count int, data []byte) {
		var raw [1024]byte
		copy(raw[:], data)
		et := ElemType(typ)
		v, err := decodeValue(et, count, &raw)
		if err != nil {
			if count >= 0 && count <= et.MaxCount() {
				t.Fatalf("%s with %d values refused: %v", et, count, err)
			}
			return
		}
		if count > et.MaxCount() {
			t.Fatalf("%s with %d values accepted (at most %d)", et, count, et.MaxCount())
		}
		if et.MaxCount() == 0 {
			return
		}
		var again [1024]byte
		if err := encodeValue(v, et, count, &again); err != nil {
			t.Fatalf("decoded %+v does not encode: %v", v, err)
		}
		if w, err := decodeValue(et, count, &again); err != nil || !reflect.DeepEqual(v, w) {
			t.Fatalf("%+v encoded and decoded as %+v, %v", v, w, err)
		}
	})
}
