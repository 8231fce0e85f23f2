// SPDX-License-Identifier: Apache-2.0

package dra

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
	resourceapi "k8s.io/api/resource/v1"
	"tags.cncf.io/container-device-interface/pkg/cdi"
)

// mountTmpfs mounts a tmpfs of size bytes at dir, unmounted when the test
// ends. The tests run as root (README).
func mountTmpfs(t *testing.T, dir string, size int) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size="+strconv.Itoa(size)); err != nil {
		t.Fatalf("mount a small tmpfs at %s (the tests run as root): %v", dir, err)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
}

// fill writes a file into dir until its filesystem is full, and returns
// the function that frees the space again.
func fill(t *testing.T, dir string) (free func()) {
	t.Helper()
	filler := filepath.Join(dir, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	block := make([]byte, 512)
	for {
		if _, err := f.Write(block); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
	}
	f.Close()
	return func() {
		if err := os.Remove(filler); err != nil {
			t.Fatal(err)
		}
	}
}

func listDir(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func TestFullCDIDirFailsCleanlyAndRecovers(t *testing.T) {
	f := newFixtureWith(t, func(o Options) { mountTmpfs(t, o.CDIDir, 64<<10) })
	held := claim("held", "held", []resourceapi.DeviceRequestAllocationResult{alloc("r", testDriver, "one")})
	if err := f.prepare(held)["held"].Err; err != nil {
		t.Fatal(err)
	}
	heldSpec, err := os.ReadFile(f.specPath("held"))
	if err != nil {
		t.Fatal(err)
	}
	free := fill(t, f.opts.CDIDir)

	next := claim("next", "next", []resourceapi.DeviceRequestAllocationResult{alloc("r", testDriver, "two")})
	err = f.prepare(next)["next"].Err
	if err == nil || !strings.Contains(err.Error(), "CDI spec") || !strings.Contains(err.Error(), "no space left on device") {
		t.Fatalf("prepare onto a full CDI directory answered %v, want an error naming the CDI spec and the full disk", err)
	}
	if got, want := listDir(t, f.opts.CDIDir), []string{"filler", filepath.Base(f.specPath("held"))}; !slices.Equal(got, want) {
		t.Errorf("the full CDI directory holds %q after the failed prepare, want %q (nothing half-written)", got, want)
	}
	if now, _ := os.ReadFile(f.specPath("held")); !bytes.Equal(now, heldSpec) {
		t.Error("the held claim's spec changed")
	}
	if rec := f.driver.cp.body.Claims["held"]; rec == nil || rec.Phase != phaseCompleted {
		t.Errorf("the held claim's record is %+v, want it completed", rec)
	}
	if _, ok := f.driver.cp.body.Claims["next"]; ok {
		t.Error("the failed claim is recorded")
	}

	free()
	if err := f.prepare(next)["next"].Err; err != nil {
		t.Fatalf("prepare once there is space again: %v", err)
	}
	if _, err := cdi.ReadSpec(f.specPath("next"), 0); err != nil {
		t.Fatalf("the spec written once there is space again: %v", err)
	}
}
