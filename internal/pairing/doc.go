// SPDX-License-Identifier: Apache-2.0

// Package pairing keeps the Bluetooth operator's custom resources
// (bluetooth.liken.sh/v1alpha1, package api/bluetooth/v1alpha1) in step
// with bluetoothd for the one adapter this operator serves:
//
//   - the Adapter of the radio: created without an owner and with a
//     finalizer that refuses its deletion while the radio is present;
//     spec.alias and spec.powered written to Adapter1; status from
//     Adapter1, the node and the kernel;
//   - a Peripheral for every bond BlueZ holds (adopted when no request
//     made it): spec.alias and spec.trusted written to Device1; status
//     with the bond, the battery and the Connected and Ready conditions;
//     its deletion is the unpair (disconnect, wait for claims, retire
//     from the slice, Adapter1.RemoveDevice, release);
//   - the PairingRequests naming the adapter: the window (discoverable,
//     pairable, discovery) while one is Open, the seen list, the approval
//     through spec.device, the agent's prompts, and the end phases.
//
// Everything a pass does follows from what the informers hold and what
// one GetManagedObjects answer said, so a pass after a restart picks up
// where the last one stopped; the only state kept between passes is the
// pairing attempt in flight (a Device1.Pair call) and which devices the
// slice no longer offers.
package pairing
