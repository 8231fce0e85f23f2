// SPDX-License-Identifier: Apache-2.0

package bluetooth

import (
	"context"
	"testing"

	"github.com/liken-sh/operators/internal/bluez"
)

// The operator's Published is the set of its latest pass: a device that
// leaves the set is refused at once, one that joins it is prepared.
func TestPublishedSetFollowsTheLatestPass(t *testing.T) {
	var set publishedSet
	prepare := Prepare(Delivery{Published: set.has, Nodes: fixedNodes(numbered{padAddress: {ev(18)}}, nil)})
	if _, err := prepare(context.Background(), request(hci0Bus)); err == nil {
		t.Error("prepared a media bus before any pass published it")
	}

	devs, _ := Build(bluez.Objects{Adapters: []bluez.Adapter{adapter0}, Devices: []bluez.Device{nesPad(t, true)}}, nil)
	set.set(devs)
	for _, name := range []string{hci0Bus, "e4-17-d8-c5-67-6d"} {
		if _, err := prepare(context.Background(), request(name)); err != nil {
			t.Errorf("%s, published: %v", name, err)
		}
	}

	// The pad was removed from bluetoothd: the next pass has only the bus.
	devs, _ = Build(bluez.Objects{Adapters: []bluez.Adapter{adapter0}}, nil)
	set.set(devs)
	if _, err := prepare(context.Background(), request("e4-17-d8-c5-67-6d")); err == nil || err.Error() != `device "e4-17-d8-c5-67-6d" is not one this operator publishes` {
		t.Errorf("pad after it left the set: %v", err)
	}
}
