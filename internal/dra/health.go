// SPDX-License-Identifier: Apache-2.0

package dra

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/dynamic-resource-allocation/kubeletplugin"
)

// healthCheckTimeout is the lease every device's health carries
// (kubeletplugin.DeviceHealth.HealthCheckTimeout): a device the kubelet
// hears nothing about for this long is shown as Unknown in the pods using
// it. healthResend is how often an unchanged report is sent again: three
// times a lease, so that one late or lost resend on a loaded node does not
// turn a pod's devices Unknown, while a driver that stops reporting shows
// as Unknown within the lease.
const (
	healthCheckTimeout = 60 * time.Second
	healthResend       = healthCheckTimeout / 3
)

// healthFeed derives the kubelet's device health stream (KEP-4680) from the
// devices the slice holds, so that one fact, "this device is unfit", shows
// both to the scheduler (taints) and in the pod's allocatedResourcesStatus
// (health, with the operator's Device.Problem as the message).
type healthFeed struct {
	pool    string
	mu      sync.Mutex
	report  *kubeletplugin.DeviceHealthReport
	changed chan struct{} // closed and replaced whenever report changes
}

func newHealthFeed(pool string) *healthFeed {
	return &healthFeed{pool: pool, changed: make(chan struct{})}
}

// deviceHealth is what the kubelet is told about one device: Unhealthy
// with the operator's Problem; without one, Unhealthy naming the taint
// keys when the device is Tainted; Healthy otherwise.
func deviceHealth(pool string, d Device) kubeletplugin.DeviceHealth {
	dh := kubeletplugin.DeviceHealth{PoolName: pool, DeviceName: d.Name, Health: kubeletplugin.HealthStatusHealthy, HealthCheckTimeout: healthCheckTimeout}
	switch {
	case d.Problem != "":
		dh.Health, dh.Message = kubeletplugin.HealthStatusUnhealthy, d.Problem
	case d.Tainted():
		var keys []string
		for _, t := range d.Taints {
			keys = append(keys, t.Key)
		}
		dh.Health, dh.Message = kubeletplugin.HealthStatusUnhealthy, "tainted: "+strings.Join(keys, ", ")
	}
	return dh
}

// publish records the devices the slice holds now: after a write, and
// after a set whose slice did not change (a Problem is not in the slice,
// so it can change alone). Watchers are woken only when some device's
// health or message changed.
func (h *healthFeed) publish(devices []Device) {
	report := &kubeletplugin.DeviceHealthReport{}
	for _, d := range devices {
		report.Devices = append(report.Devices, deviceHealth(h.pool, d))
	}
	slices.SortFunc(report.Devices, func(a, b kubeletplugin.DeviceHealth) int { return strings.Compare(a.DeviceName, b.DeviceName) })
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.report != nil && slices.Equal(h.report.Devices, report.Devices) {
		return
	}
	h.report = report
	close(h.changed)
	h.changed = make(chan struct{})
}

func (h *healthFeed) current() (*kubeletplugin.DeviceHealthReport, <-chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.report, h.changed
}

// WatchHealthStatus implements kubeletplugin.DRAPlugin: it sends the health
// of the published devices now, whenever it changes, and every
// healthResend, each device stamped with the time of sending, until ctx
// ends.
func (d *Driver) WatchHealthStatus(ctx context.Context, reports chan<- kubeletplugin.DeviceHealthReport) error {
	return d.health.watch(ctx, reports, healthResend)
}

// watch is WatchHealthStatus with the resend period as a parameter.
func (h *healthFeed) watch(ctx context.Context, reports chan<- kubeletplugin.DeviceHealthReport, resend time.Duration) error {
	ticker := time.NewTicker(resend)
	defer ticker.Stop()
	for {
		report, changed := h.current()
		if report != nil {
			fresh := kubeletplugin.DeviceHealthReport{Devices: slices.Clone(report.Devices)}
			now := time.Now()
			for i := range fresh.Devices {
				fresh.Devices[i].LastUpdated = now
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
