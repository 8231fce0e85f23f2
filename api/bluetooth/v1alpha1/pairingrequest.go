// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PairingRequest is one pairing window on one adapter. While it is Open
// the radio is discoverable and pairable and scans; devices that answer
// appear in status.seen, and writing one of their addresses into
// spec.device approves it: the operator pairs it, trusts it, and creates
// its Peripheral. A request finishes Paired, Failed or Expired, and is
// deleted ttlSecondsAfterFinished after it finished.
//
// Creating or updating a PairingRequest is the whole permission to pair:
// a person needs no exec into the operator's pod.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Adapter",type=string,JSONPath=`.spec.adapter`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Device",type=string,JSONPath=`.spec.device`
// +kubebuilder:printcolumn:name="Peripheral",type=string,JSONPath=`.status.peripheral`
// +kubebuilder:printcolumn:name="Closes",type=string,JSONPath=`.status.windowClosesAt`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type PairingRequest struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PairingRequestSpec   `json:"spec"`
	Status PairingRequestStatus `json:"status,omitempty"`
}

// PairingRequestList is a list of PairingRequests.
//
// +kubebuilder:object:root=true
type PairingRequestList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PairingRequest `json:"items"`
}

// PairingRequestSpec is the window a person asks for and, once a device
// answered, the approval. The adapter, the window and an approval once
// given cannot change (the API server refuses the update, naming the
// field): the operator opens the window once, for its first length, and
// pairs the device first approved; a different window or device is a new
// request. Either address may be respelt (case, colons or dashes).
//
// +kubebuilder:validation:XValidation:rule="self.adapter.lowerAscii().replace(':', '-') == oldSelf.adapter.lowerAscii().replace(':', '-')",message="spec.adapter cannot change; create another request"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.device) || has(self.device) && self.device.lowerAscii().replace(':', '-') == oldSelf.device.lowerAscii().replace(':', '-')",message="spec.device cannot change once set; create another request to pair another device"
type PairingRequestSpec struct {
	// Adapter is the Adapter to pair with: its name, the address in
	// lowercase with dashes ("00-1a-7d-da-71-13", as `kubectl get
	// adapters` lists them), or the address as BlueZ spells it
	// ("00:1A:7D:DA:71:13"), in either case, as `kubectl liken bluetooth
	// pair --adapter` takes it. The operator reads every spelling as the
	// same adapter; the spec keeps the one written.
	// +kubebuilder:validation:MaxLength=17
	// +kubebuilder:validation:XValidation:rule="self.matches('^[0-9A-Fa-f]{2}(-[0-9A-Fa-f]{2}){5}$') || self.matches('^[0-9A-Fa-f]{2}(:[0-9A-Fa-f]{2}){5}$')",message="spec.adapter is not an adapter's address: give its name (00-1a-7d-da-71-13) or its address (00:1A:7D:DA:71:13)"
	Adapter string `json:"adapter"`
	// WindowSeconds is how long the radio stays discoverable and pairable,
	// 15 to 900 seconds. It cannot change after creation.
	// +kubebuilder:default=180
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.windowSeconds cannot change; create another request"
	// +kubebuilder:validation:Minimum=15
	// +kubebuilder:validation:Maximum=900
	// +optional
	WindowSeconds int32 `json:"windowSeconds,omitempty"`
	// Device is the approval: the address of the device to pair
	// ("E4:17:D8:C5:67:6D", or "e4-17-d8-c5-67-6d" as its Peripheral is
	// named, in either case), usually one of status.seen. Set at
	// creation, it pairs that device as soon as it answers. Once set it
	// cannot change or be removed, only be respelt.
	// +kubebuilder:validation:MaxLength=17
	// +kubebuilder:validation:XValidation:rule="self.matches('^[0-9A-Fa-f]{2}(:[0-9A-Fa-f]{2}){5}$') || self.matches('^[0-9A-Fa-f]{2}(-[0-9A-Fa-f]{2}){5}$')",message="spec.device is not a Bluetooth address: give it as E4:17:D8:C5:67:6D (or e4-17-d8-c5-67-6d)"
	// +optional
	Device string `json:"device,omitempty"`
	// PIN answers a legacy device that asks for a PIN code (BlueZ's
	// Agent1.RequestPinCode): 1 to 16 printable ASCII characters, often
	// "0000". A device that asks the host to type the passkey it displays
	// (Agent1.RequestPasskey) takes it from here too, as 1 to 6 digits.
	// +kubebuilder:validation:Pattern=`^[ -~]{1,16}$`
	// +kubebuilder:validation:MaxLength=16
	// +optional
	PIN string `json:"pin,omitempty"`
	// PasskeyConfirmed answers numeric comparison: true when the six
	// digits in status.passkey equal the ones the device shows, false to
	// refuse.
	// +optional
	PasskeyConfirmed *bool `json:"passkeyConfirmed,omitempty"`
	// TTLSecondsAfterFinished is how long a finished request is kept,
	// 0 to 2592000 (30 days).
	// +kubebuilder:default=86400
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2592000
	// +optional
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty"`
}

// PairingRequestStatus is where the window stands.
type PairingRequestStatus struct {
	// Phase is Open while the window is, then Paired, Failed or Expired.
	// Empty until the adapter's operator took the request. A request
	// whose spec.adapter names no Adapter is Failed (reason
	// AdapterNotFound) 10 s after its creation; one whose Adapter's radio
	// is on no node stays empty (AdapterAbsent) until its window would
	// have closed, then Expired.
	// +kubebuilder:validation:Enum=Open;Paired;Failed;Expired
	// +optional
	Phase Phase `json:"phase,omitempty"`
	// WindowClosesAt is when the window closes. `kubectl get -o wide`
	// prints it as the RFC 3339 time itself: a date column would print
	// an age, which is <invalid> for a time still to come.
	// +optional
	WindowClosesAt *metav1.Time `json:"windowClosesAt,omitempty"`
	// Seen are the unpaired devices that answered the scan, in the order
	// they first answered, at most MaxSeen.
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	// +optional
	Seen []SeenDevice `json:"seen,omitempty"`
	// Passkey is set while the device asks a person to type or compare a
	// number.
	// +optional
	Passkey *Passkey `json:"passkey,omitempty"`
	// Peripheral is the name of the Peripheral the pairing made.
	// +optional
	Peripheral string `json:"peripheral,omitempty"`
	// FinishedAt is when the request became Paired, Failed or Expired.
	// +optional
	FinishedAt *metav1.Time `json:"finishedAt,omitempty"`
	// ObservedGeneration is the spec generation the status answers.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: Accepted (the adapter's operator took the request, or
	// why none will), WindowOpen and Paired.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Phase is a PairingRequest's phase.
type Phase string

// The phases.
const (
	PhaseOpen    Phase = "Open"
	PhasePaired  Phase = "Paired"
	PhaseFailed  Phase = "Failed"
	PhaseExpired Phase = "Expired"
)

// Finished reports whether p is a final phase.
func (p Phase) Finished() bool { return p == PhasePaired || p == PhaseFailed || p == PhaseExpired }

// MaxSeen bounds status.seen.
const MaxSeen = 16

// MaxNameBytes bounds names kept in status: the Core specification's
// 248-byte remote name (Vol 4 Part E 7.1.19).
const MaxNameBytes = 248

// SeenDevice is one device that answered the scan.
type SeenDevice struct {
	// Address is the device's address ("E4:17:D8:C5:67:6D").
	// +kubebuilder:validation:MaxLength=17
	Address string `json:"address"`
	// Name is the device's name, cut to 248 bytes.
	// +kubebuilder:validation:MaxLength=248
	// +optional
	Name string `json:"name,omitempty"`
	// Class is the 24-bit Class of Device of a BR/EDR device.
	// +optional
	Class int32 `json:"class,omitempty"`
	// Icon is BlueZ's icon name for it ("input-gaming").
	// +optional
	Icon string `json:"icon,omitempty"`
	// RSSI is the received signal strength of its last answer, in dBm.
	// +optional
	RSSI *int32 `json:"rssi,omitempty"`
	// FirstSeen is when it first answered within this window.
	FirstSeen metav1.Time `json:"firstSeen"`
}

// Passkey is a number the device asks a person about.
type Passkey struct {
	// Device is the address that asks.
	Device string `json:"device"`
	// Action is Type (type Value on the device's keyboard, then Enter) or
	// Confirm (compare Value with the device's display and set
	// spec.passkeyConfirmed).
	// +kubebuilder:validation:Enum=Type;Confirm
	Action PasskeyAction `json:"action"`
	// Value is the passkey, six digits, or a legacy PIN to type.
	// +kubebuilder:validation:MaxLength=16
	Value string `json:"value"`
	// Entered is how many digits the keyboard reported typed so far.
	// +optional
	Entered *int32 `json:"entered,omitempty"`
}

// PasskeyAction is what a person does with a Passkey.
type PasskeyAction string

// The passkey actions.
const (
	PasskeyType    PasskeyAction = "Type"
	PasskeyConfirm PasskeyAction = "Confirm"
)

// Default values of the spec, as the CRD defaults them.
const (
	DefaultWindowSeconds           = 180
	MinWindowSeconds               = 15
	MaxWindowSeconds               = 900
	DefaultTTLSecondsAfterFinished = 86400
	MaxTTLSecondsAfterFinished     = 2592000
)

// PairingRequest condition types and reasons.
const (
	// ConditionAccepted: the operator of spec.adapter took the request.
	ConditionAccepted = "Accepted"
	// ConditionWindowOpen: the radio is discoverable, pairable and
	// scanning for this request.
	ConditionWindowOpen = "WindowOpen"
	// ConditionPaired: the approved device is paired.
	ConditionPaired = "Paired"

	ReasonAccepted = "Accepted"
	// ReasonAdapterNotFound: no Adapter has the name in spec.adapter; the
	// request ends Failed, with a Warning Event. The message names the
	// Adapters whose radio an operator has reported, not those no radio
	// serves (Present False, reason NotServed).
	ReasonAdapterNotFound = "AdapterNotFound"
	// ReasonAdapterAbsent: the Adapter exists but its radio is on no
	// node now.
	ReasonAdapterAbsent = "AdapterAbsent"
	// ReasonInvalidSpec: the spec fails a check the schema cannot make.
	ReasonInvalidSpec = "InvalidSpec"

	ReasonOpen         = "Open"
	ReasonRadioRefused = "RadioRefused"
	ReasonClosed       = "Closed"
	// ReasonPoweredOff: the radio is off (Adapter1.Powered false, as the
	// Adapter's spec.powered asks), so it is not discoverable; the window
	// opens once the radio is on, if the request is still open then.
	ReasonPoweredOff = "PoweredOff"

	ReasonAwaitingApproval     = "AwaitingApproval"
	ReasonAwaitingDevice       = "AwaitingDevice"
	ReasonPairing              = "Pairing"
	ReasonAwaitingPasskey      = "AwaitingPasskey"
	ReasonAwaitingConfirmation = "AwaitingConfirmation"
	ReasonAwaitingPIN          = "AwaitingPIN"
	ReasonPaired               = "Paired"
	ReasonPairingFailed        = "PairingFailed"
	ReasonAlreadyPaired        = "AlreadyPaired"
	ReasonExpired              = "Expired"
)
