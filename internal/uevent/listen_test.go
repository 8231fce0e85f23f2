// SPDX-License-Identifier: Apache-2.0

package uevent

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/liken-sh/operators/test/poll"
)

// loUevent is the uevent file of the loopback interface: writing an action
// to it makes the kernel broadcast a synthetic uevent for the device
// (uevent_store in drivers/base/core.c). Every Linux network namespace has
// lo, so the file exists wherever sysfs is mounted.
const loUevent = "/sys/class/net/lo/uevent"

// newUUID returns a random RFC 4122 version-4 UUID, the form the kernel
// accepts after the action in a synthetic uevent (kobject_synth_uevent).
func newUUID(t testing.TB) string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// trigger makes the kernel emit a synthetic uevent on lo, tagged with uuid
// and the variable SYNTH_ARG_LIKEN=<tag>, so that the test can tell its own
// event from any other on this machine.
func trigger(t testing.TB, action, uuid, tag string) {
	t.Helper()
	msg := fmt.Sprintf("%s %s LIKEN=%s", action, uuid, tag)
	if err := os.WriteFile(loUevent, []byte(msg), 0); err != nil {
		t.Fatalf("write %q to %s: %v", msg, loUevent, err)
	}
}

// waitFor returns the first event carrying SYNTH_UUID=uuid, failing the test
// after the timeout or on a fatal stop.
func waitFor(t *testing.T, l *Listener, uuid string, timeout time.Duration) Event {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case ev, ok := <-l.Events():
			if !ok {
				t.Fatalf("listener stopped before the event arrived: %v", l.Err())
			}
			if ev.Env["SYNTH_UUID"] == uuid {
				return ev
			}
		case err := <-l.Errors():
			t.Logf("listener reported: %v", err)
		case <-deadline:
			t.Fatalf("no uevent with SYNTH_UUID=%s within %v", uuid, timeout)
		}
	}
}

func TestListenReceivesRealKernelEvent(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	l, err := Listen(ctx, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("receive buffer granted: %d bytes", l.ReceiveBuffer())
	if l.ReceiveBuffer() <= 0 {
		t.Fatalf("receive buffer %d", l.ReceiveBuffer())
	}

	var lastSeq uint64
	for _, action := range []string{"add", "change"} {
		uuid := newUUID(t)
		start := time.Now()
		trigger(t, action, uuid, "t1")
		ev := waitFor(t, l, uuid, 30*time.Second)
		t.Logf("%s event after %v: %+v", action, time.Since(start), ev)
		if ev.Action != action {
			t.Errorf("Action = %q, want %q", ev.Action, action)
		}
		if ev.DevPath != "/devices/virtual/net/lo" {
			t.Errorf("DevPath = %q, want /devices/virtual/net/lo", ev.DevPath)
		}
		if ev.Subsystem != "net" {
			t.Errorf("Subsystem = %q, want net", ev.Subsystem)
		}
		if ev.Env["INTERFACE"] != "lo" || ev.Env["SYNTH_ARG_LIKEN"] != "t1" {
			t.Errorf("Env = %v, want INTERFACE=lo and SYNTH_ARG_LIKEN=t1", ev.Env)
		}
		if ev.Seqnum == 0 || ev.Seqnum <= lastSeq {
			t.Errorf("Seqnum = %d after %d, want increasing and non-zero", ev.Seqnum, lastSeq)
		}
		lastSeq = ev.Seqnum
	}

	cancel()
	select {
	case <-l.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("listener did not stop within 30s of cancel")
	}
	if err := l.Err(); err != nil {
		t.Errorf("Err after cancel = %v, want nil", err)
	}
	if _, ok := <-l.Events(); ok {
		t.Error("Events still open after stop")
	}
	if _, ok := <-l.Errors(); ok {
		t.Error("Errors still open after stop")
	}
}

// TestListenReportsOverflow fills a minimal receive queue while nobody
// reads, and expects the kernel's ENOBUFS as ErrOverflow, followed by normal
// delivery.
func TestListenReportsOverflow(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The kernel raises tiny requests to its minimum (a few KiB), which
	// holds only a handful of uevents.
	l, err := Listen(ctx, Options{ReceiveBuffer: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("receive buffer granted: %d bytes", l.ReceiveBuffer())
	// Nobody reads Events while the burst is written, so the reader
	// goroutine blocks after the channel's 16 slots and the kernel queue
	// fills behind it.
	const burst = 200
	for i := 0; i < burst; i++ {
		trigger(t, "change", newUUID(t), "burst")
	}
	overflow := false
	deadline := time.After(30 * time.Second)
	received := 0
	for !overflow {
		select {
		case _, ok := <-l.Events():
			if !ok {
				t.Fatalf("listener stopped: %v", l.Err())
			}
			received++
		case err := <-l.Errors():
			if errors.Is(err, ErrOverflow) {
				overflow = true
			} else {
				t.Logf("other error: %v", err)
			}
		case <-deadline:
			t.Fatalf("no ErrOverflow after a burst of %d events into a %d-byte queue (%d received)", burst, l.ReceiveBuffer(), received)
		}
	}
	t.Logf("%d of %d burst events received before ErrOverflow", received, burst)
	// After the overflow the listener goes on: a fresh event arrives.
	// With a queue this small an event sent while the kernel still holds
	// the burst is dropped too, so a new one is sent, while what is
	// queued drains, until one gets through.
	sent := map[string]bool{}
	poll.WaitFor(t, ctx, "an event after the overflow", 30*time.Second, func() (bool, string) {
		uuid := newUUID(t)
		sent[uuid] = true
		trigger(t, "change", uuid, "after")
		for {
			select {
			case ev, ok := <-l.Events():
				if !ok {
					t.Fatalf("listener stopped after the overflow: %v", l.Err())
				}
				if sent[ev.Env["SYNTH_UUID"]] {
					if ev.Env["SYNTH_ARG_LIKEN"] != "after" {
						t.Errorf("event after overflow: %+v", ev)
					}
					return true, ""
				}
			case <-l.Errors():
			case <-time.After(200 * time.Millisecond):
				return false, fmt.Sprintf("none of %d sent arrived", len(sent))
			}
		}
	})
}

// TestListenStopsWhileBlocked cancels a listener whose caller never reads:
// the reader goroutine is parked on a channel send and must still stop.
func TestListenStopsWhileBlocked(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	l, err := Listen(ctx, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 40; i++ {
		trigger(t, "change", newUUID(t), "blocked")
	}
	time.Sleep(50 * time.Millisecond)
	cancel()
	select {
	case <-l.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("listener did not stop within 30s of cancel while its caller was not reading")
	}
	if err := l.Err(); err != nil {
		t.Errorf("Err = %v, want nil after cancel", err)
	}
}

func TestListenRejectsNegativeBuffer(t *testing.T) {
	if _, err := Listen(context.Background(), Options{ReceiveBuffer: -1}); err == nil {
		t.Fatal("Listen accepted a negative receive buffer")
	}
}
