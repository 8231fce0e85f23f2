// SPDX-License-Identifier: Apache-2.0

// Package poll waits in tests for something to become true: the one
// polling loop every test and benchmark of this repository uses.
package poll

import (
	"context"
	"testing"
	"time"
)

// WaitFor calls check until it reports true, and fails tb (Fatalf)
// naming what, the timeout and the last non-empty reason check gave,
// when timeout passes or ctx is done first. It polls every 5 ms at first
// and backs off to every 100 ms, so a quick condition is seen at once and
// a slow one (an API server's state) is not asked hundreds of times a
// second.
func WaitFor(tb testing.TB, ctx context.Context, what string, timeout time.Duration, check func() (bool, string)) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	interval := 5 * time.Millisecond
	last := ""
	for {
		ok, why := check()
		if ok {
			return
		}
		if why != "" {
			last = why
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			if last == "" {
				last = "no reason given"
			}
			tb.Fatalf("%s: not within %s (last: %s)", what, timeout, last)
			return // for a tb whose Fatalf returns
		}
		select {
		case <-time.After(interval):
		case <-ctx.Done():
		}
		interval = min(2*interval, 100*time.Millisecond)
	}
}

// Until is WaitFor for a condition that gives no reason.
func Until(tb testing.TB, what string, timeout time.Duration, cond func() bool) {
	tb.Helper()
	WaitFor(tb, context.Background(), what, timeout, func() (bool, string) { return cond(), "" })
}
