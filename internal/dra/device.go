package dra

import (
	"fmt"
	"slices"

	resourceapi "k8s.io/api/resource/v1"
)

// Device is one device this driver publishes in its node's pool.
//
// Name must be a DNS label (lower case, at most 63 characters); it is the
// device name a claim's allocation result carries back to prepare.
// Attributes and Capacity use the resource.k8s.io/v1 shapes: a key without a
// domain belongs to the driver's own domain. A device whose hardware is gone
// keeps being published with Taints instead of disappearing, because a claim
// may still hold it (KEP-5055, "device taints").
type Device struct {
	Name       string
	Attributes Attributes
	Capacity   map[resourceapi.QualifiedName]resourceapi.DeviceCapacity
	Taints     []Taint
}

// Attributes are a device's attributes by qualified name; a name without a
// domain ("card") belongs to the driver's domain, one with a domain
// ("sound.liken.sh/supportsSound") to that domain. Build values with String,
// Int and Bool.
type Attributes = map[resourceapi.QualifiedName]resourceapi.DeviceAttribute

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

// validate checks what the API server would refuse, so that one bad device
// is reported by name instead of failing the whole slice write.
func (d Device) validate() error {
	if d.Name == "" {
		return fmt.Errorf("device with empty name")
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
		if t.Key == "" {
			return fmt.Errorf("device %q: taint with empty key", d.Name)
		}
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
	for _, t := range d.Taints {
		out.Taints = append(out.Taints, resourceapi.DeviceTaint{Key: t.Key, Value: t.Value, Effect: t.Effect})
	}
	return out
}
