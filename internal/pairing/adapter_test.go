// SPDX-License-Identifier: Apache-2.0

package pairing

import "testing"

func TestBondsHeld(t *testing.T) {
	for n, want := range map[int]string{1: "BlueZ holds 1 bond for this radio", 3: "BlueZ holds 3 bonds for this radio"} {
		if got := bondsHeld(n); got != want {
			t.Errorf("bondsHeld(%d) = %q, want %q", n, got, want)
		}
	}
}
