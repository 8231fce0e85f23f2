// SPDX-License-Identifier: Apache-2.0

//go:build kubelettier

package kubelettier

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/liken-sh/operators/internal/bluetooth"
	"github.com/liken-sh/operators/test/bluezsim"
)

// padHealth is the health of the consumer container's claim "dev" in the
// pod's status as the kubelet wrote it (KEP-4680: containerStatuses[].
// allocatedResourcesStatus, the resource named "claim:dev"), its message
// ("" when none), and the whole allocatedResourcesStatus as JSON for the
// log.
func padHealth(p *corev1.Pod) (corev1.ResourceHealthStatus, string, string) {
	for _, c := range p.Status.ContainerStatuses {
		if c.Name != "consumer" {
			continue
		}
		raw, _ := json.Marshal(c.AllocatedResourcesStatus)
		for _, rs := range c.AllocatedResourcesStatus {
			if rs.Name != "claim:dev" || len(rs.Resources) != 1 {
				continue
			}
			msg := ""
			if m := rs.Resources[0].Message; m != nil {
				msg = *m
			}
			return rs.Resources[0].Health, msg, string(raw)
		}
		return "", "", string(raw)
	}
	return "", "", "no consumer container status"
}

// waitPadHealth polls the pod until the kubelet shows the claim's device
// with health and message, and returns the status it showed.
func waitPadHealth(t testing.TB, ctx context.Context, pod string, health corev1.ResourceHealthStatus, message string, timeout time.Duration) string {
	t.Helper()
	var shown string
	poll(t, fmt.Sprintf("%s's claim shown %s %q in its container status", pod, health, message), timeout, func() (bool, string) {
		h, m, raw := padHealth(getPod(t, ctx, "default", pod))
		shown = raw
		return h == health && m == message, raw
	})
	return shown
}

// padSleeps puts the consumed gamepad to sleep and wakes it, and reads
// what the real kubelet shows in the consumer's pod status
// (allocatedResourcesStatus, KEP-4680: the ResourceHealthStatus and
// ResourceHealthStatusMessage features, beta and on by default in 1.37,
// so the tier sets no feature gate). The pad first reports its charge as
// a GATT battery does while connected; BlueZ's battery plugin drops
// Battery1 with the link, so the sleeping pad is shown with the charge
// last seen. The consumer tolerates the disconnected taint, so it keeps
// running while its device is Unhealthy.
func padSleeps(t *testing.T, ctx context.Context) {
	const pod = "gamepad2"
	sim, err := bluezsim.Attach("unix:path="+busSocket, "")
	must(t, err)
	defer sim.Stop()
	before := restarts(getPod(t, ctx, "default", pod))

	// The kubelet restarted a step ago: its health stream from the
	// driver comes back with the registration.
	shown := waitPadHealth(t, ctx, pod, corev1.ResourceHealthStatusHealthy, "", 2*time.Minute)
	t.Logf("awake: allocatedResourcesStatus %s", shown)

	must(t, sim.SetBattery(AdapterName, padAddress, 40))
	// The operator's pass that read the charge also wrote the
	// Peripheral's status, which shows it.
	poll(t, "the pad's charge read by the operator", time.Minute, func() (bool, string) {
		out := kubectl(t, ctx, "get", "peripherals", "-o", `jsonpath={range .items[*]}{.status.address}={.status.battery.percentage}{"\n"}{end}`)
		return strings.Contains(out, padAddress+"=40"), out
	})

	asleep := time.Now()
	must(t, sim.SetBattery(AdapterName, padAddress, -1))
	must(t, sim.Disconnect(AdapterName, padAddress, bluezsim.ReasonRemote))
	want := bluetooth.ProblemAsleep + " (battery 40% when last connected)"
	shown = waitPadHealth(t, ctx, pod, corev1.ResourceHealthStatusUnhealthy, want, 2*time.Minute)
	t.Logf("FIGURE pad asleep → its consumer's container status Unhealthy %q in %s", want, time.Since(asleep).Round(time.Millisecond))
	t.Logf("asleep: allocatedResourcesStatus %s", shown)
	jp := kubectl(t, ctx, "get", "pod", pod, "-o", `jsonpath={.status.containerStatuses[0].allocatedResourcesStatus}`)
	t.Logf("asleep: kubectl get pod %s -o jsonpath={.status.containerStatuses[0].allocatedResourcesStatus}: %s", pod, jp)
	desc := kubectl(t, ctx, "describe", "pod", pod)
	t.Logf("asleep: kubectl describe pod %s mentions the health: %v (Unhealthy) / %v (asleep)", pod, strings.Contains(desc, "Unhealthy"), strings.Contains(desc, "asleep"))
	if p := getPod(t, ctx, "default", pod); p.Status.Phase != corev1.PodRunning || restarts(p)["consumer"] != before["consumer"] {
		t.Errorf("the consumer, tolerating the disconnected taint, did not keep running while its pad slept: %s", describe(p))
	}

	woke := time.Now()
	must(t, sim.Connect(AdapterName, padAddress))
	shown = waitPadHealth(t, ctx, pod, corev1.ResourceHealthStatusHealthy, "", 2*time.Minute)
	t.Logf("FIGURE pad woken → its consumer's container status Healthy in %s", time.Since(woke).Round(time.Millisecond))
	t.Logf("awake again: allocatedResourcesStatus %s", shown)
}
