// SPDX-License-Identifier: Apache-2.0

package dra

import (
	"os"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
)

// During a rolling update the old and the new pod serve side by side from
// the same plugin directory, and the kubelet may prepare through one and
// unprepare through the other.
func TestRollingUpdateSharesState(t *testing.T) {
	old := newFixture(t)
	old.driver.Stop()
	old.opts.PodUID = "pod-old"
	old.start()

	next := &fixture{t: t, ctx: old.ctx, opts: old.opts}
	next.opts.PodUID = "pod-new"
	next.start()
	t.Cleanup(func() { next.driver.Stop() })
	if old.driver.RegistrarSocket() == next.driver.RegistrarSocket() {
		t.Fatal("both pods registered on the same socket")
	}
	for _, s := range []string{old.driver.RegistrarSocket(), next.driver.RegistrarSocket()} {
		if _, err := os.Stat(s); err != nil {
			t.Fatalf("registration socket: %v", err)
		}
	}

	a := claim("a", "a", []resourceapi.DeviceRequestAllocationResult{alloc("r", testDriver, "one")})
	if err := old.prepare(a)["a"].Err; err != nil {
		t.Fatal(err)
	}
	// The new pod knows the claim the old one prepared: the device is held.
	b := claim("b", "b", []resourceapi.DeviceRequestAllocationResult{alloc("r", testDriver, "one")})
	if err := next.prepare(b)["b"].Err; err == nil {
		t.Fatal("the new pod granted a device the old pod had prepared")
	}
	if err := next.unprepare("a")["a"]; err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(old.specPath("a")); !os.IsNotExist(err) {
		t.Fatal("unprepare through the new pod left the spec")
	}
	// And the old pod sees the release.
	if err := old.prepare(b)["b"].Err; err != nil {
		t.Fatalf("device still held after unprepare in the other pod: %v", err)
	}
}
