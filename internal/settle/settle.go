// SPDX-License-Identifier: Apache-2.0

// Package settle turns bursts of events into single actions: an action runs
// once the events have been quiet for a while, and at the latest a fixed
// time after the first event of a burst, so a steady trickle cannot hold it
// back for ever. Both operators use it where every action is expensive for
// others: a ResourceSlice write wakes every DRA-pending pod in the cluster,
// and a bond Secret write is an API call per bond.
package settle

import (
	"context"
	"sync"
	"time"
)

// Window runs an action after a burst of Pokes settles. The zero value is
// not usable; make one with New.
type Window struct {
	quiet, cap time.Duration

	mu      sync.Mutex
	pending bool
	first   time.Time // first Poke of the current burst
	last    time.Time // newest Poke
	wake    chan struct{}
}

// New returns a window that fires after quiet without a Poke, or cap after
// the first Poke of a burst, whichever comes first. cap below quiet is
// raised to quiet.
func New(quiet, cap time.Duration) *Window {
	return &Window{quiet: quiet, cap: max(cap, quiet), wake: make(chan struct{}, 1)}
}

// Poke records an event. It never blocks.
func (w *Window) Poke() {
	now := time.Now()
	w.mu.Lock()
	if !w.pending {
		w.pending = true
		w.first = now
	}
	w.last = now
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// Pending reports whether a burst has been poked and not yet fired: what
// a caller that stops Run may still owe.
func (w *Window) Pending() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.pending
}

// Run calls fire once per settled burst until ctx ends. fire runs on Run's
// goroutine; Pokes during fire start the next burst.
func (w *Window) Run(ctx context.Context, fire func(context.Context)) {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.wake:
		case <-timer.C:
		}
		w.mu.Lock()
		if !w.pending {
			w.mu.Unlock()
			continue
		}
		due := w.last.Add(w.quiet)
		if capped := w.first.Add(w.cap); capped.Before(due) {
			due = capped
		}
		if wait := time.Until(due); wait > 0 {
			w.mu.Unlock()
			timer.Reset(wait)
			continue
		}
		w.pending = false
		w.mu.Unlock()
		fire(ctx)
	}
}
