// SPDX-License-Identifier: Apache-2.0

package pairing

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	btv1 "github.com/liken-sh/operators/api/bluetooth/v1alpha1"
	"github.com/liken-sh/operators/internal/backoff"
	"github.com/liken-sh/operators/internal/bluez"
)

// The A2DP repair's schedule. bluetoothd connects a bonded speaker's
// auto-connect profiles itself once the link is up (src/device.c,
// device_connect_profiles), within a second or two, so a speaker is
// left alone for a2dpGrace first. Then the operator asks for the A2DP
// sink (Device1.ConnectProfile) a2dpProfileAttempts times, and after
// that makes the link anew (Disconnect, Connect), which also brings the
// profiles a speaker only sets up on a fresh link; the waits between
// attempts double from a2dpRetryFirst up to a2dpRetryCeiling, so a
// speaker that never takes A2DP is asked a few times an hour.
const (
	a2dpGrace           = 10 * time.Second
	a2dpProfileAttempts = 2
	a2dpRetryFirst      = 15 * time.Second
	a2dpRetryCeiling    = 15 * time.Minute
	a2dpCallTimeout     = 30 * time.Second
)

// a2dpRepair is what the controller remembers of a connected speaker
// without A2DP.
type a2dpRepair struct {
	since    time.Time // first seen without A2DP
	next     time.Time // the next attempt is due
	attempts int
	last     string // the last attempt and its outcome, for the message
}

// Repair methods, the method label of bluetooth_peripheral_a2dp_repairs_total.
const (
	repairConnectProfile = "ConnectProfile"
	repairReconnect      = "Reconnect"
)

// a2dpProfile sets a speaker's A2DP condition and repairs a connected
// speaker whose A2DP channel is down. A speaker is a device offering the
// A2DP sink service; its channel is up while bluetoothd exports its
// remote stream endpoints (MediaEndpoint1 under the device), which it
// does once the channel's AVDTP discovery ran. Connected without them
// (after a bluetoothd or bus restart the speaker often comes back with
// only HFP/HSP and AVRCP), it has no sink to play to: the condition is
// False, reason NoA2DP, naming the profiles it does offer and the
// repair, and after a2dpGrace the operator asks bluetoothd for the
// profile, then for a new link, with backoff (see the constants above),
// each attempt logged and counted, the first with a Warning Event.
// Disconnected, or not a speaker, there is no condition.
func (p *pass) a2dpProfile(per *btv1.Peripheral, st *btv1.PeripheralStatus, d *bluez.Device) {
	if !slices.Contains(d.UUIDs, a2dpSinkUUID) || !d.Connected || per.DeletionTimestamp != nil {
		meta.RemoveStatusCondition(&st.Conditions, btv1.ConditionA2DP)
		p.c.forgetA2DP(per.Name)
		return
	}
	gen := per.Generation
	sinks := 0
	for _, e := range d.Endpoints {
		if e.UUID == a2dpSinkUUID {
			sinks++
		}
	}
	p.c.mu.Lock()
	r := p.c.a2dp[per.Name]
	p.c.mu.Unlock()
	if sinks > 0 {
		if r != nil && r.attempts > 0 {
			p.log.Info("A speaker's A2DP channel is back", "peripheral", per.Name, "attempts", r.attempts, "last", r.last)
			p.c.event(per, false, btv1.ReasonA2DPUp, "RepairA2DP", "the A2DP channel is back after %d attempts (last: %s)", r.attempts, r.last)
		}
		p.c.forgetA2DP(per.Name)
		setCondition(&st.Conditions, btv1.ConditionA2DP, true, btv1.ReasonA2DPUp,
			fmt.Sprintf("the A2DP channel is up: bluetoothd exports %d stream endpoints of the speaker", sinks), gen)
		return
	}
	if r == nil {
		r = &a2dpRepair{since: p.now, next: p.now.Add(a2dpGrace)}
		p.c.mu.Lock()
		p.c.a2dp[per.Name] = r
		p.c.mu.Unlock()
	}
	if !p.now.Before(r.next) {
		p.repairA2DP(per, d, r)
	}
	msg := fmt.Sprintf("connected, but its A2DP channel is down (bluetoothd exports no stream endpoint of it), so it has no sink to play to; "+
		"the profiles it offers besides: %s, as a bluetoothd or bus restart often leaves a speaker", otherProfiles(d.UUIDs))
	if r.attempts == 0 {
		msg += fmt.Sprintf("; the operator asks bluetoothd for A2DP (ConnectProfile) at %s if it is still down", r.next.UTC().Format(time.RFC3339))
	} else {
		msg += fmt.Sprintf("; attempt %d: %s; the next at %s", r.attempts, r.last, r.next.UTC().Format(time.RFC3339))
	}
	setCondition(&st.Conditions, btv1.ConditionA2DP, false, btv1.ReasonNoA2DP, msg, gen)
	p.after(r.next.Sub(p.now))
}

// repairA2DP makes one attempt and schedules the next.
func (p *pass) repairA2DP(per *btv1.Peripheral, d *bluez.Device, r *a2dpRepair) {
	ctx, cancel := context.WithTimeout(p.ctx, a2dpCallTimeout)
	defer cancel()
	method := repairConnectProfile
	var err error
	if r.attempts < a2dpProfileAttempts {
		err = p.c.cfg.Radio.ConnectProfile(ctx, d.Path, a2dpSinkUUID)
	} else {
		method = repairReconnect
		if err = p.c.cfg.Radio.Disconnect(ctx, d.Path); err == nil {
			err = p.c.cfg.Radio.Connect(ctx, d.Path)
		}
	}
	p.c.metrics.a2dpRepairs.WithLabelValues(method, result(err)).Inc()
	r.last = method + " succeeded"
	if err != nil {
		r.last = fmt.Sprintf("%s failed: %v", method, err)
	}
	if r.attempts == 0 {
		p.c.event(per, true, btv1.ReasonNoA2DP, "RepairA2DP", "connected without its A2DP channel since %s; %s", r.since.UTC().Format(time.RFC3339), r.last)
	}
	p.log.Info("Repairing a connected speaker's missing A2DP channel", "peripheral", per.Name, "attempt", r.attempts+1, "method", method, "err", err)
	r.next = p.now.Add(backoff.Doubling(a2dpRetryFirst, a2dpRetryCeiling, r.attempts))
	r.attempts++
}

// forgetA2DP drops the repair state of a peripheral.
func (c *Controller) forgetA2DP(name string) {
	c.mu.Lock()
	delete(c.a2dp, name)
	c.mu.Unlock()
}

// otherProfiles names a speaker's audio and remote control services
// other than the A2DP sink (Bluetooth SIG Assigned Numbers, Service
// Class), "none" when it offers none of them.
func otherProfiles(uuids []string) string {
	names := map[string]string{
		"0000111e-0000-1000-8000-00805f9b34fb": "HFP",
		"00001108-0000-1000-8000-00805f9b34fb": "HSP",
		"0000110e-0000-1000-8000-00805f9b34fb": "AVRCP",
		"0000110c-0000-1000-8000-00805f9b34fb": "AVRCP target",
	}
	var out []string
	for _, u := range uuids {
		if n, ok := names[strings.ToLower(u)]; ok && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

func result(err error) string {
	if err != nil {
		return "error"
	}
	return "success"
}
