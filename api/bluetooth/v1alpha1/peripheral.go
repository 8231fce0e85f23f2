// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Peripheral is one bond: a remote device paired with an Adapter, named
// like the DRA device the operator publishes for it (the peer's address
// in lowercase with dashes). It is owned by its Adapter and carries the
// finalizer PeripheralFinalizer: deleting it unpairs the device
// (disconnect, wait for claims to let go, retire it from the slice,
// remove it from BlueZ) and then garbage collection removes the bond's
// Secret. One a person creates, without the adapter label the operator
// puts on its own, is served by no operator: its Connected and Ready
// conditions are False with reason NotServed.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Device Name",type=string,JSONPath=`.status.name`
// +kubebuilder:printcolumn:name="Address",type=string,JSONPath=`.status.address`
// +kubebuilder:printcolumn:name="Adapter",type=string,JSONPath=`.status.adapter`
// +kubebuilder:printcolumn:name="Node",type=string,JSONPath=`.status.node`
// +kubebuilder:printcolumn:name="Connected",type=string,JSONPath=`.status.conditions[?(@.type=="Connected")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Connected")].reason`,priority=1
// +kubebuilder:printcolumn:name="Battery",type=integer,JSONPath=`.status.battery.percentage`
// +kubebuilder:printcolumn:name="Claim",type=string,JSONPath=`.status.claim.name`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Peripheral struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +kubebuilder:default={}
	Spec   PeripheralSpec   `json:"spec,omitempty"`
	Status PeripheralStatus `json:"status,omitempty"`
}

// PeripheralList is a list of Peripherals.
//
// +kubebuilder:object:root=true
type PeripheralList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Peripheral `json:"items"`
}

// PeripheralSpec is what a person asks of a bonded device.
type PeripheralSpec struct {
	// Alias is the name BlueZ shows for the device (Device1.Alias), and
	// so status.name and the name attribute of the device in the
	// ResourceSlice; it is stored with the bond, so it travels with the
	// Secret. Empty leaves BlueZ's alias alone.
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
	// Trusted is Device1.Trusted. Without trust BlueZ asks an agent to
	// authorise every reconnection, and outside a pairing window there is
	// none, so an untrusted device never reconnects.
	// +kubebuilder:default=true
	// +optional
	Trusted *bool `json:"trusted,omitempty"`
}

// PeripheralStatus is what the operator observed of the device.
type PeripheralStatus struct {
	// Address is the peer address as BlueZ spells it ("E4:17:D8:C5:67:6D").
	// +optional
	Address string `json:"address,omitempty"`
	// Name is the name BlueZ shows for the device (Device1.Alias):
	// spec.alias once BlueZ took it, else the name the device reported
	// (Device1.Name), cut to 248 bytes; absent when it reported none.
	// The device's name attribute in the ResourceSlice is the same name,
	// cut to 64 bytes.
	// +kubebuilder:validation:MaxLength=248
	// +optional
	Name string `json:"name,omitempty"`
	// Icon is BlueZ's freedesktop icon name ("input-gaming").
	// +optional
	Icon string `json:"icon,omitempty"`
	// Adapter is the name of the Adapter the bond belongs to.
	// +optional
	Adapter string `json:"adapter,omitempty"`
	// Node is the node the adapter was last seen on.
	// +optional
	Node string `json:"node,omitempty"`
	// Bond describes the stored keys.
	// +optional
	Bond *Bond `json:"bond,omitempty"`
	// Battery is the device's charge, when it reports one.
	// +optional
	Battery *Battery `json:"battery,omitempty"`
	// Claim is the ResourceClaim prepared for the device on its node, if
	// one is.
	// +optional
	Claim *ClaimReference `json:"claim,omitempty"`
	// Conditions: Connected and Ready; on a Peripheral no operator made,
	// both False with reason NotServed. A speaker also has EndpointCache:
	// whether BlueZ's cache of its A2DP stream endpoints agrees with the
	// ones it offers (False, Stale, until the operator clears the cache
	// at its next disconnection: True, Cleared), and, while connected,
	// A2DP: whether its A2DP channel is up (False, NoA2DP, while the
	// operator repairs it).
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Bond is where a bond's keys are kept.
type Bond struct {
	// Held is true while BlueZ holds the bond (the device is Paired).
	Held bool `json:"held"`
	// Secret is the Secret the keys are written back to, namespace/name.
	// +optional
	Secret string `json:"secret,omitempty"`
	// PairedAt is when the operator first saw the bond: the pairing, or
	// the adoption of a bond BlueZ already held.
	// +optional
	PairedAt *metav1.Time `json:"pairedAt,omitempty"`
	// Request is the PairingRequest that made the bond, namespace/name;
	// empty for an adopted bond.
	// +optional
	Request string `json:"request,omitempty"`
}

// Battery is a device's charge.
type Battery struct {
	// Percentage is 0 to 100.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	Percentage *int32 `json:"percentage,omitempty"`
	// Charging is true while the device charges; absent when the source
	// does not say.
	// +optional
	Charging *bool `json:"charging,omitempty"`
	// Source says who reported it: Kernel (the power_supply class device
	// the HID driver registers) or BlueZ (org.bluez.Battery1).
	// +kubebuilder:validation:Enum=Kernel;BlueZ
	// +optional
	Source string `json:"source,omitempty"`
}

// ClaimReference names a ResourceClaim.
type ClaimReference struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// PeripheralFinalizer holds a Peripheral until its device is unpaired.
const PeripheralFinalizer = "bluetooth.liken.sh/unpair"

// Battery sources.
const (
	BatteryFromKernel = "Kernel"
	BatteryFromBlueZ  = "BlueZ"
)

// Peripheral condition types and reasons.
const (
	// ConditionConnected: the device's link is up.
	ConditionConnected = "Connected"
	// ConditionReady: the device is connected and its input nodes (or,
	// for a device without input, its link) can be handed to a claim.
	ConditionReady = "Ready"

	ReasonConnected = "Connected"
	// ReasonAsleep: bonded and trusted, and off the air: it reconnects
	// when woken (the PS button).
	ReasonAsleep = "Asleep"
	// ReasonNotConnected: bonded but not trusted, or its adapter is
	// absent: it will not reconnect by itself.
	ReasonNotConnected = "NotConnected"
	// ReasonNotBonded: BlueZ no longer holds the bond.
	ReasonNotBonded = "NotBonded"
	// ReasonUnpairing: the Peripheral is being deleted.
	ReasonUnpairing = "Unpairing"
	// ReasonInputNodes: the kernel registered the device's input nodes.
	ReasonInputNodes = "InputNodes"
	// ReasonNoInputNodes: connected, with no input node yet.
	ReasonNoInputNodes = "NoInputNodes"
	// ReasonLinkUp: connected, a device that has no input nodes.
	ReasonLinkUp = "LinkUp"

	// ConditionEndpointCache: a speaker's A2DP stream endpoints as
	// BlueZ caches them (cache/<device>, [Endpoints]), which bluetoothd
	// loads at a connection instead of asking the speaker, agree with
	// those bluetoothd exports for it while it is connected.
	ConditionEndpointCache = "EndpointCache"
	// ReasonCacheCurrent: they agree, or nothing is cached.
	ReasonCacheCurrent = "Current"
	// ReasonCacheStale: they disagree; the message names both lists, and
	// the cache is cleared at the speaker's next disconnection.
	ReasonCacheStale = "Stale"
	// ReasonCacheCleared: the stale cache was cleared; the speaker's
	// next connection discovers its endpoints afresh.
	ReasonCacheCleared = "Cleared"
	// ReasonCacheUnreadable: the cache file could not be read or parsed.
	ReasonCacheUnreadable = "Unreadable"

	// ConditionA2DP: a connected speaker's A2DP channel is up
	// (bluetoothd exports its stream endpoints). Absent while it is
	// disconnected and on a device that is no speaker.
	ConditionA2DP = "A2DP"
	// ReasonA2DPUp: the channel is up.
	ReasonA2DPUp = "StreamEndpoints"
	// ReasonNoA2DP: connected without the channel (only HFP/HSP or
	// AVRCP came back, as after a bluetoothd or bus restart); the
	// message names the repair the operator makes and when.
	ReasonNoA2DP = "NoA2DP"
)
