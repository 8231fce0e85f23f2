// SPDX-License-Identifier: Apache-2.0

package relayd

// Node is one virtual device's event node: its name under /dev/input
// ("event7"), its character device number, and the name of the
// controller's input device it stands for ("Wireless Controller
// Touchpad").
type Node struct {
	Name   string `json:"name"`
	Major  uint32 `json:"major"`
	Minor  uint32 `json:"minor"`
	Device string `json:"device"`
}

// ClaimStatus is one claim's virtual devices: the controller's address
// (BlueZ spelling), the nodes in the order of the controller's snapshot,
// and whether every one of them is fed by the controller now (false while
// it sleeps).
type ClaimStatus struct {
	Address  string `json:"address"`
	Nodes    []Node `json:"nodes"`
	Attached bool   `json:"attached"`
}
