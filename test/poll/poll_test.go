// SPDX-License-Identifier: Apache-2.0

package poll

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// recorder is a testing.TB that records Fatalf instead of stopping.
type recorder struct {
	testing.TB
	failed string
}

func (r *recorder) Helper()                           {}
func (r *recorder) Fatalf(format string, args ...any) { r.failed = fmt.Sprintf(format, args...) }

func TestWaitForReturnsOnceTrue(t *testing.T) {
	n := 0
	WaitFor(t, context.Background(), "third call", time.Second, func() (bool, string) {
		n++
		return n == 3, "not yet"
	})
	if n != 3 {
		t.Errorf("check called %d times, want 3", n)
	}
}

func TestWaitForFailsWithTheLastReason(t *testing.T) {
	r := &recorder{TB: t}
	start := time.Now()
	WaitFor(r, context.Background(), "never", 50*time.Millisecond, func() (bool, string) { return false, "still no" })
	if !strings.Contains(r.failed, "never: not within 50ms (last: still no)") {
		t.Errorf("failure %q", r.failed)
	}
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Errorf("gave up after %v, before its timeout", d)
	}
}

func TestWaitForStopsWhenTheContextEnds(t *testing.T) {
	r := &recorder{TB: t}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	WaitFor(r, ctx, "cancelled", time.Hour, func() (bool, string) { return false, "" })
	if !strings.Contains(r.failed, "cancelled: not within 1h0m0s (last: no reason given)") {
		t.Errorf("failure %q", r.failed)
	}
}
