// SPDX-License-Identifier: Apache-2.0

// Package guest is what the VM tier's guest tests share: loading modules
// with the guest's modprobe, waiting for sysfs and /dev to show a device,
// creating HID devices through /dev/uhid, and starting virtual Bluetooth
// controllers with btvirt. It runs inside the guest that package vm boots
// (a busybox initramfs on a real kernel, no udev), where the tests are
// root; its helpers fail when a device is missing, never skip, because the
// guest is built to have every one.
package guest
