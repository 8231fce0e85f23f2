// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Sink is one playback endpoint of a node: an ALSA playback PCM (HDMI,
// DisplayPort, analog, USB) or a paired Bluetooth speaker (an A2DP sink).
// Its name is the DRA device name; a speaker's is its address in lower
// case with dashes. The operator of the node creates it. One a person
// creates under a name of a node's form (the node, then a bus such as
// pci or usb) that the node's operator has no output of gets from that
// operator status.node and Connected and Ready False with reason
// NotServed; one under a name of no node's form keeps an empty status.
// `kubectl liken audio list` shows both NotServed.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster
// +kubebuilder:subresource:status
// +kubebuilder:selectablefield:JSONPath=`.status.node`
// +kubebuilder:printcolumn:name="Node",type=string,JSONPath=`.status.node`
// +kubebuilder:printcolumn:name="Connection",type=string,JSONPath=`.status.connectionType`
// +kubebuilder:printcolumn:name="Volume",type=integer,JSONPath=`.status.observed.volume`
// +kubebuilder:printcolumn:name="Mute",type=boolean,JSONPath=`.status.observed.mute`
// +kubebuilder:printcolumn:name="Claim",type=string,JSONPath=`.status.claim.name`
// +kubebuilder:printcolumn:name="Connected",type=string,JSONPath=`.status.conditions[?(@.type=="Connected")].status`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Layout",type=string,JSONPath=`.status.layout`
// +kubebuilder:printcolumn:name="Layout Source",type=string,JSONPath=`.status.layoutSource`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Sink struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +kubebuilder:default={}
	Spec   SinkSpec   `json:"spec,omitempty"`
	Status SinkStatus `json:"status,omitempty"`
}

// SinkList is a list of Sinks.
//
// +kubebuilder:object:root=true
type SinkList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Sink `json:"items"`
}

// Source is one capture endpoint of a node: an ALSA capture PCM (a
// microphone or line input), declared to PipeWire as an
// api.alsa.pcm.source node. Its name is the DRA device name. The
// operator of the node creates it; one a person creates by hand is
// marked NotServed as a Sink is.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster
// +kubebuilder:subresource:status
// +kubebuilder:selectablefield:JSONPath=`.status.node`
// +kubebuilder:printcolumn:name="Node",type=string,JSONPath=`.status.node`
// +kubebuilder:printcolumn:name="Connection",type=string,JSONPath=`.status.connectionType`
// +kubebuilder:printcolumn:name="Volume",type=integer,JSONPath=`.status.observed.volume`
// +kubebuilder:printcolumn:name="Mute",type=boolean,JSONPath=`.status.observed.mute`
// +kubebuilder:printcolumn:name="Claim",type=string,JSONPath=`.status.claim.name`
// +kubebuilder:printcolumn:name="Connected",type=string,JSONPath=`.status.conditions[?(@.type=="Connected")].status`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Source struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +kubebuilder:default={}
	Spec   EndpointSpec   `json:"spec,omitempty"`
	Status EndpointStatus `json:"status,omitempty"`
}

// SourceList is a list of Sources.
//
// +kubebuilder:object:root=true
type SourceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Source `json:"items"`
}

// EndpointSpec is what a person asks of a Sink or Source. Every field is
// optional, and the operator never writes a field that is absent: the
// hardware keeps whatever it has.
type EndpointSpec struct {
	// Volume is the software gain of the endpoint's PipeWire node, in
	// percent of unity (linear), the same on every channel; on a Bluetooth
	// speaker it is set through the device's route, which is AVRCP
	// absolute volume where the speaker supports it. It applies at once,
	// even while a claim holds the endpoint.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	Volume *int32 `json:"volume,omitempty"`
	// Mute silences the endpoint's PipeWire node; on a Source it closes
	// the microphone. It applies at once, even under a claim.
	// +optional
	Mute *bool `json:"mute,omitempty"`
	// Controls sets the card's mixer controls, by kernel control name
	// (see status.capabilities), written through the ALSA control
	// interface: an integer within the control's range, "on" or "off" for
	// a switch, or an enumerated item's name. A name the endpoint does not
	// have or a value the control refuses is skipped and reported with an
	// Event. An integer is a 32-bit one: audio-endpoint-controls refuses
	// one outside -2147483648 to 2147483647, and where that policy is not
	// installed the operator ignores it and names it in SpecApplied
	// (reason InvalidSpec). Two endpoints of one card that set one control: the last
	// write wins.
	// Names are at most 64 characters (the kernel's are at most 44 bytes, plus an
	// index) and text values at most 1024 (128 comma-joined channel
	// values), so a spec cannot carry kilobytes into every Event that
	// reports it. Neither may hold a control character (C0, DEL, C1) nor
	// a bidirectional or zero-width formatting character, as an Adapter's
	// alias may not: no kernel control or item name has one, and they
	// would reach every terminal that shows the spec. The schema checks
	// the names; the values are checked by the ValidatingAdmissionPolicy
	// audio-endpoint-controls (deploy/audio/admissionpolicy.yaml), because
	// a schema cannot bound the length of an integer-or-string map value,
	// and without a bound the API server refuses a rule that reads its
	// characters as too costly.
	// +kubebuilder:validation:MaxProperties=128
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) <= 64)",message="a control name is longer than 64 characters"
	// +kubebuilder:validation:XValidation:rule="self.all(k, type(self[k]) != string || size(self[k]) <= 1024)",message="a control value is longer than 1024 characters"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !k.matches('[\\x00-\\x1f\\x7f-\\u009f\\u200b-\\u200f\\u202a-\\u202e\\u2066-\\u2069\\ufeff]'))",message="a control name holds a control, bidirectional or zero-width character"
	// +optional
	Controls map[string]intstr.IntOrString `json:"controls,omitempty"`
}

// SinkSpec is what a person asks of a Sink.
type SinkSpec struct {
	EndpointSpec `json:",inline"`
	// Layout is the channel layout PipeWire declares for the sink, as SPA
	// channel names in the order the hardware takes the channels (FL, FR,
	// FC, LFE, RL, RR, SL, SR, ...). It replaces the layout the ELD or the
	// channel map would give. A change restarts PipeWire, once no stream
	// is linked to any of the node's endpoints. No name may appear twice
	// but NA (an unused channel), so a USB card's status.layout can be
	// copied here. Order matters, so the list is replaced whole. Remove
	// the field (`"layout": null` in a merge patch) to go back to the
	// hardware's layout.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:XValidation:rule="self.all(x, x == 'NA' || self.exists_one(y, y == x))",message="a channel other than NA appears twice"
	// +listType=atomic
	// +optional
	Layout []ChannelPosition `json:"layout,omitempty"`
	// Codec is a Bluetooth speaker's resting codec, one of
	// status.bluetooth.codecs ("sbc", "aac", "aptx", "ldac" ...): the
	// operator switches the speaker to it whenever no claim holds it. A
	// claim's codec parameter wins while the claim is prepared. A codec
	// the speaker does not offer sets the SpecApplied condition False
	// with reason UnsupportedCodec (and a Warning Event), and the speaker
	// keeps its codec. On a wired output it is ignored, and said so: the
	// SpecApplied condition False with reason CodecNotSupported (and a
	// Warning Event).
	// +kubebuilder:validation:Pattern=`^[a-z0-9_]{1,32}$`
	// +optional
	Codec string `json:"codec,omitempty"`
	// DuckDecibels is how far the sink's other streams are lowered while
	// a claim whose role is "announcement" plays on it: every stream of
	// the other claims on the sink, by this many decibels (0 leaves them
	// as they are). Absent is 20 dB. A change holds from the next
	// announcement on.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=96
	// +optional
	DuckDecibels *int32 `json:"duckDecibels,omitempty"`
}

// ChannelPosition is a SPA channel name (spa/param/audio/raw.h, as
// PipeWire's audio.position spells it): the named positions, NA, and
// AUX0 to AUX63. The schema enumerates them rather than matching a
// pattern, so `kubectl explain` and a refusal both list the valid names.
// +kubebuilder:validation:Enum=MONO;FL;FR;FC;LFE;SL;SR;FLC;FRC;RC;RL;RR;TC;TFL;TFC;TFR;TRL;TRC;TRR;RLC;RRC;FLW;FRW;LFE2;FLH;FCH;FRH;TFLC;TFRC;TSL;TSR;LLFE;RLFE;BC;BLC;BRC;NA;AUX0;AUX1;AUX2;AUX3;AUX4;AUX5;AUX6;AUX7;AUX8;AUX9;AUX10;AUX11;AUX12;AUX13;AUX14;AUX15;AUX16;AUX17;AUX18;AUX19;AUX20;AUX21;AUX22;AUX23;AUX24;AUX25;AUX26;AUX27;AUX28;AUX29;AUX30;AUX31;AUX32;AUX33;AUX34;AUX35;AUX36;AUX37;AUX38;AUX39;AUX40;AUX41;AUX42;AUX43;AUX44;AUX45;AUX46;AUX47;AUX48;AUX49;AUX50;AUX51;AUX52;AUX53;AUX54;AUX55;AUX56;AUX57;AUX58;AUX59;AUX60;AUX61;AUX62;AUX63
type ChannelPosition string

// EndpointStatus is what the operator observed of a Sink or Source.
type EndpointStatus struct {
	// Node is the Kubernetes node the endpoint is on.
	// +optional
	Node string `json:"node,omitempty"`
	// Location is where the card sits, as the kernel spells it: a PCI
	// function address (0000:00:1f.3) or a USB port path (1-6).
	// +optional
	Location string `json:"location,omitempty"`
	// ConnectionType is how the endpoint reaches a person. An HDMI or
	// DisplayPort port tells which it is only through its monitor's ELD:
	// once the monitor goes away (Connected False, NoMonitor) the port
	// keeps the type its monitor gave, and one no monitor was seen on has
	// none.
	// +kubebuilder:validation:Enum=analog;hdmi;displayport;usb;bluetooth
	// +optional
	ConnectionType string `json:"connectionType,omitempty"`
	// Card is the ALSA card this boot.
	// +optional
	Card *CardStatus `json:"card,omitempty"`
	// PCM is the ALSA PCM device.
	// +optional
	PCM *PCMStatus `json:"pcm,omitempty"`
	// NodeName is the PipeWire node.name declared for the endpoint.
	// +optional
	NodeName string `json:"nodeName,omitempty"`
	// Format is the node's negotiated format while it runs.
	// +optional
	Format *Format `json:"format,omitempty"`
	// Capabilities are the card's mixer controls that belong to this
	// endpoint, by kernel control name: what spec.controls may set.
	// +optional
	Capabilities map[string]Capability `json:"capabilities,omitempty"`
	// Observed is what is actually set.
	// +optional
	Observed *Observed `json:"observed,omitempty"`
	// Claim is the ResourceClaim that holds the endpoint, if one does.
	// +optional
	Claim *ClaimReference `json:"claim,omitempty"`
	// Conditions: Connected, Ready, GraphCurrent, on a card's Sink
	// LayoutApplied (and SpecApplied while spec.codec is set), on a
	// Bluetooth speaker's Sink SpecApplied, and on any Sink or Source
	// SpecApplied False with reason InvalidSpec while a field cannot be
	// read.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// SinkStatus is what the operator observed of a Sink.
type SinkStatus struct {
	EndpointStatus `json:",inline"`
	// Monitor is the display behind an HDMI or DisplayPort output, from
	// its ELD; absent with no monitor.
	// +optional
	Monitor *Monitor `json:"monitor,omitempty"`
	// Layout is the channel layout declared to PipeWire; absent when the
	// hardware's channel map or PipeWire's default decides it.
	// +listType=atomic
	// +optional
	Layout []string `json:"layout,omitempty"`
	// LayoutSource says where Layout came from.
	// +kubebuilder:validation:Enum=Spec;ELD;ChannelMap;None
	// +optional
	LayoutSource LayoutSource `json:"layoutSource,omitempty"`
	// Bluetooth is the speaker behind a Bluetooth Sink; absent on a wired
	// output.
	// +optional
	Bluetooth *Bluetooth `json:"bluetooth,omitempty"`
}

// Bluetooth is a paired Bluetooth speaker as BlueZ and PipeWire's bluez5
// plugin report it.
type Bluetooth struct {
	// Address is the speaker's address as BlueZ spells it
	// (A0:AB:51:33:B7:12).
	Address string `json:"address"`
	// Name is BlueZ's alias of the speaker: a person's alias, else the
	// name the speaker gave.
	// +optional
	Name string `json:"name,omitempty"`
	// Peripheral is the bluetooth.liken.sh Peripheral of the same
	// device (the address in lower case with dashes).
	// +optional
	Peripheral string `json:"peripheral,omitempty"`
	// Codec is the codec the speaker's stream runs now; absent while
	// PipeWire has no node for it.
	// +optional
	Codec string `json:"codec,omitempty"`
	// Codecs are the codecs the speaker offers, in the bluez5 plugin's
	// order: what spec.codec and a claim's codec parameter may name.
	// +listType=atomic
	// +optional
	Codecs []string `json:"codecs,omitempty"`
}

// LayoutSource is where a Sink's channel layout came from.
type LayoutSource string

// Layout sources, in the order they are tried.
const (
	LayoutFromSpec       LayoutSource = "Spec"
	LayoutFromELD        LayoutSource = "ELD"
	LayoutFromChannelMap LayoutSource = "ChannelMap"
	LayoutFromNone       LayoutSource = "None"
)

// CardStatus identifies an ALSA card (struct snd_ctl_card_info).
type CardStatus struct {
	// Number is the card number this boot (the N of controlC<N>).
	Number int32 `json:"number"`
	// ID is the card's id, with a clash suffix where the kernel gave one
	// (PCH_1).
	// +optional
	ID string `json:"id,omitempty"`
	// +optional
	Driver string `json:"driver,omitempty"`
	// +optional
	Name string `json:"name,omitempty"`
}

// PCMStatus identifies an ALSA PCM device on its card.
type PCMStatus struct {
	// Device is the PCM device number (the D of pcmC<N>D<D>p).
	Device int32 `json:"device"`
	// ID is the PCM's id ("HDMI 0", "ALC3266 Analog").
	// +optional
	ID string `json:"id,omitempty"`
}

// Monitor is a display as its ELD describes it (the kernel's
// sound/hda/hda_eld.c layout of the EDID-like data block).
type Monitor struct {
	// Manufacturer is the three-letter PNP id (SAM).
	// +optional
	Manufacturer string `json:"manufacturer,omitempty"`
	// Product is the product code, in hexadecimal.
	// +optional
	Product string `json:"product,omitempty"`
	// +optional
	Name string `json:"name,omitempty"`
	// PairingID equals the monitor.liken.sh/id device attribute, which
	// other drivers publish for the same display.
	// +optional
	PairingID string `json:"pairingID,omitempty"`
}

// Format is a running node's audio format (PipeWire's Format param).
type Format struct {
	// Rate is in Hz.
	// +optional
	Rate int32 `json:"rate,omitempty"`
	// +optional
	Channels int32 `json:"channels,omitempty"`
	// +listType=atomic
	// +optional
	Positions []string `json:"positions,omitempty"`
}

// Capability is one mixer control as the card describes it.
type Capability struct {
	// +kubebuilder:validation:Enum=integer;boolean;enumerated
	Type string `json:"type"`
	// Min, Max and Step bound an integer control.
	// +optional
	Min *int64 `json:"min,omitempty"`
	// +optional
	Max *int64 `json:"max,omitempty"`
	// +optional
	Step *int64 `json:"step,omitempty"`
	// MinDecibels and MaxDecibels are the control's dB range from its TLV,
	// as decimal strings ("-65.25").
	// +optional
	MinDecibels string `json:"minDecibels,omitempty"`
	// +optional
	MaxDecibels string `json:"maxDecibels,omitempty"`
	// Values are an enumerated control's items.
	// +listType=atomic
	// +optional
	Values []string `json:"values,omitempty"`
	// Channels is how many values the control holds.
	// +optional
	Channels int32 `json:"channels,omitempty"`
}

// Observed is what is actually set on an endpoint.
type Observed struct {
	// Volume is the node's software gain on its first channel, in percent
	// of unity.
	// +optional
	Volume *int32 `json:"volume,omitempty"`
	// +optional
	Mute *bool `json:"mute,omitempty"`
	// Controls are the values of the endpoint's mixer controls, as
	// spec.controls spells them.
	// +optional
	Controls map[string]string `json:"controls,omitempty"`
}

// ClaimReference names the ResourceClaim that holds an endpoint.
type ClaimReference struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// Condition types.
const (
	// ConditionConnected: a monitor is present, a jack plugged, a
	// speaker's Bluetooth link is up; always true for USB.
	ConditionConnected = "Connected"
	// ConditionReady: PipeWire holds a node for the endpoint.
	ConditionReady = "Ready"
	// ConditionLayoutApplied: the running PipeWire has the Sink's layout.
	ConditionLayoutApplied = "LayoutApplied"
	// ConditionGraphCurrent: the operator's view of PipeWire's graph,
	// from which Ready, status.format and status.observed are read, is
	// current. False while its graph monitor (pw-dump -m) is stuck or
	// PipeWire does not answer: those fields then show the last graph
	// read, which may no longer hold.
	ConditionGraphCurrent = "GraphCurrent"
	// ConditionSpecApplied, on a Bluetooth speaker's Sink: every field of
	// the spec applies to the speaker. False names the first field that
	// does not, in the reason (UnsupportedCodec, LayoutNotSupported,
	// ControlsNotSupported), and each one with its value in the message;
	// the fields that do apply (spec.volume, spec.mute) are applied all
	// the same. On a wired Sink it is there only while spec.codec is set:
	// False with reason CodecNotSupported, since a codec is a Bluetooth
	// speaker's alone. On any Sink or Source it is False with reason
	// InvalidSpec while a field of the object cannot be read into these
	// types (one the admission policies would have refused).
	ConditionSpecApplied = "SpecApplied"
)

// ReasonNotServed is the reason of Connected and Ready, both False, on
// a Sink or Source a person created under a name of a node's endpoints
// (the node part, then a bus such as pci or usb) that the node's
// operator has no endpoint of: that operator writes it once, with
// status.node, and nothing else of the status.
const ReasonNotServed = "NotServed"

// Reasons of SpecApplied besides Applied.
const (
	// ReasonUnsupportedCodec: spec.codec is not one of
	// status.bluetooth.codecs.
	ReasonUnsupportedCodec = "UnsupportedCodec"
	// ReasonLayoutNotSupported: spec.layout is set, and a speaker's
	// channels are those of its codec, not a declared layout.
	ReasonLayoutNotSupported = "LayoutNotSupported"
	// ReasonControlsNotSupported: spec.controls is set, and a speaker has
	// no ALSA mixer controls (status.capabilities is empty).
	ReasonControlsNotSupported = "ControlsNotSupported"
	// ReasonCodecNotSupported: spec.codec is set on a wired (ALSA) Sink,
	// whose PCM takes the samples as they are; the field is ignored.
	ReasonCodecNotSupported = "CodecNotSupported"
	// ReasonInvalidSpec: a field of the object does not fit its Go type,
	// such as an integer control value outside the int32 range; it is
	// ignored, named in the message, and the rest of the object applies.
	ReasonInvalidSpec = "InvalidSpec"
)

// Reasons of LayoutApplied.
const (
	// ReasonApplied: PipeWire runs with the layout.
	ReasonApplied = "Applied"
	// ReasonAwaitingIdle: a new layout waits until no stream is linked to
	// any of the node's endpoints.
	ReasonAwaitingIdle = "AwaitingIdle"
	// ReasonRestarting: the declaration was rewritten and PipeWire is
	// restarting with it.
	ReasonRestarting = "Restarting"
)
