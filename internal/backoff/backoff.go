// SPDX-License-Identifier: Apache-2.0

// Package backoff holds the one retry schedule the operators use: a wait
// that doubles from a first value up to a ceiling. It is a pure function
// of the retry count, so a caller keeps only its count (k8s.io's
// wait.Backoff keeps its own mutable step state, which the callers here,
// whose count is part of what they report, would duplicate).
package backoff

import "time"

// Doubling is the wait before retry n (n = 0 is the first retry):
// first·2ⁿ, at most ceiling. A first or ceiling of zero or less gives
// zero.
func Doubling(first, ceiling time.Duration, n int) time.Duration {
	if first <= 0 || ceiling <= 0 {
		return 0
	}
	d := first
	for i := 0; i < n && d < ceiling; i++ {
		d *= 2
	}
	return min(d, ceiling)
}
