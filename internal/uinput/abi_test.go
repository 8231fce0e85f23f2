// SPDX-License-Identifier: Apache-2.0

package uinput

import (
	"testing"

	"github.com/liken-sh/operators/internal/evdev"
)

// The values were printed by a C program including <linux/uinput.h> on
// amd64 (Linux 6.1 headers).
func TestABI(t *testing.T) {
	bit := func(typ uint16, prop bool) uintptr { r, _ := ioctlSetBit(typ, prop); return r }
	for _, c := range []struct {
		name      string
		got, want uintptr
	}{
		{"UI_DEV_CREATE", ioctlDevCreate, 0x5501},
		{"UI_DEV_DESTROY", ioctlDevDestroy, 0x5502},
		{"UI_DEV_SETUP", ioctlDevSetup, 0x405c5503},
		{"UI_ABS_SETUP", ioctlAbsSetup, 0x401c5504},
		{"UI_SET_EVBIT", ioctlSetEvBit, 0x40045564},
		{"UI_SET_KEYBIT", bit(evdev.EvKey, false), 0x40045565},
		{"UI_SET_RELBIT", bit(evdev.EvRel, false), 0x40045566},
		{"UI_SET_ABSBIT", bit(evdev.EvAbs, false), 0x40045567},
		{"UI_SET_MSCBIT", bit(evdev.EvMsc, false), 0x40045568},
		{"UI_SET_LEDBIT", bit(evdev.EvLed, false), 0x40045569},
		{"UI_SET_SNDBIT", bit(evdev.EvSnd, false), 0x4004556a},
		{"UI_SET_FFBIT", bit(evdev.EvFF, false), 0x4004556b},
		{"UI_SET_SWBIT", bit(evdev.EvSw, false), 0x4004556d},
		{"UI_SET_PROPBIT", bit(0, true), 0x4004556e},
		{"UI_SET_PHYS", ioctlSetPhys, 0x4008556c},
		{"UI_GET_SYSNAME(64)", ioctlGetSysName, 0x8040552c},
		{"UI_GET_VERSION", ioctlGetVersion, 0x8004552d},
		{"UI_BEGIN_FF_UPLOAD", ioctlBeginFFUpload, 0xc06855c8},
		{"UI_END_FF_UPLOAD", ioctlEndFFUpload, 0x406855c9},
		{"UI_BEGIN_FF_ERASE", ioctlBeginFFErase, 0xc00c55ca},
		{"UI_END_FF_ERASE", ioctlEndFFErase, 0x400c55cb},
	} {
		if c.got != c.want {
			t.Errorf("%s = %#x, want %#x", c.name, c.got, c.want)
		}
	}
}
