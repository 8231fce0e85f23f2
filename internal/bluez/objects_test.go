// SPDX-License-Identifier: Apache-2.0

package bluez

import "testing"

// DisplayName is the alias a person set, else the device's own name; the
// alias BlueZ makes up from the address counts as none.
func TestDisplayName(t *testing.T) {
	for _, tc := range []struct {
		d    Device
		want string
	}{
		{Device{Address: "E4:17:D8:C5:67:6D", Name: "Wireless Controller", Alias: "Player 2"}, "Player 2"},
		{Device{Address: "E4:17:D8:C5:67:6D", Name: "Wireless Controller", Alias: "Wireless Controller"}, "Wireless Controller"},
		{Device{Address: "E4:17:D8:C5:67:6D", Name: "Wireless Controller", Alias: "E4-17-D8-C5-67-6D"}, "Wireless Controller"},
		{Device{Address: "E4:17:D8:C5:67:6D", Alias: "e4-17-d8-c5-67-6d"}, ""},
		{Device{Address: "E4:17:D8:C5:67:6D", Name: "Wireless Controller"}, "Wireless Controller"},
	} {
		if got := tc.d.DisplayName(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.d, got, tc.want)
		}
	}
}
