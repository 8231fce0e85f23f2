// SPDX-License-Identifier: Apache-2.0

// Package bluetoothcli is `kubectl liken bluetooth`: pair a device
// through a PairingRequest (a live table of the devices that answer, the
// pick, passkey and PIN prompts, the wait until Paired), list Adapters and
// Peripherals, unpair a Peripheral. Everything it does is an API call a
// person's own kubeconfig makes; nothing reaches a node.
package bluetoothcli
