// SPDX-License-Identifier: Apache-2.0

//go:build vmtier

package alsa

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"testing"
	"unsafe"

	"github.com/liken-sh/operators/test/vm/guest"
)

// The VM tier: channel maps on a real kernel. qemu's HDA codec (driven by
// snd-hda-codec-generic, card 2) has the standard read-only map of
// sound/core/pcm_lib.c, which SetChannelMap refuses as fixed after
// reading its TLV; a writable map with a paired TLV (a user element the
// test adds to snd-dummy's card through SNDRV_CTL_IOCTL_ELEM_ADD, as the
// HDA HDMI driver's element is on real hardware) takes a map with a pair
// swapped, reads it back, and refuses one its TLV does not offer.
func TestVMChannelMap(t *testing.T) {
	if err := guest.LoadSoundCards(); err != nil {
		t.Fatal(err)
	}
	hda, err := OpenControl("/dev/snd/controlC2")
	if err != nil {
		t.Fatal(err)
	}
	defer hda.Close()
	w, err := SetChannelMap(hda, 0, 0, Playback, []string{"FR", "FL"})
	if !errors.Is(err, ErrChannelMapFixed) || w.Wrote {
		t.Errorf("the generic codec's map: %+v, %v; want it refused as fixed", w, err)
	}
	if !slices.ContainsFunc(w.Offered, func(o OfferedChannelMap) bool {
		return o.Kind == ChannelMapFixed && slices.Equal(o.Positions, []uint32{3, 4})
	}) {
		t.Errorf("the generic codec's TLV offers %+v, want the fixed FL,FR", w.Offered)
	}
	t.Logf("HDA generic: %v; offered %+v", err, w.Offered)

	dummy, err := OpenControl("/dev/snd/controlC0")
	if err != nil {
		t.Fatal(err)
	}
	defer dummy.Close()
	id := ChannelMapElemID(0, 0, Playback)
	if err := addUserChannelMap(dummy, id, 8, []uint32{0, 32, 0x103, 24, 3, 4, 5, 6, 7, 8}); err != nil {
		t.Fatal(err)
	}
	// The card goes back to its own elements for the other tests.
	defer func() {
		rm := fromID(id)
		if err := dummy.ioctl(ioc(iocRead|iocWrite, 0x19, unsafe.Sizeof(rm)), unsafe.Pointer(&rm)); err != nil {
			t.Errorf("ELEM_REMOVE %s: %v", id, err)
		}
	}()
	w, err = SetChannelMap(dummy, 0, 0, Playback, []string{"FL", "FR", "RR", "RL", "FC", "LFE"})
	if err != nil || !w.Wrote || SpellChannelMap(w.After) != "FL,FR,RR,RL,FC,LFE,?,?" {
		t.Errorf("a writable paired map: %+v, %v", w, err)
	}
	before := w.After
	w, err = SetChannelMap(dummy, 0, 0, Playback, []string{"FL", "FR", "FC", "LFE", "RL", "RR"})
	if !errors.Is(err, ErrChannelMapNotOffered) || w.Wrote || !slices.Equal(w.After, before) {
		t.Errorf("a map not offered: %+v, %v", w, err)
	}
}

// addUserChannelMap adds a user element named id (INTEGER, count values of
// 0..36, read-write with a writable TLV) and writes tlv into it
// (SNDRV_CTL_IOCTL_ELEM_ADD, SNDRV_CTL_IOCTL_TLV_WRITE; sound/core/control.c).
func addUserChannelMap(h *HWControl, id ElemID, count int, tlv []uint32) error {
	info := ctlElemInfo{id: fromID(id), typ: uint32(TypeInteger), count: uint32(count),
		access: uint32(AccessRead | AccessWrite | AccessTLVRead | AccessTLVWrite)}
	binary.NativeEndian.PutUint64(info.value[8:], 36) // max; min and step 0
	elemAdd := ioc(iocRead|iocWrite, 0x17, unsafe.Sizeof(ctlElemInfo{}))
	if err := h.ioctl(elemAdd, unsafe.Pointer(&info)); err != nil {
		return fmt.Errorf("ELEM_ADD %s: %w", id, err)
	}
	got, err := h.ElemInfo(id)
	if err != nil {
		return err
	}
	buf := make([]byte, 8+4*len(tlv))
	binary.NativeEndian.PutUint32(buf[0:], got.ID.NumID)
	binary.NativeEndian.PutUint32(buf[4:], uint32(4*len(tlv)))
	for i, w := range tlv {
		binary.NativeEndian.PutUint32(buf[8+4*i:], w)
	}
	tlvWrite := ioc(iocRead|iocWrite, 0x1b, unsafe.Sizeof(ctlTLV{}))
	if err := h.ioctl(tlvWrite, unsafe.Pointer(&buf[0])); err != nil {
		return fmt.Errorf("TLV_WRITE %s: %w", id, err)
	}
	return nil
}
