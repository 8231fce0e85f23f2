// SPDX-License-Identifier: Apache-2.0

package hci

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/liken-sh/operators/internal/bdaddr"
)

// The layout of struct hci_dev_info, from the kernel's
// include/net/bluetooth/hci_sock.h. All fields are naturally aligned, so
// the layout is the same on every architecture Linux runs Bluetooth on:
//
//	offset size field
//	     0    2 dev_id (u16, host order)
//	     2    8 name (NUL-padded, "hci0")
//	    10    6 bdaddr (bdaddr_t, least significant octet first)
//	    16    4 flags (u32, bit numbers from enum in hci.h: 0 HCI_UP, 1 HCI_INIT, 2 HCI_RUNNING)
//	    20    1 type (low nibble the bus, bits 4-5 the device type)
//	    21    8 features
//	    32    4 pkt_type (after 3 bytes of padding)
//	    36    4 link_policy
//	    40    4 link_mode
//	    44    8 acl_mtu, acl_pkts, sco_mtu, sco_pkts (u16 each)
//	    52   40 struct hci_dev_stats (ten u32 counters)
//
// 92 bytes in all. The kernel's hci_get_dev_info copies the whole
// structure in and out, whatever size the ioctl number encodes.
const (
	DevInfoSize = 92

	offDevID  = 0
	offName   = 2
	nameLen   = 8
	offBdaddr = 10
	offFlags  = 16
	offType   = 20
	flagUp    = 1 << 0 // HCI_UP
	flagPScan = 1 << 3 // HCI_PSCAN
	flagIScan = 1 << 4 // HCI_ISCAN
)

// DevInfo is what this package reads of the kernel's struct hci_dev_info
// for one adapter.
type DevInfo struct {
	// ID is the adapter's index, the N of hciN.
	ID uint16
	// Name is the kernel's name for it, "hciN".
	Name string
	// Address is the adapter's public address, or zero while the kernel
	// has not read it from the controller yet.
	Address bdaddr.Address
	// Flags is the bit set of the kernel's HCI device flags (HCI_UP = bit
	// 0, HCI_INIT = 1, HCI_RUNNING = 2, ...).
	Flags uint32
	// Type packs the bus in its low nibble (0 virtual, 1 USB, 3 UART, 5
	// PCI, 6 SDIO, ... as HCI_VIRTUAL.. in hci.h) and the device type in
	// bits 4-5 (0 primary).
	Type uint8
}

// Up reports the HCI_UP flag: the kernel has opened the adapter.
func (d DevInfo) Up() bool { return d.Flags&flagUp != 0 }

// PageScan reports the HCI_PSCAN flag: the controller answers pages, so a
// device that knows the adapter's address can connect to it. The kernel
// sets the flag when a Write Scan Enable it sent completes
// (net/bluetooth/hci_event.c, hci_cc_write_scan_enable), whichever way it
// decided to scan: the management interface's Connectable setting, or a
// disconnected device on its accept list (hci_sync.c,
// hci_update_scan_sync).
func (d DevInfo) PageScan() bool { return d.Flags&flagPScan != 0 }

// InquiryScan reports the HCI_ISCAN flag: the controller answers
// inquiries, i.e. it is discoverable.
func (d DevInfo) InquiryScan() bool { return d.Flags&flagIScan != 0 }

// Bus returns the bus number of the Type field (1 means USB).
func (d DevInfo) Bus() uint8 { return d.Type & 0x0f }

// ParseDevInfo decodes a struct hci_dev_info as the kernel filled it in,
// with the host's byte order for the integer fields (little-endian on
// every architecture this project builds for). It returns an error if b is
// shorter than DevInfoSize or the name is not NUL-terminated text.
func ParseDevInfo(b []byte) (DevInfo, error) {
	if len(b) < DevInfoSize {
		return DevInfo{}, fmt.Errorf("hci_dev_info: %d bytes, want %d", len(b), DevInfoSize)
	}
	name := b[offName : offName+nameLen]
	if i := bytes.IndexByte(name, 0); i >= 0 {
		name = name[:i]
	}
	for _, c := range name {
		if c < 0x21 || c > 0x7e {
			return DevInfo{}, fmt.Errorf("hci_dev_info: name %q is not printable", name)
		}
	}
	return DevInfo{
		ID:      binary.NativeEndian.Uint16(b[offDevID:]),
		Name:    string(name),
		Address: bdaddr.FromKernel([6]byte(b[offBdaddr : offBdaddr+6])),
		Flags:   binary.NativeEndian.Uint32(b[offFlags:]),
		Type:    b[offType],
	}, nil
}
