// SPDX-License-Identifier: Apache-2.0

package bluetooth

import (
	"maps"
	"slices"

	"k8s.io/klog/v2"
)

// problemLog logs, at default verbosity, the problems of one kind that
// successive passes find, only when they change: each problem once when it
// appears and once when it is gone. A problem that stays is not logged
// again, so a pass every minute (the backstop) repeats nothing, while a
// production pod, which runs without -v, still shows every problem. Not
// safe for concurrent use: each goroutine keeps its own.
type problemLog struct {
	// what is the log message for a problem of this kind.
	what string
	last map[string]bool
}

// update logs what changed between the problems of the previous call and
// problems, in a fixed order, and remembers problems.
func (p *problemLog) update(logger klog.Logger, problems []error) {
	now := make(map[string]bool, len(problems))
	for _, e := range problems {
		now[e.Error()] = true
	}
	for _, s := range slices.Sorted(maps.Keys(now)) {
		if !p.last[s] {
			logger.Info(p.what, "problem", s)
		}
	}
	for _, s := range slices.Sorted(maps.Keys(p.last)) {
		if !now[s] {
			logger.Info("Problem gone: "+p.what, "problem", s)
		}
	}
	p.last = now
}

// passProblems are the problem logs of the operator's passes.
type passProblems struct {
	bluez, hid, model problemLog
}

func newPassProblems() *passProblems {
	return &passProblems{
		bluez: problemLog{what: "BlueZ reported a property of the wrong type"},
		hid:   problemLog{what: "HID device or input node left out"},
		model: problemLog{what: "Device set built with a problem"},
	}
}

// report logs what changed in one pass's problems: bluetoothd's
// (bluez.Objects.Problems), the HID walk's (hid.Scan.Skipped) and the
// device model's (Inventory.Devices).
func (p *passProblems) report(logger klog.Logger, bluez, hid, model []error) {
	p.bluez.update(logger, bluez)
	p.hid.update(logger, hid)
	p.model.update(logger, model)
}
