// SPDX-License-Identifier: Apache-2.0

package hci_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/liken-sh/operators/internal/hci"
	"github.com/liken-sh/operators/internal/hci/hcitest"
	"github.com/liken-sh/operators/test/fakesys"
)

// recordedSysfs builds testdata/sysfs-three-adapters.txt in a temporary
// directory and returns its root.
func recordedSysfs(t *testing.T, extra ...string) string {
	t.Helper()
	manifest, err := os.ReadFile("testdata/sysfs-three-adapters.txt")
	if err != nil {
		t.Fatal(err)
	}
	manifest = append(manifest, []byte("\n"+strings.Join(extra, "\n")+"\n")...)
	root := filepath.Join(t.TempDir(), "sys")
	if err := fakesys.BuildTree(manifest, root); err != nil {
		t.Fatal(err)
	}
	return root
}

func TestFindAdapterFollowsTheClaimedUSBDevice(t *testing.T) {
	sysfs := recordedSysfs(t)
	for _, tc := range []struct {
		busnum, devnum int
		want           string
		vendor         string
	}{
		// The Realtek: hci3, not the lowest index (hci0, the MediaTek).
		{1, 5, "hci3", "0bda"},
		{3, 2, "hci0", "0e8d"},
	} {
		f, err := hci.FindAdapter(sysfs, hci.USBNode{Busnum: tc.busnum, Devnum: tc.devnum})
		if err != nil {
			t.Fatalf("%03d/%03d: %v", tc.busnum, tc.devnum, err)
		}
		if f.Name != tc.want || f.Index != uint16(tc.want[3]-'0') {
			t.Errorf("%03d/%03d: found %s (index %d), want %s", tc.busnum, tc.devnum, f.Name, f.Index, tc.want)
		}
		vendor, err := os.ReadFile(filepath.Join(f.USBDevice, "idVendor"))
		if err != nil || strings.TrimSpace(string(vendor)) != tc.vendor {
			t.Errorf("%s: USB device %s has idVendor %q, %v; want %s", tc.want, f.USBDevice, vendor, err, tc.vendor)
		}
		if !strings.HasSuffix(f.Path, "/bluetooth/"+tc.want) {
			t.Errorf("%s: path %s", tc.want, f.Path)
		}
	}
}

func TestFindAdapterNoMatch(t *testing.T) {
	sysfs := recordedSysfs(t)
	// 001/003 is the hub and 001/001 the root hub above the Realtek: an
	// adapter belongs to its nearest USB device only. 002/004 is absent.
	for _, n := range []hci.USBNode{{Busnum: 1, Devnum: 3}, {Busnum: 1, Devnum: 1}, {Busnum: 2, Devnum: 4}} {
		_, err := hci.FindAdapter(sysfs, n)
		if !errors.Is(err, hci.ErrNoAdapter) {
			t.Errorf("%s: %v, want ErrNoAdapter", n, err)
		}
	}
	// A machine with no Bluetooth class at all.
	empty := t.TempDir()
	if err := os.Mkdir(filepath.Join(empty, "devices"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := hci.FindAdapter(empty, hci.USBNode{Busnum: 1, Devnum: 5}); !errors.Is(err, hci.ErrNoAdapter) {
		t.Errorf("empty sysfs: %v", err)
	}
}

func TestFindAdapterTwoOnOneDevice(t *testing.T) {
	sysfs := recordedSysfs(t,
		"file devices/pci0000:00/0000:00:14.0/usb1/1-8/1-8.1/1-8.1:1.1/bluetooth/hci4/uevent DEVTYPE=host",
		"link class/bluetooth/hci4 ../../devices/pci0000:00/0000:00:14.0/usb1/1-8/1-8.1/1-8.1:1.1/bluetooth/hci4",
	)
	_, err := hci.FindAdapter(sysfs, hci.USBNode{Busnum: 1, Devnum: 5})
	if err == nil || !strings.Contains(err.Error(), "hci3") || !strings.Contains(err.Error(), "hci4") {
		t.Fatalf("two adapters below one device: %v", err)
	}
}

// A named pipe where a sysfs attribute belongs fails the lookup with an
// error naming it, at once: opening it for reading would wait for a
// writer, and bondfetch with it, past its own bounded wait.
func TestFindAdapterRefusesANamedPipe(t *testing.T) {
	sysfs := recordedSysfs(t)
	devnum := filepath.Join(sysfs, "devices/pci0000:00/0000:00:0d.0/usb3/3-2/devnum")
	if err := os.Remove(devnum); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(devnum, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := hci.FindAdapter(sysfs, hci.USBNode{Busnum: 3, Devnum: 2})
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), devnum+" is a named pipe (FIFO), not a regular file") {
			t.Fatalf("FindAdapter with a pipe for devnum: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("FindAdapter is still waiting on a named pipe after 30 s")
	}
}

func TestClaimedUSBNodes(t *testing.T) {
	dev := t.TempDir()
	if nodes, err := hci.ClaimedUSBNodes(dev); err != nil || len(nodes) != 0 {
		t.Fatalf("no /dev/bus/usb: %v, %v", nodes, err)
	}
	want, err := hcitest.ClaimNode(dev, 1, 5)
	if err != nil {
		t.Fatal(err)
	}
	// Noise that is not a usbfs node.
	for _, p := range []string{"bus/usb/devices", "bus/usb/001/01", "bus/usb/abc/005"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dev, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dev, p), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(dev, "bus/usb/001/006"), 0o755); err != nil {
		t.Fatal(err)
	}
	nodes, err := hci.ClaimedUSBNodes(dev)
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 1 || nodes[0].Path != want || nodes[0].Busnum != 1 || nodes[0].Devnum != 5 || nodes[0].String() != "001/005" {
		t.Fatalf("nodes %+v, want just %s", nodes, want)
	}
}

func TestParseUSBNode(t *testing.T) {
	n, err := hci.ParseUSBNode("/dev/bus/usb/001/005")
	if err != nil || n.Busnum != 1 || n.Devnum != 5 {
		t.Fatalf("%+v, %v", n, err)
	}
	for _, p := range []string{"/dev/bus/usb/1/5", "/dev/bus/usb/001/000", "/dev/usb/001/005", "/dev/bus/usb/001/00x", "005"} {
		if _, err := hci.ParseUSBNode(p); err == nil {
			t.Errorf("%q accepted", p)
		}
	}
}
