// SPDX-License-Identifier: Apache-2.0

// Package bonds moves Bluetooth bonds between BlueZ's storage tree and
// Kubernetes Secrets, one Secret per bond.
//
// BlueZ keeps a bond as two files under its storage directory
// (/var/lib/bluetooth), both GLib key files (BlueZ's doc/settings-storage.txt):
//
//	<ADAPTER>/<DEVICE>/info   the bond: link key or LE keys, name, class, services
//	<ADAPTER>/cache/<DEVICE>  what BlueZ learnt from the device: SDP records, GATT
//
// where <ADAPTER> and <DEVICE> are addresses in BlueZ's spelling. The
// bluetoothd pod keeps that tree in an emptyDir; the Secrets are what
// outlives the pod, labelled with the adapter's address so that the bonds
// follow the radio to whichever node it moves to.
//
// Two programs use this package. bondfetch, the init container, calls
// [Fetch] and [WriteTree] to restore the tree before bluetoothd starts. The
// operator calls [ReadTree] and [Sync] after its settle window to write
// each new or changed bond back. Both take their Secret client as an
// interface ([SecretLister], [SecretClient]) that client-go's typed
// clients serve, so the package imports no clientset and bondfetch links
// only the REST client [NewSecretLister] makes. Secret contents are untrusted: every path
// written is built from a parsed address, never from a Secret's key, and
// every value is checked ([ParseInfo], [ParseKeyFile], the size limits)
// before it reaches the disk.
package bonds
