// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Adapter is one local Bluetooth radio (a BlueZ org.bluez.Adapter1),
// named by its public address in lowercase with dashes
// ("00-1a-7d-da-71-13"), the identity BlueZ files its bonds under. The
// operator that holds the radio creates it with the finalizer
// AdapterFinalizer and refuses its deletion while the radio is present
// (condition Present, reason DeletionRefused), because deleting it would
// unpair every Peripheral it owns.
//
// The schema refuses a name that is no address in that spelling. An
// Adapter a person created whose address no operator's radio has (a
// misspelt address, or a radio not plugged in yet) is marked by the
// operators once it is 10 s old: condition Present False, reason
// NotServed, until the operator of that radio takes it over.
//
// +kubebuilder:validation:XValidation:rule="self.metadata.name.matches('^([0-9a-f]{2}-){5}[0-9a-f]{2}$')",message="an Adapter is named by its radio's address in lowercase with dashes (00-1a-7d-da-71-13)"
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Alias",type=string,JSONPath=`.spec.alias`
// +kubebuilder:printcolumn:name="Address",type=string,JSONPath=`.status.address`
// +kubebuilder:printcolumn:name="Node",type=string,JSONPath=`.status.node`
// +kubebuilder:printcolumn:name="Powered",type=boolean,JSONPath=`.status.powered`
// +kubebuilder:printcolumn:name="Present",type=string,JSONPath=`.status.conditions[?(@.type=="Present")].status`
// +kubebuilder:printcolumn:name="Bonds",type=integer,JSONPath=`.status.bonds`
// +kubebuilder:printcolumn:name="BlueZ",type=string,JSONPath=`.status.bluezVersion`,priority=1
// +kubebuilder:printcolumn:name="Kernel",type=string,JSONPath=`.status.kernelVersion`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Adapter struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +kubebuilder:default={}
	Spec   AdapterSpec   `json:"spec,omitempty"`
	Status AdapterStatus `json:"status,omitempty"`
}

// AdapterList is a list of Adapters.
//
// +kubebuilder:object:root=true
type AdapterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Adapter `json:"items"`
}

// AdapterSpec is what a person asks of a radio. An absent field is left
// as BlueZ has it.
type AdapterSpec struct {
	// Alias is the name the radio shows to devices that scan for it
	// (Adapter1.Alias), at most 248 bytes as the Core specification's
	// local name (Vol 4 Part E 7.3.11). Empty leaves BlueZ's alias alone.
	// The schema counts bytes as BlueZ does (MaxLength counts characters,
	// and "é" is two bytes), and refuses control characters (C0, DEL,
	// C1), which would reach every terminal that lists the alias, and the
	// bidirectional and zero-width formatting characters, which make a
	// name read as another.
	// +kubebuilder:validation:MaxLength=248
	// +kubebuilder:validation:XValidation:rule="size(bytes(self)) <= 248",message="alias is longer than 248 bytes (UTF-8)"
	// +kubebuilder:validation:XValidation:rule="!self.matches('[\\x00-\\x1f\\x7f-\\u009f\\u200b-\\u200f\\u202a-\\u202e\\u2066-\\u2069\\ufeff]')",message="alias holds a control, bidirectional or zero-width character"
	// +optional
	Alias string `json:"alias,omitempty"`
	// Powered switches the radio on or off (Adapter1.Powered). Off stops
	// every connection and every reconnection until it is on again.
	// +optional
	Powered *bool `json:"powered,omitempty"`
}

// AdapterStatus is what the operator observed of the radio.
type AdapterStatus struct {
	// Address is the public address as BlueZ spells it
	// ("00:1A:7D:DA:71:13").
	// +optional
	Address string `json:"address,omitempty"`
	// Node is the Kubernetes node the radio was last seen on.
	// +optional
	Node string `json:"node,omitempty"`
	// Powered, Discoverable, Pairable and Discovering are Adapter1's
	// properties of those names. Discoverable, Pairable and Discovering
	// are true only while a PairingRequest holds a window open.
	// +optional
	Powered bool `json:"powered,omitempty"`
	// +optional
	Discoverable bool `json:"discoverable,omitempty"`
	// +optional
	Pairable bool `json:"pairable,omitempty"`
	// +optional
	Discovering bool `json:"discovering,omitempty"`
	// BluezVersion is bluetoothd's version ("5.66"), from the Device ID
	// bluetoothd puts in the adapter's Modalias.
	// +optional
	BluezVersion string `json:"bluezVersion,omitempty"`
	// KernelVersion is the node's kernel release (uname -r).
	// +optional
	KernelVersion string `json:"kernelVersion,omitempty"`
	// Bonds is how many bonds BlueZ holds for the radio.
	// +optional
	Bonds int32 `json:"bonds,omitempty"`
	// Conditions: Present (the radio is on status.node's bus; False
	// with reason NotServed when no operator has a radio of this
	// address),
	// BondsRestored (its bonds came back from Secrets, or it is a new
	// radio while bonds exist for another one, or while bond Secrets of
	// this node's earlier radio are kept: reason BondsOfPreviousRadio)
	// and PageScan (whether a
	// bonded device that pages the host, as a gamepad's PS button does,
	// is answered).
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// AdapterFinalizer holds an Adapter while its radio is present.
const AdapterFinalizer = "bluetooth.liken.sh/radio-present"

// AdapterLabel is the label, on Peripherals and bond Secrets, whose value
// is the adapter's name.
const AdapterLabel = "bluetooth.liken.sh/adapter"

// Adapter condition types and reasons.
const (
	// ConditionPresent: the radio is registered with bluetoothd on
	// status.node.
	ConditionPresent = "Present"
	// ConditionBondsRestored: the radio's bonds came back from Secrets.
	ConditionBondsRestored = "BondsRestored"

	ReasonPresent         = "Present"
	ReasonAbsent          = "Absent"
	ReasonDeletionRefused = "DeletionRefused"
	// ReasonNotServed: no operator has ever reported this Adapter's
	// radio; set by every operator alike on an Adapter with no
	// status.node. On a Peripheral without the adapter label (made by
	// hand, not by an operator from a bond), the reason of Connected and
	// Ready.
	ReasonNotServed = "NotServed"
	// ReasonRestored: BlueZ holds bonds for this radio.
	ReasonRestored = "Restored"
	// ReasonNoBonds: nothing was ever paired with this radio and nothing
	// with any other.
	ReasonNoBonds = "NoBonds"
	// ReasonNewAdapter: this radio has no bonds while bonds exist for
	// another radio: a new dongle, whose devices must be paired again
	// (a link key belongs to one adapter address).
	ReasonNewAdapter = "NewAdapter"
	// ReasonBondsOfPreviousRadio: this radio has no bonds while bond
	// Secrets are kept for a radio that was last on the same node and
	// is present nowhere now (a replaced dongle, or a controller that
	// takes a new random address at each boot). The message names that
	// radio and both remedies: give this radio the old address, or pair
	// again and delete the old bond Secrets.
	ReasonBondsOfPreviousRadio = "BondsOfPreviousRadio"

	// ConditionPageScan: the kernel answers pages from this radio's
	// bonded devices. True with reason PageScanOn; False with
	// NothingToReconnect (no bonded device is disconnected, so the
	// kernel has no reason to scan) or PageScanOff (a bonded device is
	// disconnected and cannot reconnect), or Unknown with Unreadable
	// when the kernel could not be asked.
	ConditionPageScan = "PageScan"

	ReasonPageScanOn         = "PageScanOn"
	ReasonPageScanOff        = "PageScanOff"
	ReasonNothingToReconnect = "NothingToReconnect"
	ReasonUnreadable         = "Unreadable"
)
