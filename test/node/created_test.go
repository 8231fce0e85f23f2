// SPDX-License-Identifier: Apache-2.0

package node

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

// TestCreateCharDeviceRecordsAndRestores lays out, below a temporary root,
// a /dev that has an input directory with a node in it already, makes
// stand-in nodes beside it and below a missing bus directory, and
// restores from the saved record alone, as after a killed run: what was
// made is gone, what was there is untouched, and the existing node's path
// is refused without a change.
func TestCreateCharDeviceRecordsAndRestores(t *testing.T) {
	root := t.TempDir()
	dev := filepath.Join(root, "dev")
	input := filepath.Join(dev, "input")
	existing := filepath.Join(input, "event5")
	if err := os.MkdirAll(input, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mknod(existing, unix.S_IFCHR|0o640, int(unix.Mkdev(13, 69))); err != nil {
		t.Fatal(err)
	}
	record := filepath.Join(root, "host.json")
	h := &Host{}

	err := h.CreateCharDevice(record, existing, 13, 69)
	if err == nil || !strings.Contains(err.Error(), existing) {
		t.Fatalf("CreateCharDevice over an existing node: %v, want an error naming %s", err, existing)
	}
	pad := filepath.Join(input, "event6")
	usb := filepath.Join(dev, "bus", "usb", "001", "007")
	if err := h.CreateCharDevice(record, pad, 13, 70); err != nil {
		t.Fatal(err)
	}
	if err := h.CreateCharDevice(record, usb, 189, 6); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Stat(usb, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFCHR || unix.Major(st.Rdev) != 189 || unix.Minor(st.Rdev) != 6 {
		t.Fatalf("%s: %v, mode %#o rdev %d:%d; want a character device 189:6", usb, err, st.Mode, unix.Major(st.Rdev), unix.Minor(st.Rdev))
	}

	// The record alone, as the next run finds it after a killed one.
	saved, err := LoadHost(record)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{pad, filepath.Join(dev, "bus"), filepath.Join(dev, "bus", "usb"), filepath.Join(dev, "bus", "usb", "001"), usb}
	var got []string
	for _, c := range saved.Created {
		got = append(got, c.Path)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("recorded paths (-want +got):\n%s", diff)
	}
	if left := saved.createdLeft(); len(left) != len(want) {
		t.Errorf("before restoring, left = %q; want all %d made paths", left, len(want))
	}
	if err := saved.removeCreated(); err != nil {
		t.Fatal(err)
	}
	if left := saved.createdLeft(); len(left) != 0 {
		t.Errorf("after restoring, left = %q", left)
	}
	entries, err := os.ReadDir(dev)
	if err != nil {
		t.Fatal(err)
	}
	if names := entryNames(entries); !slices.Equal(names, []string{"input"}) {
		t.Errorf("%s holds %q after restoring, want only input", dev, names)
	}
	if err := unix.Stat(existing, &st); err != nil || unix.Major(st.Rdev) != 13 || unix.Minor(st.Rdev) != 69 || st.Mode&0o777 != 0o640 {
		t.Errorf("the node that was there before, %s: %v, mode %#o rdev %d:%d; want it untouched", existing, err, st.Mode, unix.Major(st.Rdev), unix.Minor(st.Rdev))
	}
	if _, err := os.Lstat(pad); !os.IsNotExist(err) {
		t.Errorf("%s still there: %v", pad, err)
	}
}

// TestRemoveCreatedLeavesAReplacedNode checks that a recorded node which
// something else replaced since (another device now has that path) is
// left alone and reported, not removed.
func TestRemoveCreatedLeavesAReplacedNode(t *testing.T) {
	root := t.TempDir()
	record := filepath.Join(root, "host.json")
	path := filepath.Join(root, "event9")
	h := &Host{}
	if err := h.CreateCharDevice(record, path, 13, 73); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mknod(path, unix.S_IFCHR|0o660, int(unix.Mkdev(13, 80))); err != nil {
		t.Fatal(err)
	}
	err := h.removeCreated()
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("removeCreated over a replaced node: %v, want an error naming %s", err, path)
	}
	if _, err := os.Lstat(path); err != nil {
		t.Errorf("the replacing node was removed: %v", err)
	}
}

func entryNames(entries []os.DirEntry) []string {
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}
