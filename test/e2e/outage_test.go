// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"

	"github.com/liken-sh/operators/test/e2e/kubelet"
	"github.com/liken-sh/operators/test/e2e/testdriver"
)

// apiOutage is how long the API server stays down: long enough for every
// client-go backoff and the slice controller's retries to run several
// rounds.
const apiOutage = 60 * time.Second

// TestAPIServerOutage stops the real API server for a minute under a
// running driver: a kubelet repeating its prepare for a claim already
// prepared is answered from the checkpoint (its CDI spec rebuilt after a
// wipe), a device going away meanwhile is published as tainted once the
// API server is back, the driver never stops, and a new claim allocates
// unprepares afterwards.
func TestAPIServerOutage(t *testing.T) {
	n := startDriverNode(t)
	ctx, cluster, client, opts, driver := n.ctx, n.cluster, n.cluster.Client(), n.opts, n.driver
	waitForSlice(t, ctx, cluster, func(s *resourceapi.ResourceSlice) bool { return len(s.Spec.Devices) == 2 })
	blue := create(t, ctx, cluster, testdriver.ClaimForColor("default", "blue", "blue", ""), "player-blue")
	kl := kubelet.New(client, opts.RegistrarDir)
	t.Cleanup(func() { kl.Close() })
	plugin, err := kl.Discover(ctx, testdriver.Name)
	if err != nil {
		t.Fatal(err)
	}
	first := prepareOK(t, ctx, plugin, blue)
	spec := filepath.Join(opts.CDIDir, testdriver.Name+"-"+string(blue.UID)+".json")

	must(t, cluster.StopAPIServer())
	down := time.Now()
	// The node rebooted meanwhile (its tmpfs CDI directory is empty) and
	// the kubelet asks again for the claim it holds.
	must(t, os.RemoveAll(opts.CDIDir))
	again := prepareOK(t, ctx, plugin, blue)
	if again.CdiDeviceIds[0] != first.CdiDeviceIds[0] || again.DeviceName != first.DeviceName {
		t.Fatalf("with the API server down prepare answered %v, before %v", again, first)
	}
	checkSpec(t, spec, first.CdiDeviceIds[0], "/dev/input/event7", "LIKEN_E2E_LED=on")
	// The red pad goes away while nothing can be published.
	gone := slices.Clone(pads)
	gone[1].Gone = true
	must(t, driver.SetPads(gone))
	time.Sleep(apiOutage - time.Since(down))
	select {
	case <-driver.Done():
		t.Fatalf("the driver stopped during the outage: %v", driver.Err())
	default:
	}

	must(t, cluster.StartAPIServer(ctx))
	back := time.Now()
	waitForSlice(t, ctx, cluster, func(s *resourceapi.ResourceSlice) bool {
		return slices.ContainsFunc(s.Spec.Devices, func(d resourceapi.Device) bool {
			return d.Name == "pad-red" && slices.ContainsFunc(d.Taints, func(t resourceapi.DeviceTaint) bool { return t.Key == testdriver.GoneTaint })
		})
	})
	t.Logf("the slice caught up %v after the API server came back", time.Since(back).Round(time.Millisecond))
	select {
	case <-driver.Done():
		t.Fatalf("the driver stopped after the outage: %v", driver.Err())
	default:
	}
	// The pod ends: the kubelet unprepares, which needs no API call.
	resp, err := plugin.Unprepare(ctx, blue)
	if err != nil || resp.Claims[string(blue.UID)].Error != "" {
		t.Fatalf("unprepare after the outage: %v %v", err, resp)
	}
	if _, err := os.Stat(spec); !os.IsNotExist(err) {
		t.Fatalf("the spec is still there after unprepare: %v", err)
	}
}
