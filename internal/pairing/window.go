// SPDX-License-Identifier: Apache-2.0

package pairing

import (
	"context"
	"errors"
	"time"

	"github.com/liken-sh/operators/internal/bluez"
)

// openWindow makes the radio discoverable, pairable and scanning until
// deadline, with the agent registered. The timeouts go first, so that
// BlueZ itself closes the window at the deadline even if this operator
// dies, and only once per deadline: bluetoothd restarts a flag's
// countdown whenever its timeout is written (BlueZ
// doc/org.bluez.Adapter.rst, DiscoverableTimeout and PairableTimeout;
// src/adapter.c trigger_pairable_timeout), so a rewrite on every pass
// would keep pushing BlueZ's own deadline out. Only properties that
// differ are written, so a pass on a window already open writes nothing
// and no PropertiesChanged wakes it again.
func (c *Controller) openWindow(ctx context.Context, a *bluez.Adapter, deadline, now time.Time) error {
	secs := uint32((deadline.Sub(now) + time.Second - 1) / time.Second)
	if secs == 0 {
		secs = 1
	}
	var errs []error
	if err := c.cfg.Radio.RegisterAgent(ctx, c); err != nil {
		errs = append(errs, err)
	}
	set := func(name string, v any) {
		if err := c.cfg.Radio.SetProperty(ctx, a.Path, bluez.AdapterInterface, name, v); err != nil {
			errs = append(errs, err)
		}
	}
	c.mu.Lock()
	written := c.timeoutFor.Equal(deadline)
	c.mu.Unlock()
	if !written || a.PairableTimeout == 0 || a.DiscoverableTimeout == 0 {
		set("PairableTimeout", secs)
		set("DiscoverableTimeout", secs)
		c.mu.Lock()
		c.timeoutFor = deadline
		c.mu.Unlock()
	}
	if !a.Pairable {
		set("Pairable", true)
	}
	if !a.Discoverable {
		set("Discoverable", true)
	}
	if !a.Discovering {
		if err := c.cfg.Radio.StartDiscovery(ctx, a.Path); err != nil {
			errs = append(errs, err)
		}
	}
	c.mu.Lock()
	c.opened = true
	c.mu.Unlock()
	return errors.Join(errs...)
}

// closeWindow stops discovery, clears Discoverable and Pairable and
// withdraws the agent. Every step runs even when an earlier one failed;
// the errors are joined. It runs when no request holds the window and
// this process opened one or the radio shows any of the three (an
// operator restarted mid-window, BlueZ reset by a USB replug).
func (c *Controller) closeWindow(ctx context.Context, a *bluez.Adapter) error {
	c.mu.Lock()
	opened := c.opened
	c.opened, c.timeoutFor = false, time.Time{}
	c.mu.Unlock()
	if !opened && !a.Discoverable && !a.Pairable && !a.Discovering {
		return nil
	}
	var errs []error
	if err := c.cfg.Radio.StopDiscovery(ctx, a.Path); err != nil {
		errs = append(errs, err)
	}
	for _, p := range []struct {
		name string
		on   bool
	}{{"Discoverable", a.Discoverable}, {"Pairable", a.Pairable}} {
		if p.on {
			if err := c.cfg.Radio.SetProperty(ctx, a.Path, bluez.AdapterInterface, p.name, false); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if err := c.cfg.Radio.UnregisterAgent(ctx); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
