// SPDX-License-Identifier: Apache-2.0

package dra

import (
	"context"
	"strings"
	"sync"
	"time"

	"k8s.io/dynamic-resource-allocation/kubeletplugin"
)

// healthResend is how often an unchanged health report is sent again; the
// kubelet treats a device not refreshed within 30 s as of unknown health.
const healthResend = 20 * time.Second

// healthFeed derives the kubelet's device health stream (KEP-4680) from the
// published taints, so that one fact, "this device is unfit", shows both to
// the scheduler and in the pod's allocatedResourcesStatus.
type healthFeed struct {
	pool    string
	mu      sync.Mutex
	report  *kubeletplugin.DeviceHealthReport
	changed chan struct{} // closed and replaced on every publish
}

func newHealthFeed(pool string) *healthFeed {
	return &healthFeed{pool: pool, changed: make(chan struct{})}
}

// publish records the devices of a slice write.
func (h *healthFeed) publish(devices []Device) {
	now := time.Now()
	report := &kubeletplugin.DeviceHealthReport{}
	for _, d := range devices {
		dh := kubeletplugin.DeviceHealth{PoolName: h.pool, DeviceName: d.Name, Health: kubeletplugin.HealthStatusHealthy, LastUpdated: now}
		if d.Tainted() {
			dh.Health = kubeletplugin.HealthStatusUnhealthy
			var keys []string
			for _, t := range d.Taints {
				keys = append(keys, t.Key)
			}
			dh.Message = "tainted: " + strings.Join(keys, ", ")
		}
		report.Devices = append(report.Devices, dh)
	}
	h.mu.Lock()
	h.report = report
	close(h.changed)
	h.changed = make(chan struct{})
	h.mu.Unlock()
}

func (h *healthFeed) current() (*kubeletplugin.DeviceHealthReport, <-chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.report, h.changed
}

// WatchHealthStatus implements kubeletplugin.DRAPlugin: it sends the health
// of the published devices now, after every slice write, and every
// healthResend, until ctx ends.
func (d *Driver) WatchHealthStatus(ctx context.Context, reports chan<- kubeletplugin.DeviceHealthReport) error {
	ticker := time.NewTicker(healthResend)
	defer ticker.Stop()
	for {
		report, changed := d.health.current()
		if report != nil {
			fresh := *report
			fresh.Devices = append([]kubeletplugin.DeviceHealth(nil), report.Devices...)
			for i := range fresh.Devices {
				fresh.Devices[i].LastUpdated = time.Now()
			}
			select {
			case <-ctx.Done():
				return nil
			case reports <- fresh:
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		case <-ticker.C:
		}
	}
}
