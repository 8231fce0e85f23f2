// SPDX-License-Identifier: Apache-2.0

package pairing

import "testing"

// The AdapterAbsent message names the node the radio was last seen on,
// and says it was never seen rather than leaving that node blank.
func TestAbsentMessage(t *testing.T) {
	for _, c := range []struct{ node, want string }{
		{"node-a", "the radio 00-1a-7d-da-71-13 is on no node now (last seen on node-a); the request waits for it"},
		{"", "the radio 00-1a-7d-da-71-13 is on no node now (never seen on any node); the request waits for it"},
	} {
		if got := absentMessage("00-1a-7d-da-71-13", c.node); got != c.want {
			t.Errorf("node %q: %q, want %q", c.node, got, c.want)
		}
	}
}
