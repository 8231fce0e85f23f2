// SPDX-License-Identifier: Apache-2.0

package dra

import (
	"os"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"tags.cncf.io/container-device-interface/pkg/cdi"
	cdispec "tags.cncf.io/container-device-interface/specs-go"
)

// RefreshEdits rewrites the spec of a claim whose device's edits changed,
// and only that one; the new edits survive a restart (the checkpoint has
// them) and a wiped CDI directory (rebuilt from it).
func TestRefreshEdits(t *testing.T) {
	f := newFixture(t)
	for _, uid := range []string{"uid-a", "uid-b"} {
		dev := "dev-" + uid[len(uid)-1:]
		if res := f.prepare(claim(uid, uid, []resourceapi.DeviceRequestAllocationResult{alloc("r", testDriver, dev)}))[types.UID(uid)]; res.Err != nil {
			t.Fatal(res.Err)
		}
	}
	moved := ContainerEdits{DeviceNodes: []*cdispec.DeviceNode{{Path: "/dev/bus/usb/001/006", Type: "c", Major: 189, Minor: 5}}}
	n, err := f.driver.RefreshEdits(f.ctx, func(device string, prepared ContainerEdits) (ContainerEdits, bool) {
		if device == "dev-b" {
			return prepared, true // unchanged: no write
		}
		return moved, true
	})
	if err != nil || n != 1 {
		t.Fatalf("RefreshEdits rewrote %d claims (%v), want 1", n, err)
	}
	check := func(when string) {
		t.Helper()
		for uid, want := range map[string]string{"uid-a": "/dev/bus/usb/001/006", "uid-b": "/dev/input/event7"} {
			spec, err := cdi.ReadSpec(f.specPath(uid), 0)
			if err != nil {
				t.Fatalf("%s: %v", when, err)
			}
			if got := spec.GetDevice(uid + "-dev-" + uid[len(uid)-1:]).ContainerEdits.DeviceNodes[0].Path; got != want {
				t.Errorf("%s: claim %s names %s, want %s", when, uid, got, want)
			}
		}
	}
	check("after the refresh")
	n, err = f.driver.RefreshEdits(f.ctx, func(device string, prepared ContainerEdits) (ContainerEdits, bool) {
		return prepared, device == "dev-a"
	})
	if err != nil || n != 0 {
		t.Errorf("a refresh with nothing new rewrote %d (%v)", n, err)
	}
	f.restart()
	if err := os.RemoveAll(f.opts.CDIDir); err != nil {
		t.Fatal(err)
	}
	f.restart()
	check("after a restart over a wiped CDI directory")
}

// RefreshClaimEdits tells current which claim each device is prepared
// for, and rewrites only the claim whose edits it changed.
func TestRefreshClaimEdits(t *testing.T) {
	f := newFixture(t)
	for _, uid := range []string{"uid-a", "uid-b"} {
		dev := "dev-" + uid[len(uid)-1:]
		if res := f.prepare(claim(uid, uid, []resourceapi.DeviceRequestAllocationResult{alloc("r", testDriver, dev)}))[types.UID(uid)]; res.Err != nil {
			t.Fatal(res.Err)
		}
	}
	asked := map[types.UID]string{}
	n, err := f.driver.RefreshClaimEdits(f.ctx, func(claim types.UID, device string, prepared ContainerEdits) (ContainerEdits, bool) {
		asked[claim] = device
		if claim != "uid-a" {
			return prepared, false
		}
		return ContainerEdits{Env: []string{"CLAIM=" + string(claim)}}, true
	})
	if err != nil || n != 1 {
		t.Fatalf("RefreshClaimEdits rewrote %d claims (%v), want 1", n, err)
	}
	if asked["uid-a"] != "dev-a" || asked["uid-b"] != "dev-b" || len(asked) != 2 {
		t.Errorf("current was asked %v, want uid-a's dev-a and uid-b's dev-b", asked)
	}
	spec, err := cdi.ReadSpec(f.specPath("uid-a"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if env := spec.GetDevice("uid-a-dev-a").ContainerEdits.Env; len(env) != 1 || env[0] != "CLAIM=uid-a" {
		t.Errorf("uid-a's spec has env %q, want [CLAIM=uid-a]", env)
	}
}

// A refresh never moves a device between having edits and having none:
// the kubelet holds the CDI IDs it was answered at prepare, so a device
// with an ID stays in the spec and one without stays out of it.
func TestRefreshKeepsWhetherADeviceHasEdits(t *testing.T) {
	f := newFixture(t)
	c := claim("uid-c", "uid-c", []resourceapi.DeviceRequestAllocationResult{alloc("a", testDriver, "dev-c"), alloc("b", testDriver, "bare-c")})
	if res := f.prepare(c)["uid-c"]; res.Err != nil {
		t.Fatal(res.Err)
	}
	n, err := f.driver.RefreshEdits(f.ctx, func(device string, prepared ContainerEdits) (ContainerEdits, bool) {
		if device == "dev-c" {
			return ContainerEdits{}, true
		}
		return ContainerEdits{Env: []string{"LATE=1"}}, true
	})
	if err != nil || n != 0 {
		t.Fatalf("RefreshEdits rewrote %d claims (%v), want none", n, err)
	}
	spec, err := cdi.ReadSpec(f.specPath("uid-c"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(spec.Devices) != 1 || spec.GetDevice("uid-c-dev-c") == nil {
		t.Fatalf("spec devices %+v, want only uid-c-dev-c as prepared", spec.Devices)
	}
}
