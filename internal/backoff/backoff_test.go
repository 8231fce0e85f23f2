// SPDX-License-Identifier: Apache-2.0

package backoff

import (
	"testing"
	"time"
)

func TestDoubling(t *testing.T) {
	for _, c := range []struct {
		n    int
		want time.Duration
	}{{-1, time.Second}, {0, time.Second}, {1, 2 * time.Second}, {4, 16 * time.Second}, {5, 30 * time.Second}, {1000, 30 * time.Second}} {
		if got := Doubling(time.Second, 30*time.Second, c.n); got != c.want {
			t.Errorf("Doubling(1s, 30s, %d) = %v, want %v", c.n, got, c.want)
		}
	}
	if got := Doubling(0, time.Second, 3); got != 0 {
		t.Errorf("Doubling(0, 1s, 3) = %v, want 0", got)
	}
}
