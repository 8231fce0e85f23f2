// SPDX-License-Identifier: Apache-2.0

package dra

import (
	"testing"

	resourceapi "k8s.io/api/resource/v1"
)

func TestHoldersFollowPrepareAndUnprepare(t *testing.T) {
	f := newFixture(t)
	changed := 0
	f.driver.opts.OnClaimsChanged = func() { changed++ }
	c := claim("uid-1", "pad", []resourceapi.DeviceRequestAllocationResult{alloc("pad", testDriver, "aa-bb")})
	if res := f.prepare(c)["uid-1"]; res.Err != nil {
		t.Fatal(res.Err)
	}
	if got := f.driver.Holders(); got["aa-bb"] != (ClaimRef{Namespace: "default", Name: "pad"}) || len(got) != 1 {
		t.Fatalf("holders after prepare: %v", got)
	}
	// A failed prepare holds nothing.
	bad := claim("uid-2", "broken", []resourceapi.DeviceRequestAllocationResult{alloc("x", testDriver, "broken")})
	if res := f.prepare(bad)["uid-2"]; res.Err == nil {
		t.Fatal("broken device prepared")
	}
	if _, ok := f.driver.Holders()["broken"]; ok {
		t.Fatal("a failed prepare is reported as holding its device")
	}
	for _, err := range f.unprepare("uid-1") {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := f.driver.Holders(); len(got) != 0 {
		t.Fatalf("holders after unprepare: %v", got)
	}
	if changed != 2 {
		t.Fatalf("OnClaimsChanged called %d times, want 2 (prepare, unprepare)", changed)
	}
}
