// SPDX-License-Identifier: Apache-2.0

package dra

import (
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
	resourceapi "k8s.io/api/resource/v1"
	"tags.cncf.io/container-device-interface/pkg/cdi"
)

// A device whose prepare gives no edits is left out of the spec (the CDI
// library refuses such a device, and with it the whole spec), and the
// kubelet gets no CDI ID for it; a claim of only such devices has no spec.
func TestDeviceWithoutEditsIsNotInTheSpec(t *testing.T) {
	f := newFixture(t)
	mixed := claim("mixed", "mixed", []resourceapi.DeviceRequestAllocationResult{alloc("a", testDriver, "bare"), alloc("b", testDriver, "pad")})
	bare := claim("bare", "bare", []resourceapi.DeviceRequestAllocationResult{alloc("a", testDriver, "bare-2")})
	res := f.prepare(mixed, bare)
	for uid, r := range res {
		if r.Err != nil {
			t.Fatalf("prepare %s: %v", uid, r.Err)
		}
	}
	ids := map[string][]string{}
	for _, d := range res["mixed"].Devices {
		ids[d.DeviceName] = d.CDIDeviceIDs
	}
	if len(ids) != 2 || len(ids["bare"]) != 0 || len(ids["pad"]) != 1 || ids["pad"][0] != "test.liken.sh/dev=mixed-pad" {
		t.Fatalf("kubelet answer's CDI IDs by device %v, want none for bare and one for pad", ids)
	}
	spec, err := cdi.ReadSpec(f.specPath("mixed"), 0)
	if err != nil {
		t.Fatalf("CDI library rejects the spec: %v", err)
	}
	if len(spec.Devices) != 1 || spec.Devices[0].Name != "mixed-pad" {
		t.Fatalf("spec devices %+v, want only mixed-pad", spec.Devices)
	}
	if d := res["bare"].Devices; len(d) != 1 || len(d[0].CDIDeviceIDs) != 0 {
		t.Fatalf("claim of only an edit-less device answered %+v, want one device with no CDI ID", d)
	}
	if _, err := os.Stat(f.specPath("bare")); !os.IsNotExist(err) {
		t.Fatalf("claim of only an edit-less device has a spec file (%v)", err)
	}

	// A restart repairs nothing for it and answers the same again.
	f.restart()
	calls := f.calls
	again := f.prepare(bare)["bare"]
	if again.Err != nil || len(again.Devices) != 1 || len(again.Devices[0].CDIDeviceIDs) != 0 || f.calls != calls {
		t.Fatalf("after a restart the edit-less claim answered %+v (prepared again: %v)", again, f.calls != calls)
	}
	if _, err := os.Stat(f.specPath("bare")); !os.IsNotExist(err) {
		t.Fatalf("a restart wrote a spec for the edit-less claim (%v)", err)
	}
	for uid, err := range f.unprepare("mixed", "bare") {
		if err != nil {
			t.Errorf("unprepare %s: %v", uid, err)
		}
	}
}

// readOnly bind-mounts dir onto itself read-only until the returned
// function is called (or the test ends): removing a file in it then fails
// with EROFS, even for root.
func readOnly(t *testing.T, dir string) (undo func()) {
	t.Helper()
	if err := unix.Mount(dir, dir, "", unix.MS_BIND, ""); err != nil {
		t.Fatalf("bind-mount %s (the tests run as root): %v", dir, err)
	}
	mounted := true
	undo = func() {
		if mounted {
			mounted = false
			if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Cleanup(undo)
	if err := unix.Mount("", dir, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY, ""); err != nil {
		t.Fatalf("remount %s read-only: %v", dir, err)
	}
	return undo
}

// An unprepare whose spec cannot be removed fails, keeps the claim's
// record (a record without its spec would be repaired; a spec without a
// record would be a grant nobody ends), and the next unprepare finishes.
func TestUnprepareKeepsRecordWhenSpecRemovalFails(t *testing.T) {
	f := newFixture(t)
	c := claim("stuck", "stuck", []resourceapi.DeviceRequestAllocationResult{alloc("r", testDriver, "pad")})
	if err := f.prepare(c)["stuck"].Err; err != nil {
		t.Fatal(err)
	}
	writable := readOnly(t, f.opts.CDIDir)
	err := f.unprepare("stuck")["stuck"]
	if err == nil || !strings.Contains(err.Error(), "remove CDI spec") || !strings.Contains(err.Error(), "read-only file system") {
		t.Fatalf("unprepare with an unremovable spec answered %v, want an error naming the spec and why", err)
	}
	if rec := f.driver.cp.body.Claims["stuck"]; rec == nil || rec.Phase != phaseCompleted {
		t.Fatalf("the claim's record after the failed unprepare is %+v, want it kept as prepared", rec)
	}
	// A restart meanwhile keeps it too: the checkpoint on disk holds it.
	f.restart()
	if rec := f.driver.cp.body.Claims["stuck"]; rec == nil {
		t.Fatal("the record is gone after a restart")
	}
	writable()
	if err := f.unprepare("stuck")["stuck"]; err != nil {
		t.Fatalf("the retried unprepare: %v", err)
	}
	if _, err := os.Stat(f.specPath("stuck")); !os.IsNotExist(err) {
		t.Fatalf("spec still there after the retried unprepare (%v)", err)
	}
	if _, ok := f.driver.cp.body.Claims["stuck"]; ok {
		t.Fatal("record still there after the retried unprepare")
	}
}
