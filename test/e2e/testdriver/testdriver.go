// SPDX-License-Identifier: Apache-2.0

// Package testdriver is a small DRA driver on the shared core
// (internal/dra) that proves the chain from a published slice to a CDI spec
// without any hardware: it publishes gamepads that exist only in memory.
// The end-to-end test and the demo run it against the real control plane.
package testdriver

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	"github.com/liken-sh/operators/internal/dra"
	cdispec "tags.cncf.io/container-device-interface/specs-go"
)

// Name is the driver name; its DeviceClass is Class.
const (
	Name  = "e2e.liken.sh"
	Class = "e2e-gamepad"
)

// Params is the driver's opaque claim configuration:
// `{"led": "on"|"off"}`. An unknown key is refused by the core.
type Params struct {
	LED string `json:"led"`
}

// Default turns the LED on unless a config says otherwise.
func (p *Params) Default() { p.LED = "on" }

// Validate refuses any LED state but "on" and "off".
func (p *Params) Validate() error {
	if p.LED != "on" && p.LED != "off" {
		return fmt.Errorf("led %q: must be \"on\" or \"off\"", p.LED)
	}
	return nil
}

// Pad is one simulated gamepad: its device name, its colour attribute, the
// evdev node number a consumer gets (/dev/input/event<Event>), and whether
// it is gone (published with a NoSchedule taint).
type Pad struct {
	Name  string
	Color string
	Event int
	Gone  bool
}

// GoneTaint is the taint of a pad that is gone.
const GoneTaint = Name + "/gone"

// Driver is the running test driver.
type Driver struct {
	*dra.Driver
	mu   sync.Mutex
	pads map[string]Pad
}

// Start runs the test driver with opts (DriverName and CDIClass are set
// here) and publishes pads.
func Start(ctx context.Context, opts dra.Options, pads []Pad) (*Driver, error) {
	opts.DriverName, opts.CDIClass = Name, "pad"
	d := &Driver{}
	core, err := dra.Start(ctx, opts, d.prepare)
	if err != nil {
		return nil, err
	}
	d.Driver = core
	if err := d.SetPads(pads); err != nil {
		core.Stop()
		return nil, err
	}
	return d, nil
}

// SetPads replaces the published pads.
func (d *Driver) SetPads(pads []Pad) error {
	devices := make([]dra.Device, 0, len(pads))
	byName := make(map[string]Pad, len(pads))
	for _, p := range pads {
		dev := dra.Device{Name: p.Name, Attributes: dra.Attributes{
			"color": dra.String(p.Color),
			"event": dra.Int(int64(p.Event)),
		}}
		if p.Gone {
			dev.Taints = []dra.Taint{{Key: GoneTaint, Effect: dra.TaintNoSchedule}}
		}
		devices = append(devices, dev)
		byName[p.Name] = p
	}
	d.mu.Lock()
	d.pads = byName
	d.mu.Unlock()
	return d.SetDevices(devices)
}

// prepare gives a consumer the pad's evdev node and two variables.
func (d *Driver) prepare(_ context.Context, req dra.DeviceRequest[Params]) (dra.ContainerEdits, error) {
	d.mu.Lock()
	pad, ok := d.pads[req.Result.Device]
	d.mu.Unlock()
	if !ok {
		return dra.ContainerEdits{}, fmt.Errorf("no such pad on this node")
	}
	return dra.ContainerEdits{
		Env:         []string{"LIKEN_E2E_PAD=" + pad.Name, "LIKEN_E2E_LED=" + req.Params.LED},
		DeviceNodes: []*cdispec.DeviceNode{{Path: "/dev/input/event" + strconv.Itoa(pad.Event)}},
	}, nil
}
