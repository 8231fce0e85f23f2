// SPDX-License-Identifier: Apache-2.0

package dra

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
)

// Device is one device this driver publishes in its node's pool.
//
// Name must be a DNS label (lower case, at most 63 characters); it is the
// device name a claim's allocation result carries back to prepare.
// Attributes and Capacity use the resource.k8s.io/v1 shapes: a key without a
// domain belongs to the driver's own domain. A device whose hardware is gone
// keeps being published with Taints instead of disappearing, because a claim
// may still hold it (KEP-5055, "device taints").
//
// Problem says, in a few words a person reads in a pod's status, why the
// device is unfit now: "asleep (battery 40%)", "monitor unplugged or
// off". It is not part of the ResourceSlice. The core reports it through
// the kubelet's device health stream (KEP-4680, DRA resource health): a
// device with a Problem is Unhealthy with Problem as its message; one
// without is Unhealthy with the message "tainted: <keys>" when Tainted
// says so, and Healthy otherwise. The kubelet shows that health in
// status.containerStatuses[].allocatedResourcesStatus of every pod whose
// container uses the device. Taints stay what the scheduler and the
// eviction controller act on: an operator that sets a Problem usually
// taints the device too. At most MaxProblemBytes of printable UTF-8.
type Device struct {
	Name       string
	Attributes Attributes
	Capacity   map[resourceapi.QualifiedName]resourceapi.DeviceCapacity
	// AllowMultipleAllocations lets several claims hold the device at
	// once (KEP-5075, DRA consumable capacity, beta and on by default
	// since Kubernetes 1.36): each allocation consumes its share of every
	// Capacity that has a RequestPolicy, so a claim that asks for all of
	// one holds the device alone.
	AllowMultipleAllocations bool
	Taints                   []Taint
	Problem                  string
	// StatusData is what every claim prepared with the device shows as
	// the data of its status.devices entry (KEP-4817, ResourceClaim
	// device status): the facts a person asks "which device did my claim
	// get" for. It is encoded with encoding/json, to at most
	// MaxStatusDataBytes; nil shows none. Like Problem it is not part of
	// the ResourceSlice, so it may change often (a battery charge)
	// without a slice write.
	StatusData map[string]any
}

// MaxStatusDataBytes is the longest encoded Device.StatusData, in bytes:
// the API's limit on a claim's device status data
// (resource.k8s.io/v1 AllocatedDeviceStatusDataMaxLength).
const MaxStatusDataBytes = resourceapi.AllocatedDeviceStatusDataMaxLength

// MaxProblemBytes is the longest Device.Problem, in bytes: the API's
// limit on a resource health message (core/v1
// ResourceHealthMessageMaxLength), past which the kubelet would cut it.
const MaxProblemBytes = corev1.ResourceHealthMessageMaxLength

// Attributes are a device's attributes by qualified name; a name without a
// domain ("card") belongs to the driver's domain, one with a domain
// ("sound.liken.sh/supportsSound") to that domain. Build values with String,
// Int and Bool.
type Attributes = map[QualifiedName]resourceapi.DeviceAttribute

// QualifiedName is an attribute or capacity name, as in Attributes.
type QualifiedName = resourceapi.QualifiedName

// Taint marks a published device as unfit, without removing it.
//
// Effect is one of TaintNoSchedule (no new allocations), TaintNoExecute (also
// evicts pods already using the device, through kube-controller-manager's
// device-taint eviction controller) or TaintNone (informational). Key must be
// a qualified name such as "audio.liken.sh/disconnected"; Value may be empty.
type Taint struct {
	Key    string
	Value  string
	Effect resourceapi.DeviceTaintEffect
}

// The taint effects of resource.k8s.io/v1, re-exported so that operators need
// not import the API package for them.
const (
	TaintNoSchedule = resourceapi.DeviceTaintEffectNoSchedule
	TaintNoExecute  = resourceapi.DeviceTaintEffectNoExecute
	TaintNone       = resourceapi.DeviceTaintEffectNone
)

// String is a string device attribute.
func String(v string) resourceapi.DeviceAttribute {
	return resourceapi.DeviceAttribute{StringValue: &v}
}

// Int is an integer device attribute.
func Int(v int64) resourceapi.DeviceAttribute {
	return resourceapi.DeviceAttribute{IntValue: &v}
}

// Bool is a boolean device attribute.
func Bool(v bool) resourceapi.DeviceAttribute {
	return resourceapi.DeviceAttribute{BoolValue: &v}
}

// Tainted reports whether the device carries a taint that keeps new claims
// off it (NoSchedule or NoExecute).
func (d Device) Tainted() bool {
	return slices.ContainsFunc(d.Taints, func(t Taint) bool {
		return t.Effect == TaintNoSchedule || t.Effect == TaintNoExecute
	})
}

// API limits of resource.k8s.io/v1 that the core checks before a write, so
// that one bad device is refused by name at SetDevices instead of freezing
// the whole pool in a retry loop at the API server.
const (
	maxAttributesAndCapacity = resourceapi.ResourceSliceMaxAttributesAndCapacitiesPerDevice
	maxStringAttribute       = resourceapi.DeviceAttributeMaxValueLength
	maxAttributeIDLength     = resourceapi.DeviceMaxIDLength
	maxAttributeDomainLength = resourceapi.DeviceMaxDomainLength
)

// cIdentifier is the shape of an attribute's name after its domain.
var cIdentifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// validate checks what the API server would refuse (the validation of
// ResourceSlice in k8s.io/kubernetes pkg/apis/resource/validation, which no
// importable library exposes). Errors name the device and the field.
func (d Device) validate() error {
	if errs := validation.IsDNS1123Label(d.Name); len(errs) > 0 {
		return fmt.Errorf("device name %q: %s", d.Name, strings.Join(errs, "; "))
	}
	if n := len(d.Attributes) + len(d.Capacity); n > maxAttributesAndCapacity {
		return fmt.Errorf("device %q: %d attributes and capacities, at most %d allowed", d.Name, n, maxAttributesAndCapacity)
	}
	for name, v := range d.Attributes {
		if err := validateQualifiedName(string(name)); err != nil {
			return fmt.Errorf("device %q: attribute %q: %w", d.Name, name, err)
		}
		if err := validateAttribute(v); err != nil {
			return fmt.Errorf("device %q: attribute %q: %w", d.Name, name, err)
		}
	}
	for name := range d.Capacity {
		if err := validateQualifiedName(string(name)); err != nil {
			return fmt.Errorf("device %q: capacity %q: %w", d.Name, name, err)
		}
	}
	if len(d.Taints) > resourceapi.DeviceTaintsMaxLength {
		return fmt.Errorf("device %q: %d taints, at most %d allowed", d.Name, len(d.Taints), resourceapi.DeviceTaintsMaxLength)
	}
	for _, t := range d.Taints {
		switch t.Effect {
		case TaintNoSchedule, TaintNoExecute, TaintNone:
		default:
			return fmt.Errorf("device %q: taint %q has unknown effect %q", d.Name, t.Key, t.Effect)
		}
		if errs := validation.IsQualifiedName(t.Key); len(errs) > 0 {
			return fmt.Errorf("device %q: taint key %q: %s", d.Name, t.Key, strings.Join(errs, "; "))
		}
		if errs := validation.IsValidLabelValue(t.Value); len(errs) > 0 {
			return fmt.Errorf("device %q: taint %q value %q: %s", d.Name, t.Key, t.Value, strings.Join(errs, "; "))
		}
	}
	if err := validateProblem(d.Problem); err != nil {
		return fmt.Errorf("device %q: problem %q: %w", d.Name, d.Problem, err)
	}
	if _, err := d.statusData(); err != nil {
		return fmt.Errorf("device %q: %w", d.Name, err)
	}
	return nil
}

// statusData is StatusData encoded, nil when there is none. Errors: a
// value encoding/json refuses, or more than MaxStatusDataBytes.
func (d Device) statusData() ([]byte, error) {
	if d.StatusData == nil {
		return nil, nil
	}
	raw, err := json.Marshal(d.StatusData)
	if err != nil {
		return nil, fmt.Errorf("status data: %w", err)
	}
	if len(raw) > MaxStatusDataBytes {
		return nil, fmt.Errorf("status data: %d bytes encoded, at most %d allowed", len(raw), MaxStatusDataBytes)
	}
	return raw, nil
}

// validateProblem checks a Device.Problem: at most MaxProblemBytes of
// valid UTF-8 with no control or format characters, so that a pod's
// status shows it as one plain line.
func validateProblem(s string) error {
	if len(s) > MaxProblemBytes {
		return fmt.Errorf("longer than %d bytes", MaxProblemBytes)
	}
	if !utf8.ValidString(s) {
		return fmt.Errorf("not valid UTF-8")
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return fmt.Errorf("holds the unprintable character %U", r)
		}
	}
	return nil
}

// validateQualifiedName checks an attribute or capacity name: an optional
// DNS-subdomain domain and "/", then a C identifier of at most 32 bytes.
func validateQualifiedName(name string) error {
	domain, id, found := strings.Cut(name, "/")
	if !found {
		domain, id = "", name
	}
	if found {
		if len(domain) > maxAttributeDomainLength {
			return fmt.Errorf("domain longer than %d bytes", maxAttributeDomainLength)
		}
		if errs := validation.IsDNS1123Subdomain(domain); len(errs) > 0 {
			return fmt.Errorf("domain: %s", strings.Join(errs, "; "))
		}
	}
	if len(id) > maxAttributeIDLength || !cIdentifier.MatchString(id) {
		return fmt.Errorf("name must be a C identifier of at most %d bytes", maxAttributeIDLength)
	}
	return nil
}

func validateAttribute(v resourceapi.DeviceAttribute) error {
	set := 0
	for _, p := range []bool{v.StringValue != nil, v.IntValue != nil, v.BoolValue != nil, v.VersionValue != nil} {
		if p {
			set++
		}
	}
	if set != 1 {
		return fmt.Errorf("exactly one value must be set, %d are", set)
	}
	if v.StringValue != nil && len(*v.StringValue) > maxStringAttribute {
		return fmt.Errorf("string value longer than %d bytes", maxStringAttribute)
	}
	if v.VersionValue != nil && len(*v.VersionValue) > maxStringAttribute {
		return fmt.Errorf("version value longer than %d bytes", maxStringAttribute)
	}
	return nil
}

// apiDevice converts to the resource.k8s.io/v1 shape. Taints leave
// TimeAdded unset: the API server stamps it on create, and the slice
// controller copies the server's value forward so republishing does not churn.
func (d Device) apiDevice() resourceapi.Device {
	out := resourceapi.Device{
		Name:       d.Name,
		Attributes: d.Attributes,
		Capacity:   d.Capacity,
	}
	if d.AllowMultipleAllocations {
		out.AllowMultipleAllocations = ptr.To(true)
	}
	for _, t := range d.Taints {
		out.Taints = append(out.Taints, resourceapi.DeviceTaint{Key: t.Key, Value: t.Value, Effect: t.Effect})
	}
	return out
}
