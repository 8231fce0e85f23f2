// SPDX-License-Identifier: Apache-2.0

package evdev

import (
	"testing"
	"unsafe"
)

// The values were printed by a C program including <linux/input.h> on
// amd64 (Linux 6.1 headers).
func TestABI(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want uintptr
	}{
		{"EVIOCGID", ioctlGetID, 0x80084502},
		{"EVIOCGNAME(256)", ioctlGetName(256), 0x81004506},
		{"EVIOCGPHYS(256)", ioctlGetPhys(256), 0x81004507},
		{"EVIOCGUNIQ(256)", ioctlGetUniq(256), 0x81004508},
		{"EVIOCGPROP(8)", ioctlGetProp(8), 0x80084509},
		{"EVIOCGBIT(0,8)", ioctlGetBit(0, 8), 0x80084520},
		{"EVIOCGBIT(EV_KEY,96)", ioctlGetBit(EvKey, 96), 0x80604521},
		{"EVIOCGABS(0)", ioctlGetAbs(0), 0x80184540},
		{"EVIOCSFF", ioctlSetFF, 0x40304580},
		{"EVIOCRMFF", ioctlRemoveFF, 0x40044581},
		{"EVIOCGEFFECTS", ioctlGetEffects, 0x80044584},
		{"sizeof(struct input_absinfo)", unsafe.Sizeof(AbsInfo{}), 24},
		{"sizeof(struct input_id)", unsafe.Sizeof(inputID{}), 8},
	} {
		if c.got != c.want {
			t.Errorf("%s = %#x, want %#x", c.name, c.got, c.want)
		}
	}
}
