// SPDX-License-Identifier: Apache-2.0

package alsa

import (
	"bytes"
	"encoding/binary"
	"unsafe"
)

// The kernel's ALSA control ABI, from include/uapi/sound/asound.h
// (protocol SNDRV_CTL_VERSION 2.0.x). The structures below mirror the C
// layouts field for field; C "long" is Go int64, since the real backend is
// built only for 64-bit Linux (hw.go). abi_test.go checks every size and
// ioctl number against the values measured on a real amd64 kernel in
// the VM tier (hack/vm-test.sh).

// ioctl direction bits of the generic encoding (include/uapi/asm-generic/ioctl.h,
// used by x86 and arm64): dir<<30 | size<<16 | type<<8 | nr.
const (
	iocWrite = 1
	iocRead  = 2
)

func ioc(dir, nr, size uintptr) uintptr { return dir<<30 | size<<16 | uintptr('U')<<8 | nr }

// Control ioctls on /dev/snd/controlC<N> (group 'U').
var (
	ioctlPVersion      = ioc(iocRead, 0x00, 4)                                     // SNDRV_CTL_IOCTL_PVERSION, _IOR int
	ioctlCardInfo      = ioc(iocRead, 0x01, unsafe.Sizeof(ctlCardInfo{}))          // SNDRV_CTL_IOCTL_CARD_INFO
	ioctlElemList      = ioc(iocRead|iocWrite, 0x10, unsafe.Sizeof(ctlElemList{})) // SNDRV_CTL_IOCTL_ELEM_LIST
	ioctlElemInfo      = ioc(iocRead|iocWrite, 0x11, unsafe.Sizeof(ctlElemInfo{})) // SNDRV_CTL_IOCTL_ELEM_INFO
	ioctlElemRead      = ioc(iocRead|iocWrite, 0x12, unsafe.Sizeof(ctlElemValue{}))
	ioctlElemWrite     = ioc(iocRead|iocWrite, 0x13, unsafe.Sizeof(ctlElemValue{}))
	ioctlSubscribe     = ioc(iocRead|iocWrite, 0x16, 4)                       // SNDRV_CTL_IOCTL_SUBSCRIBE_EVENTS, int
	ioctlTLVRead       = ioc(iocRead|iocWrite, 0x1a, unsafe.Sizeof(ctlTLV{})) // SNDRV_CTL_IOCTL_TLV_READ
	ioctlPCMNextDevice = ioc(iocRead, 0x30, 4)                                // SNDRV_CTL_IOCTL_PCM_NEXT_DEVICE, int in and out
	ioctlPCMInfo       = ioc(iocRead|iocWrite, 0x31, unsafe.Sizeof(pcmInfo{}))
)

// Sizes inside the structures.
const (
	ctlEventSize        = 72  // sizeof(struct snd_ctl_event): int type, u32 mask, the 64-byte id
	ctlElemNameMaxLen   = 44  // SNDRV_CTL_ELEM_ID_NAME_MAXLEN, NUL included
	elemValueIntegers   = 128 // long value.integer.value[128]
	elemValueInteger64s = 64  // long long value.integer64.value[64]
	elemValueBytes      = 512 // unsigned char value.bytes.data[512]
)

// IEC958Size is the size in bytes of an IEC958 element's value, struct
// snd_aes_iec958 (include/uapi/sound/asound.h): 24 bytes of channel
// status, 147 of subcode, a pad byte and 4 of digital subframe.
const IEC958Size = 176

// ctlElemID is struct snd_ctl_elem_id (64 bytes).
type ctlElemID struct {
	numid     uint32
	iface     uint32
	device    uint32
	subdevice uint32
	name      [ctlElemNameMaxLen]byte
	index     uint32
}

// ctlCardInfo is struct snd_ctl_card_info (376 bytes).
type ctlCardInfo struct {
	card       int32
	pad        int32
	id         [16]byte
	driver     [16]byte
	name       [32]byte
	longname   [80]byte
	reserved   [16]byte
	mixername  [80]byte
	components [128]byte
}

// ctlElemList is struct snd_ctl_elem_list (80 bytes: 74 plus tail padding
// to the pointer's alignment).
type ctlElemList struct {
	offset   uint32
	space    uint32
	used     uint32
	count    uint32
	pids     *ctlElemID
	reserved [50]byte
}

// ctlElemInfo is struct snd_ctl_elem_info (272 bytes). value is the union
// of integer{min,max,step long}, integer64, enumerated{items, item,
// name[64], names_ptr, names_length} and reserved[128], at offset 80.
type ctlElemInfo struct {
	id       ctlElemID
	typ      uint32
	access   uint32
	count    uint32
	owner    int32
	value    [128]byte
	reserved [64]byte
}

// ctlElemValue is struct snd_ctl_elem_value (1224 bytes). The 4 bytes after
// the id are the obsolete "indirect" bit field; the value union (long[128],
// long long[64], unsigned int[128], bytes[512], snd_aes_iec958) is 8-byte
// aligned at offset 72.
type ctlElemValue struct {
	id       ctlElemID
	indirect uint32
	_        [4]byte
	value    [1024]byte
	reserved [128]byte
}

// ctlTLV is the fixed head of struct snd_ctl_tlv: numid, then the length
// in bytes of the TLV data that follows it.
type ctlTLV struct {
	numid  uint32 //nolint:unused // the kernel's layout; the ioctl reads it through unsafe
	length uint32 //nolint:unused // the kernel's layout; the ioctl reads it through unsafe
}

// pcmInfo is struct snd_pcm_info (288 bytes).
type pcmInfo struct {
	device          uint32
	subdevice       uint32
	stream          int32
	card            int32
	id              [64]byte
	name            [80]byte
	subname         [32]byte
	devClass        int32
	devSubclass     int32
	subdevicesCount uint32
	subdevicesAvail uint32
	sync            [16]byte
	reserved        [64]byte
}

// cString reads a NUL-terminated C string out of a fixed array.
func cString(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

// toID converts a kernel id. The name is read up to its NUL, at most 43
// bytes: the kernel always terminates it within the 44.
func (c *ctlElemID) toID() ElemID {
	return ElemID{NumID: c.numid, Iface: Iface(c.iface), Device: c.device, Subdevice: c.subdevice,
		Name: cString(c.name[:ctlElemNameMaxLen-1]), Index: c.index}
}

func fromID(id ElemID) ctlElemID {
	c := ctlElemID{numid: id.NumID, iface: uint32(id.Iface), device: id.Device, subdevice: id.Subdevice, index: id.Index}
	copy(c.name[:ctlElemNameMaxLen-1], id.Name)
	return c
}

// decodeID reads a 64-byte snd_ctl_elem_id from raw bytes (events).
func decodeID(b []byte) ElemID {
	var c ctlElemID
	c.numid = binary.NativeEndian.Uint32(b[0:])
	c.iface = binary.NativeEndian.Uint32(b[4:])
	c.device = binary.NativeEndian.Uint32(b[8:])
	c.subdevice = binary.NativeEndian.Uint32(b[12:])
	copy(c.name[:], b[16:60])
	c.index = binary.NativeEndian.Uint32(b[60:])
	return c.toID()
}
