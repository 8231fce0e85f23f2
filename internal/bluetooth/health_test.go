// SPDX-License-Identifier: Apache-2.0

package bluetooth

import (
	"testing"

	"github.com/liken-sh/operators/internal/bluez"
	"github.com/liken-sh/operators/internal/dra"
)

const padName = "e4-17-d8-c5-67-6d"

// problemOf builds one read's devices through inv and returns the pad's
// problem and whether its taints make it unfit.
func problemOf(t *testing.T, inv *Inventory, a bluez.Adapter, pad bluez.Device, nodes InputNodes) (string, bool) {
	t.Helper()
	inv.Observe(bluez.Objects{Adapters: []bluez.Adapter{a}, Devices: []bluez.Device{pad}})
	devs, problems := inv.Devices(nodes)
	if len(problems) > 0 {
		t.Errorf("problems: %v", problems)
	}
	for _, d := range devs {
		if err := checkAPIDevice(d); err != nil {
			t.Error(err)
		}
		if d.Name == padName {
			return d.Problem, d.Tainted()
		}
	}
	t.Fatalf("the pad is not published: %v", devs)
	return "", false
}

func withBattery(d bluez.Device, pct uint8) bluez.Device {
	d.Battery, d.HasBattery = pct, true
	return d
}

func TestControllerProblems(t *testing.T) {
	nodes := NodeMap{padAddress: {"/dev/input/event18"}}
	off := adapter0
	off.Powered = false
	untrusted := nesPad(t, false)
	untrusted.Trusted = false
	for _, tc := range []struct {
		name    string
		adapter bluez.Adapter
		pad     bluez.Device
		nodes   InputNodes
		want    string
	}{
		{"connected with its node", adapter0, nesPad(t, true), nodes, ""},
		{"connected with its node and a battery", adapter0, withBattery(nesPad(t, true), 40), nodes, ""},
		{"connected, no node yet", adapter0, nesPad(t, true), NodeMap{}, ProblemNoInputNode},
		{"asleep, no battery known", adapter0, nesPad(t, false), NodeMap{}, "asleep"},
		{"asleep, BlueZ still reports its battery", adapter0, withBattery(nesPad(t, false), 40), NodeMap{}, "asleep (battery 40%)"},
		{"asleep, a battery past 100 % is no reading", adapter0, withBattery(nesPad(t, false), 101), NodeMap{}, "asleep"},
		{"off the air, not trusted", adapter0, untrusted, NodeMap{}, ProblemUntrusted},
		{"off the air, the adapter powered off", off, nesPad(t, false), NodeMap{}, ProblemAdapterOff},
		{"speaker off the air", adapter0, speaker(false), nil, ProblemNotConnected},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var inv Inventory
			inv.Observe(bluez.Objects{Adapters: []bluez.Adapter{tc.adapter}, Devices: []bluez.Device{tc.pad}})
			devs, _ := inv.Devices(tc.nodes)
			var got *dra.Device
			for i := range devs {
				if devs[i].Attributes["address"].StringValue != nil && *devs[i].Attributes["address"].StringValue == tc.pad.Address {
					got = &devs[i]
				}
			}
			if got == nil {
				t.Fatalf("not published: %v", devs)
			}
			if got.Problem != tc.want {
				t.Errorf("problem %q, want %q", got.Problem, tc.want)
			}
			// Every device the scheduler keeps claims off says why, and
			// a fit one says nothing.
			if got.Tainted() != (got.Problem != "") {
				t.Errorf("tainted %v (%v) with problem %q", got.Tainted(), got.Taints, got.Problem)
			}
		})
	}
}

// BlueZ drops Battery1 with the link (profiles/battery), so the charge a
// sleeping pad is shown with is the one last seen; it is forgotten with
// the device.
func TestAsleepWithTheBatteryLastSeen(t *testing.T) {
	var inv Inventory
	nodes := NodeMap{padAddress: {"/dev/input/event18"}}
	if p, unfit := problemOf(t, &inv, adapter0, withBattery(nesPad(t, true), 80), nodes); p != "" || unfit {
		t.Fatalf("awake: problem %q, unfit %v", p, unfit)
	}
	if p, _ := problemOf(t, &inv, adapter0, withBattery(nesPad(t, true), 40), nodes); p != "" {
		t.Fatalf("awake: problem %q", p)
	}
	p, unfit := problemOf(t, &inv, adapter0, nesPad(t, false), NodeMap{})
	if want := "asleep (battery 40% when last connected)"; p != want || !unfit {
		t.Errorf("asleep: problem %q (unfit %v), want %q", p, unfit, want)
	}
	// Awake again: fit, whatever was remembered.
	if p, unfit := problemOf(t, &inv, adapter0, nesPad(t, true), nodes); p != "" || unfit {
		t.Errorf("awake again: problem %q, unfit %v", p, unfit)
	}
	// Removed (unpaired), then paired again: nothing is remembered.
	inv.Observe(bluez.Objects{Adapters: []bluez.Adapter{adapter0}})
	if p, _ := problemOf(t, &inv, adapter0, nesPad(t, false), NodeMap{}); p != ProblemAsleep {
		t.Errorf("after the device was gone: problem %q, want %q", p, ProblemAsleep)
	}
}

// A departed adapter's devices keep the charge they had.
func TestDepartedAdapterKeepsTheBatteryLastSeen(t *testing.T) {
	var inv Inventory
	nodes := NodeMap{padAddress: {"/dev/input/event18"}}
	problemOf(t, &inv, adapter0, withBattery(nesPad(t, true), 55), nodes)
	inv.Observe(bluez.Objects{})
	if len(inv.battery) != 1 {
		t.Errorf("remembered %v after the adapter left, want the pad's charge", inv.battery)
	}
	back := nesPad(t, false)
	if p, _ := problemOf(t, &inv, adapter0, back, NodeMap{}); p != "asleep (battery 55% when last connected)" {
		t.Errorf("back, asleep: problem %q", p)
	}
}

func TestProblemReferenceListsEveryProblem(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range ProblemReference {
		if p.Doc == "" || seen[p.Problem] {
			t.Errorf("reference entry %q: empty or listed twice", p.Problem)
		}
		seen[p.Problem] = true
	}
	for _, p := range []string{ProblemAsleep, ProblemUntrusted, ProblemNotConnected, ProblemAdapterOff, ProblemAdapterGone, ProblemNoInputNode} {
		if !seen[p] {
			t.Errorf("problem %q is not in ProblemReference", p)
		}
	}
}
