// SPDX-License-Identifier: Apache-2.0

// Package hci finds the Bluetooth adapter this pod claimed and reads its
// address from the kernel.
//
// The claim on the adapter delivers one thing into the container: the
// adapter's usbfs node, /dev/bus/usb/BBB/DDD.
// [ClaimedUSBNodes] reads it from the container's /dev, [FindAdapter]
// follows sysfs from that USB device to the hciN the kernel registered
// below it, and [Socket.DevInfo] asks the kernel for that hciN's address over
// an AF_BLUETOOTH socket with the HCIGETDEVINFO ioctl. [Resolver] ties the
// three together and waits, bounded, while a freshly enumerated adapter
// still reports the all-zero address.
//
// The socket needs no capability and no root; it needs the host's network
// namespace, because AF_BLUETOOTH sockets exist only there (a pod's own
// namespace answers EAFNOSUPPORT). The kernel calls sit behind the
// [Kernel] interface so that tests run on a recorded sysfs tree and a
// scripted kernel, and the VM tier runs the real [Socket].
package hci
