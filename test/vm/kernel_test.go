// SPDX-License-Identifier: Apache-2.0

package vm

import "testing"

// Output of apt-cache on Debian 12 with bookworm-backports, 2026-11.
func TestResolveParsing(t *testing.T) {
	depends := []byte("linux-image-amd64\n  Depends: linux-image-6.12.95+deb12-amd64\n")
	if got := imagePackage(depends); got != "linux-image-6.12.95+deb12-amd64" {
		t.Errorf("imagePackage = %q", got)
	}
	if got := imagePackage([]byte("linux-image-amd64\n  Depends: <linux-image-6.1.0-57-amd64-unsigned>\n")); got != "" {
		t.Errorf("imagePackage of a virtual package = %q, want none", got)
	}
	policy := []byte("linux-image-6.12.95+deb12-amd64:\n  Installed: (none)\n  Candidate: 6.12.95-1~bpo12+1\n  Version table:\n")
	if got := candidate(policy); got != "6.12.95-1~bpo12+1" {
		t.Errorf("candidate = %q", got)
	}
	if got := candidate([]byte("x:\n  Installed: (none)\n  Candidate: (none)\n")); got != "" {
		t.Errorf("candidate of (none) = %q, want none", got)
	}
}
