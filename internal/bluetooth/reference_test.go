// SPDX-License-Identifier: Apache-2.0

package bluetooth

import (
	"testing"

	"github.com/liken-sh/operators/internal/bluez"
	"github.com/liken-sh/operators/internal/dra"
)

// TestReferenceListsEveryPublishedAttribute keeps AttributeReference and
// TaintReference (and so docs/reference/attributes.md) honest: every
// attribute and taint that the recorded gamepad and mouse, a loudspeaker
// and an adapter's media bus get is listed.
func TestReferenceListsEveryPublishedAttribute(t *testing.T) {
	attrs := map[dra.QualifiedName]bool{}
	for _, a := range AttributeReference() {
		if attrs[a.Name] {
			t.Errorf("AttributeReference lists %s twice", a.Name)
		}
		attrs[a.Name] = true
	}
	taints := map[string]bool{}
	for _, tr := range TaintReference {
		taints[tr.Key] = true
	}
	for _, connected := range []bool{true, false} {
		var inv Inventory
		inv.Observe(bluez.Objects{
			Adapters: []bluez.Adapter{adapter0},
			Devices:  []bluez.Device{nesPad(t, connected), basilisk(t, connected), speaker(connected)},
		})
		devs, _ := inv.Devices(NodeMap{})
		if len(devs) != 4 {
			t.Fatalf("published %d devices, want three controllers and a media bus", len(devs))
		}
		inv.Observe(bluez.Objects{})
		departed, _ := inv.Devices(NodeMap{})
		for _, d := range append(devs, departed...) {
			for name := range d.Attributes {
				if !attrs[name] {
					t.Errorf("%s publishes %s, which AttributeReference does not list", d.Name, name)
				}
			}
			for _, tn := range d.Taints {
				if !taints[tn.Key] {
					t.Errorf("%s is tainted %s, which TaintReference does not list", d.Name, tn.Key)
				}
			}
		}
	}
}
