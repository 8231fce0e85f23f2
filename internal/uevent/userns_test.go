// SPDX-License-Identifier: Apache-2.0

package uevent

import "testing"

func TestIdentityUIDMap(t *testing.T) {
	for in, want := range map[string]bool{
		"         0          0 4294967295\n": true,  // this machine's and any host's
		"         0     100000      65536\n": false, // a rootless container
		"         0          0      65536\n": false, // a namespace mapping part of the range
		"0 0 1000\n1000 1000 4294966295\n":   false,
	} {
		got, err := isIdentityUIDMap(in)
		if err != nil || got != want {
			t.Errorf("isIdentityUIDMap(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "\n", "0 0\n"} {
		if _, err := isIdentityUIDMap(bad); err == nil {
			t.Errorf("isIdentityUIDMap(%q) gave no error", bad)
		}
	}
	// The tests that receive real events run here, so this process must be
	// in the initial namespace.
	if ok, err := InInitialUserNamespace(); err != nil || !ok {
		t.Errorf("InInitialUserNamespace() = %v, %v on the machine that receives uevents", ok, err)
	}
}
