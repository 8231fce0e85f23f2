// SPDX-License-Identifier: Apache-2.0

// Package hid finds the Bluetooth HID devices the kernel knows and their
// evdev nodes, by reading sysfs, and tells which kernel uevents concern them.
//
// Every HID device, whatever transport created it, is registered on the HID
// bus and listed in /sys/bus/hid/devices under the name
// "BBBB:VVVV:PPPP.NNNN" (bus, vendor, product, instance; hid_add_device in
// drivers/hid/hid-core.c). Bus 0005 is BUS_BLUETOOTH
// (include/uapi/linux/input.h). Its uevent file carries HID_ID, HID_NAME,
// HID_PHYS (for Bluetooth: the local adapter's address) and HID_UNIQ (the
// peer device's address).
//
// The device's parent is not a reliable sign of Bluetooth: the kernel's own
// HIDP puts it under the adapter's hci connection, but BlueZ's userspace HID
// (uhid, used for HID over GATT and, since BlueZ 5.73, by default for classic
// HID) puts it under /sys/devices/virtual/misc/uhid/. So this package decides
// by bus type and never by ancestry.
//
// Each evdev node is returned with its device number (Node), read with
// its name: a node is handed to containers by number, because its path
// names whichever input device holds the number when the path is looked
// up, and evdev hands a freed number to the next device that registers.
//
// Discover reads sysfs once and returns a Scan; Tracker turns each uevent
// (from package uevent) into "rescan, and which device", remembering where
// each device lived because its sysfs directory is gone when its removal is
// announced.
//
// Addresses are returned in BlueZ's spelling: six upper-case hex octets
// separated by colons, e.g. "E4:17:D8:C5:67:6D".
package hid
