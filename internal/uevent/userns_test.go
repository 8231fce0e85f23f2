// SPDX-License-Identifier: Apache-2.0

package uevent

import (
	"strings"
	"testing"
)

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

// FuzzIsIdentityUIDMap: /proc/self/uid_map is the kernel's text
// (kernel/user_namespace.c, uid_m_show: "inside outside count" lines).
// Whatever it holds, only the initial namespace's single identity line
// is taken as the initial namespace, and a line of another shape is an
// error.
func FuzzIsIdentityUIDMap(f *testing.F) {
	f.Add("         0          0 4294967295\n")
	f.Add("0 1000 1\n1 100000 65536\n")
	f.Add("0 0\n")
	f.Add("")
	f.Fuzz(func(t *testing.T, data string) {
		initial, err := isIdentityUIDMap(data)
		if err != nil && initial {
			t.Fatalf("%q: initial and an error", data)
		}
		if initial && strings.Join(strings.Fields(data), " ") != "0 0 4294967295" {
			t.Fatalf("%q taken as the initial namespace", data)
		}
	})
}
