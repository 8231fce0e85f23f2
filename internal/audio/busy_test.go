// SPDX-License-Identifier: Apache-2.0

package audio

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	audiov1 "github.com/liken-sh/operators/api/audio/v1alpha1"
	"github.com/liken-sh/operators/internal/pipewire"
)

// A node PipeWire holds in error with EBUSY is suspended (its open
// retried) after 1 s, then 2, 4, 8, 16 and every 30 s while it stays
// busy, a pass is woken for each retry, and the Ready condition says what
// is busy and how often it was retried; a node that runs again, or one in
// error for another reason, is not retried.
func TestBusyDeviceIsRetriedWithBackoff(t *testing.T) {
	var sent []time.Duration
	var wakes []time.Duration
	t0 := time.Unix(1000, 0)
	now := t0
	o := &operator{busy: map[string]*busyState{},
		suspendNode: func(_ context.Context, id uint32) error {
			if id != 42 {
				t.Errorf("suspended node %d", id)
			}
			sent = append(sent, now.Sub(t0))
			return nil
		},
		wakeAfter: func(d time.Duration) { wakes = append(wakes, d) }}
	busy := &pipewire.Node{ID: 42, State: pipewire.NodeStateError, Error: "Start error: Device or resource busy"}
	ctx := context.Background()
	var st *busyState
	for now.Sub(t0) <= 125*time.Second {
		st = o.retryBusy(ctx, "kitchen-hdmi-0", busy, now)
		if st == nil {
			t.Fatal("a busy node is not tracked")
		}
		now = now.Add(100 * time.Millisecond)
	}
	want := []time.Duration{1, 3, 7, 15, 31, 61, 91, 121}
	if len(sent) != len(want) {
		t.Fatalf("retries at %v, want %v s", sent, want)
	}
	for i, w := range want {
		if d := sent[i] - w*time.Second; d < 0 || d > 100*time.Millisecond {
			t.Errorf("retry %d at %v, want %d s", i+1, sent[i], w)
		}
	}
	if len(wakes) == 0 || wakes[len(wakes)-1] > BusyRetryMax {
		t.Errorf("wakes %v", wakes)
	}
	c := busyReady(st)
	if c.Type != audiov1.ConditionReady || c.Status != metav1.ConditionFalse || c.Reason != ReasonDeviceBusy ||
		!strings.Contains(c.Message, "Device or resource busy") || !strings.Contains(c.Message, "retried 8 times") || !strings.Contains(c.Message, "30s") {
		t.Errorf("Ready = %+v", c)
	}
	if o.retryBusy(ctx, "kitchen-hdmi-0", &pipewire.Node{ID: 42, State: pipewire.NodeStateRunning}, now) != nil || len(o.busy) != 0 {
		t.Error("a node that runs again is still tracked")
	}
	other := &pipewire.Node{ID: 42, State: pipewire.NodeStateError, Error: "Start error: No such device"}
	if o.retryBusy(ctx, "kitchen-hdmi-0", other, now) != nil {
		t.Error("an error other than EBUSY is retried")
	}
}
