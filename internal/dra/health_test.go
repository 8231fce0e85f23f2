// SPDX-License-Identifier: Apache-2.0

package dra

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"k8s.io/dynamic-resource-allocation/kubeletplugin"
)

func TestDeviceHealth(t *testing.T) {
	disconnected := Taint{Key: "test.liken.sh/disconnected", Effect: TaintNoExecute}
	noNode := Taint{Key: "test.liken.sh/no-input-node", Effect: TaintNoSchedule}
	info := Taint{Key: "test.liken.sh/note", Effect: TaintNone}
	for _, tc := range []struct {
		name    string
		d       Device
		health  kubeletplugin.HealthStatus
		message string
	}{
		{"untainted", Device{Name: "a"}, kubeletplugin.HealthStatusHealthy, ""},
		{"informational taint only", Device{Name: "a", Taints: []Taint{info}}, kubeletplugin.HealthStatusHealthy, ""},
		{"tainted, no problem given", Device{Name: "a", Taints: []Taint{disconnected, noNode}}, kubeletplugin.HealthStatusUnhealthy,
			"tainted: test.liken.sh/disconnected, test.liken.sh/no-input-node"},
		{"tainted with a problem", Device{Name: "a", Taints: []Taint{disconnected, noNode}, Problem: "asleep (battery 40%)"}, kubeletplugin.HealthStatusUnhealthy,
			"asleep (battery 40%)"},
		{"a problem without a taint", Device{Name: "a", Problem: "speaker off"}, kubeletplugin.HealthStatusUnhealthy, "speaker off"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := deviceHealth("node-1", tc.d)
			if got.Health != tc.health || got.Message != tc.message {
				t.Errorf("health %s %q, want %s %q", got.Health, got.Message, tc.health, tc.message)
			}
			if got.PoolName != "node-1" || got.DeviceName != "a" {
				t.Errorf("device %s/%s, want node-1/a", got.PoolName, got.DeviceName)
			}
			if got.HealthCheckTimeout != healthCheckTimeout {
				t.Errorf("HealthCheckTimeout %s, want %s", got.HealthCheckTimeout, healthCheckTimeout)
			}
		})
	}
}

// The lease outlasts two resends, and is whole seconds (the wire carries
// seconds).
func TestHealthLeaseCoversResends(t *testing.T) {
	if healthResend*2 >= healthCheckTimeout {
		t.Errorf("a report is resent every %s under a lease of %s: one late resend turns every device Unknown", healthResend, healthCheckTimeout)
	}
	if healthCheckTimeout%time.Second != 0 || healthCheckTimeout < time.Second {
		t.Errorf("lease %s is not whole seconds", healthCheckTimeout)
	}
}

func TestProblemValidated(t *testing.T) {
	for _, tc := range []struct {
		problem string
		err     string // "" for accepted
	}{
		{"asleep (battery 40%)", ""},
		{"écran débranché", ""},
		{strings.Repeat("x", MaxProblemBytes), ""},
		{strings.Repeat("x", MaxProblemBytes+1), "longer than"},
		{"two\nlines", "unprintable"},
		{"bad \xff byte", "UTF-8"},
	} {
		err := Device{Name: "a", Problem: tc.problem}.validate()
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("problem %.20q refused: %v", tc.problem, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("problem %.20q: error %v, want one saying %q", tc.problem, err, tc.err)
		}
	}
}

// next receives one report, failing after a generous deadline.
func next(t *testing.T, reports <-chan kubeletplugin.DeviceHealthReport) kubeletplugin.DeviceHealthReport {
	t.Helper()
	select {
	case r := <-reports:
		return r
	case <-time.After(time.Hour):
		t.Fatal("no health report")
		return kubeletplugin.DeviceHealthReport{}
	}
}

func healthOf(r kubeletplugin.DeviceHealthReport, name string) (kubeletplugin.HealthStatus, string) {
	for _, d := range r.Devices {
		if d.DeviceName == name {
			return d.Health, d.Message
		}
	}
	return "", "absent"
}

// A Problem that changes while the slice stays the same (it is not in the
// slice) reaches the kubelet's stream at once, without a slice write; a
// set that changes nothing sends nothing before the resend.
func TestProblemAloneReachesHealthStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, rec := startPublisher(t, 50*time.Millisecond, time.Second)
		feed := newHealthFeed("node-1")
		p.onWrite = feed.publish
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		reports := make(chan kubeletplugin.DeviceHealthReport)
		done := make(chan error)
		go func() { done <- feed.watch(ctx, reports, time.Minute) }()
		defer func() { cancel(); <-done }()

		pad := Device{Name: "pad", Taints: []Taint{{Key: "test.liken.sh/disconnected", Effect: TaintNoExecute}}}
		p.set([]Device{pad})
		r := next(t, reports)
		if h, msg := healthOf(r, "pad"); h != kubeletplugin.HealthStatusUnhealthy || msg != "tainted: test.liken.sh/disconnected" {
			t.Fatalf("first report: %s %q", h, msg)
		}
		sent := time.Now()
		if r.Devices[0].LastUpdated.IsZero() {
			t.Error("report has no LastUpdated")
		}

		pad.Problem = "asleep (battery 40%)"
		p.set([]Device{pad})
		r = next(t, reports)
		if h, msg := healthOf(r, "pad"); h != kubeletplugin.HealthStatusUnhealthy || msg != "asleep (battery 40%)" {
			t.Fatalf("after the problem was given: %s %q", h, msg)
		}
		if took := time.Since(sent); took >= time.Minute {
			t.Errorf("the new message came with the resend (%s), not with the change", took)
		}
		if n := rec.count(); n != 1 {
			t.Errorf("%d slice writes, want 1: the problem is not in the slice", n)
		}

		// The same set again: nothing until the resend, which repeats
		// the report with a new stamp.
		before := time.Now()
		p.set([]Device{pad})
		r = next(t, reports)
		if waited := time.Since(before); waited < time.Minute-time.Second {
			t.Errorf("an unchanged set sent a report after %s, before the resend", waited)
		}
		if h, msg := healthOf(r, "pad"); h != kubeletplugin.HealthStatusUnhealthy || msg != "asleep (battery 40%)" {
			t.Errorf("resent report: %s %q", h, msg)
		}
		if !r.Devices[0].LastUpdated.After(before) {
			t.Errorf("resent report stamped %s, not after %s", r.Devices[0].LastUpdated, before)
		}

		// Awake: connected, untainted, no problem.
		p.set([]Device{{Name: "pad"}})
		r = next(t, reports)
		if h, msg := healthOf(r, "pad"); h != kubeletplugin.HealthStatusHealthy || msg != "" {
			t.Errorf("after wake: %s %q, want Healthy with no message", h, msg)
		}
		if n := rec.count(); n != 2 {
			t.Errorf("%d slice writes, want 2 (the taint went)", n)
		}
	})
}

// SetDevices refuses a device whose problem the API would refuse, naming it.
func TestSetDevicesRefusesBadProblem(t *testing.T) {
	p := newPublisher("node-1", 0, 0, nil, nil)
	_, err := p.apiDevices([]Device{{Name: "ok"}, {Name: "pad", Problem: "a\x00b"}})
	if err == nil || !strings.Contains(err.Error(), `device "pad"`) {
		t.Errorf("error %v, want one naming device pad", err)
	}
}
