// SPDX-License-Identifier: Apache-2.0

package settle

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// These tests run in a synctest bubble (pkg.go.dev/testing/synctest): the
// clock is fake and moves only when every goroutine of the test waits, so
// the windows are measured exactly however loaded the host is.

func run(t *testing.T, w *Window) *atomic.Int32 {
	var fired atomic.Int32
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { w.Run(ctx, func(context.Context) { fired.Add(1) }); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return &fired
}

func TestBurstFiresOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := New(40*time.Millisecond, time.Second)
		fired := run(t, w)
		for range 30 {
			w.Poke()
			time.Sleep(time.Millisecond)
		}
		time.Sleep(38 * time.Millisecond) // 39 ms after the last Poke
		synctest.Wait()
		if n := fired.Load(); n != 0 {
			t.Fatalf("fired %d times before 40 ms of quiet", n)
		}
		time.Sleep(200 * time.Millisecond)
		if n := fired.Load(); n != 1 {
			t.Fatalf("a burst fired %d times, want 1", n)
		}
		w.Poke()
		time.Sleep(200 * time.Millisecond)
		if n := fired.Load(); n != 2 {
			t.Fatalf("a second burst: %d fires in all, want 2", n)
		}
	})
}

func TestCapBoundsTrickle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := New(50*time.Millisecond, 150*time.Millisecond)
		fired := run(t, w)
		start := time.Now()
		for time.Since(start) < 500*time.Millisecond {
			w.Poke() // never 50 ms of quiet
			time.Sleep(10 * time.Millisecond)
		}
		if n := fired.Load(); n < 2 || n > 4 {
			t.Fatalf("500 ms of trickle with a 150 ms cap fired %d times, want 2..4", n)
		}
	})
}

func TestNoPokeNoFire(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fired := run(t, New(10*time.Millisecond, 20*time.Millisecond))
		time.Sleep(100 * time.Millisecond)
		if fired.Load() != 0 {
			t.Fatal("fired without a Poke")
		}
	})
}
