// SPDX-License-Identifier: Apache-2.0

package bluetooth

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
	"github.com/google/go-cmp/cmp"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/liken-sh/operators/internal/bluez"
)

const (
	a2dpSink = "0000110b-0000-1000-8000-00805f9b34fb"
	avrcp    = "0000110e-0000-1000-8000-00805f9b34fb"
	hidUUID  = "00001124-0000-1000-8000-00805f9b34fb"
)

// speakerDevice is a paired, trusted loudspeaker that is not connected,
// as BlueZ reports one switched off.
func speakerDevice(addr string) bluez.Device {
	return bluez.Device{Path: dbus.ObjectPath("/org/bluez/hci0/dev_" + strings.ReplaceAll(addr, ":", "_")), Address: addr, Alias: "Kitchen", Paired: true, Bonded: true,
		Trusted: true, Class: 0x240414, UUIDs: []string{a2dpSink, avrcp}}
}

func TestReconnectDefaults(t *testing.T) {
	if DefaultReconnectFirst != 10*time.Second || DefaultReconnectCeiling != 2*time.Minute {
		t.Errorf("defaults %v and %v, want 10s and 2m0s", DefaultReconnectFirst, DefaultReconnectCeiling)
	}
	c := Config{NodeName: "n", Namespace: "ns", KubeClient: fake.NewClientset()}
	if err := c.complete(); err != nil {
		t.Fatal(err)
	}
	if c.ReconnectFirst != 10*time.Second || c.ReconnectCeiling != 2*time.Minute {
		t.Errorf("a Config without them runs with %v and %v, want 10s and 2m0s", c.ReconnectFirst, c.ReconnectCeiling)
	}
}

func TestReconnectable(t *testing.T) {
	spk := speakerDevice("A0:AB:51:33:B7:12")
	for _, c := range []struct {
		what string
		edit func(*bluez.Device)
		want bool
	}{
		{"a paired, trusted speaker switched off", func(*bluez.Device) {}, true},
		{"connected", func(d *bluez.Device) { d.Connected = true }, false},
		{"not trusted", func(d *bluez.Device) { d.Trusted = false }, false},
		{"not paired", func(d *bluez.Device) { d.Paired, d.Bonded = false, false }, false},
		{"no A2DP sink", func(d *bluez.Device) { d.UUIDs = []string{avrcp} }, false},
		{"a gamepad (class and HID)", func(d *bluez.Device) { d.Class, d.UUIDs = 0x002508, []string{hidUUID} }, false},
		{"an A2DP sink that also offers HID", func(d *bluez.Device) { d.UUIDs = append(d.UUIDs, hidUUID) }, false},
		{"an A2DP sink of peripheral class", func(d *bluez.Device) { d.Class = 0x002508 }, false},
	} {
		d := spk
		d.UUIDs = append([]string(nil), spk.UUIDs...)
		c.edit(&d)
		if got := Reconnectable(d); got != c.want {
			t.Errorf("%s: Reconnectable = %v, want %v", c.what, got, c.want)
		}
	}
}

// TestReconnectSchedule: with the real defaults, a held speaker that is
// off is connected at once, then after waits of 10 s, 20 s, 40 s, 80 s
// and 2 min, 2 min, ... after each failure, and not a millisecond
// earlier; a success, and a new claim, start the waits over; nothing
// more once the claim is gone; and a late outcome of an ended episode
// schedules nothing.
func TestReconnectSchedule(t *testing.T) {
	s := newReconnectSchedule(DefaultReconnectFirst, DefaultReconnectCeiling)
	spk := speakerDevice("A0:AB:51:33:B7:12")
	devices := []bluez.Device{spk}
	held := map[string][]claimHolder{"a0-ab-51-33-b7-12": {{Namespace: "default", Name: "kitchen", UID: "u1"}}}
	off := errors.New("org.bluez.Error.Failed: br-connection-page-timeout")
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

	attempt := func(number int) connectAttempt {
		t.Helper()
		start, _ := s.plan(now, devices, held)
		if len(start) != 1 || start[0].Number != number || start[0].Path != spk.Path {
			t.Fatalf("at %v: attempts %+v, want attempt %d of %s", now, start, number, spk.Path)
		}
		if again, _ := s.plan(now, devices, held); len(again) != 0 {
			t.Fatalf("a second attempt while one is in flight: %+v", again)
		}
		return start[0]
	}
	fail := func(a connectAttempt, wantWait time.Duration) {
		t.Helper()
		now = now.Add(5120 * time.Millisecond) // an unanswered page
		out := s.done(a, now, off)
		if !out.Current || out.Wait != wantWait {
			t.Fatalf("attempt %d: outcome %+v, want a wait of %v", a.Number, out, wantWait)
		}
		early := now.Add(wantWait - time.Millisecond)
		if start, next := s.plan(early, devices, held); len(start) != 0 || !next.Equal(now.Add(wantWait)) {
			t.Fatalf("1 ms before the wait of %v ran out: attempts %+v, next due %v (want %v)", wantWait, start, next, now.Add(wantWait))
		}
		now = now.Add(wantWait)
	}

	for i, wait := range []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second, 2 * time.Minute, 2 * time.Minute, 2 * time.Minute} {
		fail(attempt(i+1), wait)
	}
	if s.reconnecting() != 1 {
		t.Errorf("reconnecting = %d, want 1", s.reconnecting())
	}

	// A success: the waits start over, and no attempt follows before
	// BlueZ has had the first wait to report the link.
	a := attempt(8)
	if out := s.done(a, now, nil); !out.Current || out.Wait != 0 {
		t.Fatalf("success: %+v", out)
	}
	if start, next := s.plan(now, devices, held); len(start) != 0 || !next.Equal(now.Add(10*time.Second)) {
		t.Fatalf("right after a success: attempts %+v, next %v", start, next)
	}
	now = now.Add(10 * time.Second)
	fail(attempt(1), 10*time.Second)
	fail(attempt(2), 20*time.Second)
	fail(attempt(3), 40*time.Second)

	// A new claim on the speaker while the third wait runs: at once.
	now = now.Add(-30 * time.Second)
	held["a0-ab-51-33-b7-12"] = append(held["a0-ab-51-33-b7-12"], claimHolder{Namespace: "default", Name: "party", UID: "u2"})
	a = attempt(1)
	if len(a.Holders) != 2 {
		t.Errorf("attempt holders %+v, want both claims", a.Holders)
	}
	fail(a, 10*time.Second)

	// The speaker connects by itself: the episode ends.
	connected := spk
	connected.Connected = true
	if start, next := s.plan(now, []bluez.Device{connected}, held); len(start) != 0 || !next.IsZero() || s.reconnecting() != 0 {
		t.Fatalf("connected: attempts %+v, next %v, reconnecting %d", start, next, s.reconnecting())
	}

	// Off again: at once. The claims go while the attempt is in
	// flight: its outcome schedules nothing, and nothing follows.
	a = attempt(1)
	delete(held, "a0-ab-51-33-b7-12")
	if start, next := s.plan(now, devices, held); len(start) != 0 || !next.IsZero() || s.reconnecting() != 0 {
		t.Fatalf("claim gone: attempts %+v, next %v, reconnecting %d", start, next, s.reconnecting())
	}
	if out := s.done(a, now, off); out.Current {
		t.Errorf("the outcome of an attempt whose claim went is %+v, want not current", out)
	}
	for range 3 {
		now = now.Add(DefaultReconnectCeiling)
		if start, next := s.plan(now, devices, held); len(start) != 0 || !next.IsZero() {
			t.Fatalf("with no claim: attempts %+v, next %v", start, next)
		}
	}
}

// TestReconnectScheduleLeavesOthersAlone: held devices that are not
// reconnectable, and reconnectable ones no claim holds, get no attempt.
func TestReconnectScheduleLeavesOthersAlone(t *testing.T) {
	s := newReconnectSchedule(DefaultReconnectFirst, DefaultReconnectCeiling)
	pad := bluez.Device{Path: "/org/bluez/hci0/dev_E4_17_D8_C5_67_6D", Address: "E4:17:D8:C5:67:6D", Paired: true, Trusted: true,
		Class: 0x002508, UUIDs: []string{hidUUID}}
	untrusted := speakerDevice("A0:AB:51:33:B7:13")
	untrusted.Trusted = false
	unheld := speakerDevice("A0:AB:51:33:B7:14")
	held := map[string][]claimHolder{}
	for _, n := range []string{"e4-17-d8-c5-67-6d", "a0-ab-51-33-b7-13"} {
		held[n] = []claimHolder{{Namespace: "default", Name: n, UID: types.UID("u-" + n)}}
	}
	now := time.Now()
	for range 3 {
		if start, next := s.plan(now, []bluez.Device{pad, untrusted, unheld}, held); len(start) != 0 || !next.IsZero() {
			t.Fatalf("attempts %+v, next %v; want none", start, next)
		}
		now = now.Add(DefaultReconnectCeiling)
	}
}

// TestTrimAudioClaim: the cache keeps a claim's identity and only the
// results holding a device of the audio driver in the node's pool,
// without admin access.
func TestTrimAudioClaim(t *testing.T) {
	gone := metav1.Now()
	c := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kitchen", UID: "u1", ResourceVersion: "7", DeletionTimestamp: &gone,
			Labels: map[string]string{"a": "b"}, ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "x"}}},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{Name: "out"}}}},
		Status: resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{
			{Request: "out", Driver: "audio.liken.sh", Pool: "kitchen", Device: "a0-ab-51-33-b7-12"},
			{Request: "out", Driver: "audio.liken.sh", Pool: "lounge", Device: "a0-ab-51-33-b7-13"},
			{Request: "pad", Driver: "bluetooth.liken.sh", Pool: "kitchen", Device: "e4-17-d8-c5-67-6d"},
			{Request: "mon", Driver: "audio.liken.sh", Pool: "kitchen", Device: "a0-ab-51-33-b7-14", AdminAccess: ptr.To(true)},
		}}}},
	}
	want := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kitchen", UID: "u1", ResourceVersion: "7", DeletionTimestamp: &gone},
		Status: resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{
			{Request: "out", Driver: "audio.liken.sh", Pool: "kitchen", Device: "a0-ab-51-33-b7-12"},
		}}}},
	}
	if diff := cmp.Diff(want, trimAudioClaim(c, "kitchen")); diff != "" {
		t.Errorf("trimmed (-want +got):\n%s", diff)
	}
	c.Status.Allocation.Devices.Results = c.Status.Allocation.Devices.Results[1:3]
	if got := trimAudioClaim(c, "kitchen"); got.Status.Allocation != nil {
		t.Errorf("a claim holding nothing of the pool keeps %+v", got.Status.Allocation)
	}
}
