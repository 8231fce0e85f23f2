// SPDX-License-Identifier: Apache-2.0

//go:build linux && (amd64 || arm64 || riscv64 || loong64 || s390x)

package alsa

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// This machine has no sound card; these tests run the real backend's
// system calls where they can run: opening, the version ioctl's refusal by
// a node that is not a control node, and the event read path on a pipe.

func TestOpenControlRefusesOtherNodes(t *testing.T) {
	_, err := OpenControl("/dev/null")
	if !errors.Is(err, unix.ENOTTY) || !strings.Contains(err.Error(), "/dev/null is not an ALSA control node") {
		t.Errorf("OpenControl(/dev/null) = %v; want ENOTTY saying it is not a control node", err)
	}
	regular := filepath.Join(t.TempDir(), "controlC0")
	if err := os.WriteFile(regular, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenControl(regular); !errors.Is(err, unix.ENOTTY) {
		t.Errorf("OpenControl(regular file) = %v; want ENOTTY", err)
	}
	if _, err := OpenControl(filepath.Join(t.TempDir(), "controlC9")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("OpenControl(missing) = %v; want ErrNotExist", err)
	}
	if _, err := (DevOpener{Root: t.TempDir()}).Open(3); err == nil || !strings.Contains(err.Error(), "controlC3") {
		t.Errorf("DevOpener.Open(3) = %v; want an error naming controlC3", err)
	}
}

// TestHWEventsOverAPipe drives HWControl's read path with records written
// into a pipe as the kernel writes them: they parse, a blocked read ends
// on Close with os.ErrClosed, and an ioctl on the closed handle says so.
func TestHWEventsOverAPipe(t *testing.T) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	w := os.NewFile(uintptr(p[1]), "pipe-w")
	defer w.Close()
	h, err := newHWControl(os.NewFile(uintptr(p[0]), "pipe-r"), true)
	if err != nil {
		t.Fatal(err)
	}
	want := []Event{
		{Type: EventElem, Mask: EventValue | EventInfo, ID: ELDElemID(7)},
		{Type: EventElem, Mask: EventValue, ID: ElemID{NumID: 44, Iface: IfaceCard, Name: "HDMI/DP,pcm=7 Jack"}},
	}
	want[0].ID.NumID = 49
	var buf []byte
	for _, e := range want {
		buf = appendEvent(buf, e)
	}
	if _, err := w.Write(buf); err != nil {
		t.Fatal(err)
	}
	got, err := h.ReadEvents()
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("ReadEvents = %+v, %v; want %+v", got, err, want)
	}

	done := make(chan error, 1)
	go func() { _, err := h.ReadEvents(); done <- err }()
	time.Sleep(20 * time.Millisecond)
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, os.ErrClosed) {
			t.Errorf("blocked ReadEvents ended with %v; want os.ErrClosed", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Close did not end a blocked ReadEvents")
	}
	if _, err := h.CardInfo(); !errors.Is(err, os.ErrClosed) {
		t.Errorf("CardInfo after Close = %v; want os.ErrClosed", err)
	}
}

// TestHWIoctlsReachTheKernel: on a descriptor that is not a control node
// every call is refused by the kernel with ENOTTY, so each one did issue
// its ioctl (and its error names the request).
func TestHWIoctlsReachTheKernel(t *testing.T) {
	f, err := os.Open("/dev/null")
	if err != nil {
		t.Fatal(err)
	}
	h, err := newHWControl(f, true)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	id := ElemID{NumID: 1}
	for _, tc := range []struct {
		call    string
		request string // the first ioctl the call makes
		do      func() error
	}{
		{"CardInfo", "CARD_INFO", func() error { _, err := h.CardInfo(); return err }},
		{"Elements", "ELEM_LIST", func() error { _, err := h.Elements(); return err }},
		{"ElemInfo", "ELEM_INFO", func() error { _, err := h.ElemInfo(id); return err }},
		{"Read", "ELEM_INFO", func() error { _, err := h.Read(id); return err }},
		{"Write", "ELEM_INFO", func() error { return h.Write(id, Value{Type: TypeBoolean, Ints: []int64{1}}) }},
		{"TLV", "TLV_READ", func() error { _, err := h.TLV(id); return err }},
		{"NextPCMDevice", "PCM_NEXT_DEVICE", func() error { _, err := h.NextPCMDevice(-1); return err }},
		{"PCMInfo", "PCM_INFO", func() error { _, err := h.PCMInfo(0, 0, Playback); return err }},
		{"Subscribe", "SUBSCRIBE_EVENTS", func() error { return h.Subscribe() }},
	} {
		err := tc.do()
		if !errors.Is(err, unix.ENOTTY) || !strings.Contains(err.Error(), tc.request) {
			t.Errorf("%s: %v; want ENOTTY naming %s", tc.call, err, tc.request)
		}
	}
}
