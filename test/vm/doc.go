// SPDX-License-Identifier: Apache-2.0

// Package vm is the host side of the VM test tier: it boots a real Debian
// kernel under qemu and runs the project's kernel-facing tests inside it,
// because the machines the project is built on have no sound card, no
// AF_BLUETOOTH and no /dev/uhid.
//
// The steps, each in its own file:
//
//   - [FetchKernel] resolves the bookworm-backports kernel image package
//     behind the linux-image-amd64 metapackage (old ABI names leave the
//     archive, so the name is looked up every run), downloads it with
//     apt-get, unpacks it and runs depmod, caching the result by package
//     name and version.
//   - [BuildInitramfs] stages busybox, the closure of the wanted modules
//     (decompressed: busybox insmod does not read .ko.xz reliably), host
//     programs with their shared libraries, the guest test binaries and an
//     /init that runs them, and packs it with cpio.
//   - [Boot] runs qemu under timeout(1) with an intel-hda controller and
//     an hda-duplex codec, and a 9p share where the guest writes each test
//     binary's output and exit status.
//   - [Collect] reads that share back: every guest must have left an exit
//     status of 0 and at least one passing test, and no skipped one.
//
// The guest tests themselves are ordinary Go tests behind the vmtier build
// tag, in the packages they test (see [Guests]); package guest holds what
// they share.
package vm
