// SPDX-License-Identifier: Apache-2.0

package bluez

import (
	"os"
	"reflect"
	"testing"
)

func writeFile(path string) error { return os.WriteFile(path, nil, 0o600) }

func TestEnqueueCollapsesIntoResync(t *testing.T) {
	a := Change{Kind: PropertiesChanged, Path: "/a"}
	var q []Change
	for range maxQueued {
		q = enqueue(q, a)
	}
	if len(q) != maxQueued || q[0].Kind != PropertiesChanged {
		t.Fatalf("queue of %d before the bound", len(q))
	}
	q = enqueue(q, a)
	if !reflect.DeepEqual(q, []Change{{Kind: Resync}}) {
		t.Fatalf("overflow gave %v, want one Resync", q)
	}
	q = enqueue(q, a)
	if !reflect.DeepEqual(q, []Change{{Kind: Resync}}) {
		t.Fatalf("a change after a Resync gave %v; the Resync covers it", q)
	}
	q = enqueue([]Change{a}, Change{Kind: Resync})
	if !reflect.DeepEqual(q, []Change{{Kind: Resync}}) {
		t.Fatalf("a Resync behind a change gave %v; it covers the change", q)
	}
}
