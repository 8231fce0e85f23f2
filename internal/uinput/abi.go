// SPDX-License-Identifier: Apache-2.0

package uinput

import "github.com/liken-sh/operators/internal/evdev"

// The uinput ABI, from include/uapi/linux/uinput.h. abi_test.go checks the
// sizes and ioctl numbers against values measured from the kernel headers
// on amd64.

const (
	iocWrite = 1
	iocRead  = 2
)

// ioc encodes an ioctl number of group 'U': dir<<30 | size<<16 | 'U'<<8 | nr.
func ioc(dir, nr, size uintptr) uintptr { return dir<<30 | size<<16 | uintptr('U')<<8 | nr }

// Sizes of the structures the ioctls pass.
const (
	setupSize    = 92                       // struct uinput_setup: input_id, name[80], __u32 ff_effects_max
	absSetupSize = 28                       // struct uinput_abs_setup: __u16 code, padding, input_absinfo
	ffUploadSize = 8 + 2*evdev.FFEffectSize // struct uinput_ff_upload: request_id, retval, effect, old
	ffEraseSize  = 12                       // struct uinput_ff_erase: request_id, retval, effect_id
	nameSize     = evdev.NameMax + 1        // UINPUT_MAX_NAME_SIZE
	sysNameSize  = 64                       // the buffer UI_GET_SYSNAME fills
)

var (
	ioctlDevCreate     = ioc(0, 1, 0)                             // UI_DEV_CREATE
	ioctlDevDestroy    = ioc(0, 2, 0)                             // UI_DEV_DESTROY
	ioctlDevSetup      = ioc(iocWrite, 3, setupSize)              // UI_DEV_SETUP
	ioctlAbsSetup      = ioc(iocWrite, 4, absSetupSize)           // UI_ABS_SETUP
	ioctlSetPhys       = ioc(iocWrite, 108, 8)                    // UI_SET_PHYS, a char pointer
	ioctlGetSysName    = ioc(iocRead, 44, sysNameSize)            // UI_GET_SYSNAME(64)
	ioctlGetVersion    = ioc(iocRead, 45, 4)                      // UI_GET_VERSION
	ioctlBeginFFUpload = ioc(iocRead|iocWrite, 200, ffUploadSize) // UI_BEGIN_FF_UPLOAD
	ioctlEndFFUpload   = ioc(iocWrite, 201, ffUploadSize)         // UI_END_FF_UPLOAD
	ioctlBeginFFErase  = ioc(iocRead|iocWrite, 202, ffEraseSize)  // UI_BEGIN_FF_ERASE
	ioctlEndFFErase    = ioc(iocWrite, 203, ffEraseSize)          // UI_END_FF_ERASE
)

// ioctlSetBit returns UI_SET_EVBIT, UI_SET_KEYBIT ... for event type typ
// (and UI_SET_PROPBIT for prop true): _IOW('U', nr, int).
func ioctlSetBit(typ uint16, prop bool) (uintptr, bool) {
	nr := map[uint16]uintptr{
		evdev.EvKey: 101, evdev.EvRel: 102, evdev.EvAbs: 103, evdev.EvMsc: 104,
		evdev.EvLed: 105, evdev.EvSnd: 106, evdev.EvFF: 107, evdev.EvSw: 109,
	}
	if prop {
		return ioc(iocWrite, 110, 4), true
	}
	n, ok := nr[typ]
	if !ok {
		return 0, false
	}
	return ioc(iocWrite, n, 4), true
}

// ioctlSetEvBit is UI_SET_EVBIT.
var ioctlSetEvBit = ioc(iocWrite, 100, 4)

// Requests a uinput device's reader sends back (EV_UINPUT, with code
// UI_FF_UPLOAD or UI_FF_ERASE and the request id as value).
const (
	evUinput   = 0x0101
	uiFFUpload = 1
	uiFFErase  = 2
)

// minVersion is the uinput protocol version that has UI_DEV_SETUP and
// UI_ABS_SETUP (Linux 4.5).
const minVersion = 5
