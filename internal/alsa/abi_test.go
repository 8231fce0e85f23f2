// SPDX-License-Identifier: Apache-2.0

//go:build amd64 || arm64 || riscv64 || loong64 || s390x

package alsa

import (
	"testing"
	"unsafe"
)

// TestABISizes: every structure has the size the 64-bit kernel has, and
// the fields the code reads by offset sit where the kernel puts them.
// Sizes from include/uapi/sound/asound.h on amd64, as measured on real
// kernels 6.1 and 6.12 and asserted by the reference.
func TestABISizes(t *testing.T) {
	for _, tc := range []struct {
		name      string
		got, want uintptr
	}{
		{"snd_ctl_elem_id", unsafe.Sizeof(ctlElemID{}), 64},
		{"snd_ctl_card_info", unsafe.Sizeof(ctlCardInfo{}), 376},
		{"snd_ctl_elem_list", unsafe.Sizeof(ctlElemList{}), 80},
		{"snd_ctl_elem_list.pids", unsafe.Offsetof(ctlElemList{}.pids), 16},
		{"snd_ctl_elem_info", unsafe.Sizeof(ctlElemInfo{}), 272},
		{"snd_ctl_elem_info.value", unsafe.Offsetof(ctlElemInfo{}.value), 80},
		{"snd_ctl_elem_value", unsafe.Sizeof(ctlElemValue{}), 1224},
		{"snd_ctl_elem_value.value", unsafe.Offsetof(ctlElemValue{}.value), 72},
		{"snd_ctl_tlv head", unsafe.Sizeof(ctlTLV{}), 8},
		{"snd_pcm_info", unsafe.Sizeof(pcmInfo{}), 288},
		{"snd_pcm_info.id", unsafe.Offsetof(pcmInfo{}.id), 16},
		{"snd_pcm_info.subdevices_count", unsafe.Offsetof(pcmInfo{}.subdevicesCount), 200},
		{"snd_ctl_card_info.components", unsafe.Offsetof(ctlCardInfo{}.components), 248},
		{"snd_ctl_elem_id.index", unsafe.Offsetof(ctlElemID{}.index), 60},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, tc.got, tc.want)
		}
	}
}

// TestIoctlNumbers: the request numbers, built from the sizes, are the
// kernel's, as measured on a real amd64 kernel in the VM tier
// (hack/vm-test.sh).
func TestIoctlNumbers(t *testing.T) {
	for _, tc := range []struct {
		name      string
		got, want uintptr
	}{
		{"PVERSION", ioctlPVersion, 0x80045500},
		{"CARD_INFO", ioctlCardInfo, 0x81785501},
		{"ELEM_LIST", ioctlElemList, 0xc0505510},
		{"ELEM_INFO", ioctlElemInfo, 0xc1105511},
		{"ELEM_READ", ioctlElemRead, 0xc4c85512},
		{"ELEM_WRITE", ioctlElemWrite, 0xc4c85513},
		{"SUBSCRIBE_EVENTS", ioctlSubscribe, 0xc0045516},
		{"TLV_READ", ioctlTLVRead, 0xc008551a},
		{"PCM_NEXT_DEVICE", ioctlPCMNextDevice, 0x80045530},
		{"PCM_INFO", ioctlPCMInfo, 0xc1205531},
	} {
		if tc.got != tc.want {
			t.Errorf("SNDRV_CTL_IOCTL_%s = %#x, want %#x", tc.name, tc.got, tc.want)
		}
	}
}

// TestEventRecordSize: struct snd_ctl_event is int type plus the union of
// {unsigned int mask; snd_ctl_elem_id id} (68 bytes) and data8[60]: 72.
func TestEventRecordSize(t *testing.T) {
	type ctlEvent struct {
		typ  int32  //nolint:unused // the kernel's layout, measured with unsafe.Sizeof
		mask uint32 //nolint:unused // the kernel's layout, measured with unsafe.Sizeof
		id   ctlElemID
	}
	if unsafe.Sizeof(ctlEvent{}) != ctlEventSize || unsafe.Offsetof(ctlEvent{}.id) != 8 {
		t.Fatalf("event record %d bytes, id at %d; want %d and 8", unsafe.Sizeof(ctlEvent{}), unsafe.Offsetof(ctlEvent{}.id), ctlEventSize)
	}
}
