// SPDX-License-Identifier: Apache-2.0

// Package uevent receives the kernel's device events (uevents) from a
// NETLINK_KOBJECT_UEVENT socket and parses them.
//
// The kernel broadcasts every uevent on multicast group 1 of that netlink
// family (KernelGroup). udev, where it runs, re-broadcasts its own processed
// copy on group 2 in libudev's binary format; a node without udev (a
// container, liken's host) has nothing on group 2, so this package listens
// on group 1 only and rejects libudev datagrams.
//
// Binding group 1 needs no capability: the kernel creates the uevent netlink
// family with NL_CFG_F_NONROOT_RECV (lib/kobject_uevent.c). It does need the
// initial user namespace, because the kernel sends untagged uevents only to
// sockets of network namespaces owned by it; in a pod that is hostUsers: true.
// Outside it the socket binds and stays silent; InInitialUserNamespace lets
// the caller say so.
//
// Events are wake-ups: the kernel drops broadcasts when a socket's receive
// queue is full and tells the reader once with ENOBUFS. Listener reports that
// as ErrOverflow, after which the caller must rescan whatever it tracks.
package uevent
