// SPDX-License-Identifier: Apache-2.0

package inventory

import (
	"path/filepath"
	"testing"

	"github.com/liken-sh/operators/internal/dra"
	"github.com/liken-sh/operators/internal/pciids"
	"github.com/liken-sh/operators/test/fakesys"
)

// TestReferenceListsEveryPublishedAttribute keeps AttributeReference (and
// so docs/reference/attributes.md) honest: every attribute the recorded
// machines' controllers and adapters get is listed, and every listed
// attribute is published by one of them.
func TestReferenceListsEveryPublishedAttribute(t *testing.T) {
	desktop, err := fakesys.LayOutDesktop(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	roots := []string{
		desktop.Sys,
		tree(t, filepath.Join(alsaTrees, "xps9700.tree")),
		tree(t, hciTree, "testdata/btusb-links.tree"),
	}
	listed := map[dra.QualifiedName]bool{}
	for _, a := range AttributeReference {
		listed[a.Name] = true
	}
	published := map[dra.QualifiedName]bool{}
	for _, root := range roots {
		scan, err := Discover(root, pciids.Open("testdata/pci.ids"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range scan.Devices {
			for name := range f.Device.Attributes {
				published[name] = true
				if !listed[name] {
					t.Errorf("%s publishes %s, which AttributeReference does not list", f.Device.Name, name)
				}
			}
			if len(f.Device.Taints) != 0 {
				t.Errorf("%s is tainted %v; the reference says the driver sets no taints", f.Device.Name, f.Device.Taints)
			}
		}
	}
	for name := range listed {
		if !published[name] {
			t.Errorf("AttributeReference lists %s, which no recorded device publishes", name)
		}
	}
}
