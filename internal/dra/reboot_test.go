// SPDX-License-Identifier: Apache-2.0

package dra

import (
	"bytes"
	"os"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
)

// TestRebootRebuildsSpecsOfPreparedClaimsOnly: the node reboots (a new
// kernel boot ID, and /var/run/cdi is a tmpfs that came back empty) while
// the kubelet still holds one claim prepared and has unprepared another.
// At start the driver writes the prepared claim's spec again, byte for
// byte, writes nothing for the unprepared one, removes a spec of its own
// that no prepared claim accounts for, leaves another driver's spec alone,
// records the new boot ID, and answers the kubelet's repeated prepare from
// the checkpoint without preparing the device again.
func TestRebootRebuildsSpecsOfPreparedClaimsOnly(t *testing.T) {
	f := newFixture(t)
	kept := claim("kept", "kept", []resourceapi.DeviceRequestAllocationResult{alloc("r", testDriver, "dev-a")})
	gone := claim("gone", "gone", []resourceapi.DeviceRequestAllocationResult{alloc("r", testDriver, "dev-b")})
	res := f.prepare(kept, gone)
	for uid, r := range res {
		if r.Err != nil {
			t.Fatalf("prepare %s: %v", uid, r.Err)
		}
	}
	before, err := os.ReadFile(f.specPath("kept"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.unprepare("gone")["gone"]; err != nil {
		t.Fatal(err)
	}
	f.driver.Stop()

	// The reboot: a new boot ID, and the tmpfs empty. Something then puts
	// back a spec of this driver for a claim it does not hold (a restored
	// backup, a stale copy) and another driver writes its own.
	if err := os.WriteFile(f.opts.BootIDPath, []byte("boot-2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(f.opts.CDIDir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(f.opts.CDIDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f.specPath("stale"), before, 0o644); err != nil {
		t.Fatal(err)
	}
	other := f.opts.CDIDir + "/other.liken.sh-kept.json"
	if err := os.WriteFile(other, []byte(`{"cdiVersion":"0.6.0","kind":"other.liken.sh/dev","devices":[]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	calls := f.calls
	f.start()

	after, err := os.ReadFile(f.specPath("kept"))
	if err != nil {
		t.Fatalf("the prepared claim's spec was not rebuilt after the reboot: %v", err)
	}
	if !bytes.Equal(after, before) {
		t.Errorf("the rebuilt spec differs from the one the pod was started with:\nbefore %s\nafter  %s", before, after)
	}
	for _, uid := range []string{"gone", "stale"} {
		if _, err := os.Stat(f.specPath(uid)); !os.IsNotExist(err) {
			t.Errorf("a spec for %s, which no prepared claim accounts for, after the reboot: %v", uid, err)
		}
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("another driver's spec was touched: %v", err)
	}
	f.driver.mu.Lock()
	boot, n := f.driver.cp.body.BootID, len(f.driver.cp.body.Claims)
	f.driver.mu.Unlock()
	if boot != "boot-2" || n != 1 {
		t.Errorf("checkpoint after the reboot: boot ID %q with %d claims, want boot-2 with 1", boot, n)
	}
	again := f.prepare(kept)["kept"]
	if again.Err != nil || again.Devices[0].CDIDeviceIDs[0] != res["kept"].Devices[0].CDIDeviceIDs[0] {
		t.Fatalf("repeated prepare after the reboot answered %+v, want %+v", again, res["kept"])
	}
	if f.calls != calls {
		t.Errorf("the device was prepared again (%d calls); the checkpoint should have answered", f.calls-calls)
	}
}
