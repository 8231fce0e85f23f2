// SPDX-License-Identifier: Apache-2.0

package hci_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/liken-sh/operators/internal/bdaddr"
	"github.com/liken-sh/operators/internal/hci"
	"github.com/liken-sh/operators/internal/hci/hcitest"
)

var (
	realtek  = bdaddr.Address{0x5C, 0xF3, 0x70, 0x8B, 0x1A, 0x2E}
	mediatek = bdaddr.Address{0x00, 0x0C, 0xE7, 0x11, 0x22, 0x33}
)

func up(id uint16, a bdaddr.Address) hcitest.Answer {
	return hcitest.Answer{Info: hci.DevInfo{ID: id, Name: "hci" + string(rune('0'+id)), Address: a, Flags: 1, Type: 1}}
}

// node is the recorded three-adapter machine with the Realtek's usbfs node
// (001/005, hci3) claimed into the container's /dev.
func node(t *testing.T, k hci.Kernel, clk *clocktesting.FakeClock) *hci.Resolver {
	t.Helper()
	dev := t.TempDir()
	if _, err := hcitest.ClaimNode(dev, 1, 5); err != nil {
		t.Fatal(err)
	}
	return &hci.Resolver{Kernel: k, Sysfs: recordedSysfs(t), Dev: dev, Clock: clk}
}

type result struct {
	a   hci.Adapter
	err error
}

// drive runs fn while stepping the fake clock whenever fn waits, and
// returns fn's result and how much fake time passed.
func drive(t *testing.T, clk *clocktesting.FakeClock, fn func() (hci.Adapter, error)) (hci.Adapter, error, time.Duration) {
	t.Helper()
	start := clk.Now()
	done := make(chan result, 1)
	go func() {
		a, err := fn()
		done <- result{a, err}
	}()
	deadline := time.After(60 * time.Second)
	for {
		select {
		case r := <-done:
			return r.a, r.err, clk.Since(start)
		case <-deadline:
			t.Fatal("the resolver did not finish within 60 s of real time")
		default:
		}
		if clk.HasWaiters() {
			clk.Step(hci.DefaultInterval)
		} else {
			time.Sleep(time.Millisecond)
		}
	}
}

func TestClaimedTakesTheClaimedAdapterNotTheLowest(t *testing.T) {
	k := hcitest.NewKernel()
	k.Script(0, up(0, mediatek))
	k.Script(3, up(3, realtek))
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	a, err, waited := drive(t, clk, func() (hci.Adapter, error) { return node(t, k, clk).Claimed(context.Background()) })
	if err != nil {
		t.Fatal(err)
	}
	if a.Info.Address != realtek || a.Sysfs.Name != "hci3" || a.USB.String() != "001/005" {
		t.Fatalf("got %s on %s via %s, want the Realtek %s on hci3 via 001/005", a.Info.Address, a.Sysfs.Name, a.USB, realtek)
	}
	if k.Calls(0) != 0 {
		t.Errorf("hci0 was read %d times; only the claimed adapter should be", k.Calls(0))
	}
	if waited != 0 {
		t.Errorf("waited %s for a ready adapter", waited)
	}
}

func TestClaimedWaitsForTheAddress(t *testing.T) {
	k := hcitest.NewKernel()
	// Just enumerated: ENODEV, then registered with the zero address, then
	// the power-on work has read it.
	k.Script(3,
		hcitest.Answer{Err: hci.ErrNoDevice},
		up(3, bdaddr.Address{}), up(3, bdaddr.Address{}), up(3, bdaddr.Address{}),
		up(3, realtek))
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	a, err, waited := drive(t, clk, func() (hci.Adapter, error) { return node(t, k, clk).Claimed(context.Background()) })
	if err != nil {
		t.Fatal(err)
	}
	if a.Info.Address != realtek {
		t.Fatalf("address %s", a.Info.Address)
	}
	if k.Calls(3) != 5 || waited != 4*hci.DefaultInterval {
		t.Fatalf("%d reads over %s, want 5 over %s", k.Calls(3), waited, 4*hci.DefaultInterval)
	}
}

func TestClaimedGivesUpAfterTheBound(t *testing.T) {
	k := hcitest.NewKernel()
	k.Script(3, up(3, bdaddr.Address{}))
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	_, err, waited := drive(t, clk, func() (hci.Adapter, error) { return node(t, k, clk).Claimed(context.Background()) })
	if err == nil || !strings.Contains(err.Error(), "gave up after 30s") || !strings.Contains(err.Error(), "00:00:00:00:00:00") {
		t.Fatalf("error %v, want a timeout naming the zero address", err)
	}
	if waited < hci.DefaultTimeout || waited > hci.DefaultTimeout+hci.DefaultInterval {
		t.Fatalf("gave up after %s of fake time, want %s", waited, hci.DefaultTimeout)
	}
	if want := int(hci.DefaultTimeout/hci.DefaultInterval) + 1; k.Calls(3) != want {
		t.Errorf("%d reads, want %d", k.Calls(3), want)
	}
}

func TestClaimedFailsAtOnce(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))

	// A kernel error other than ENODEV is not waited out.
	k := hcitest.NewKernel()
	k.Script(3, hcitest.Answer{Err: unix.EPERM})
	_, err, waited := drive(t, clk, func() (hci.Adapter, error) { return node(t, k, clk).Claimed(context.Background()) })
	if !errors.Is(err, unix.EPERM) || waited != 0 {
		t.Errorf("EPERM: %v after %s", err, waited)
	}

	// No usbfs node in /dev: nothing was claimed, and waiting cannot help.
	r := node(t, k, clk)
	r.Dev = t.TempDir()
	_, err, _ = drive(t, clk, func() (hci.Adapter, error) { return r.Claimed(context.Background()) })
	if err == nil || !strings.Contains(err.Error(), "no usbfs node") {
		t.Errorf("no node: %v", err)
	}

	// Two claimed nodes, each with an adapter.
	k.Script(3, up(3, realtek))
	k.Script(0, up(0, mediatek))
	r = node(t, k, clk)
	if _, err := hcitest.ClaimNode(r.Dev, 3, 2); err != nil {
		t.Fatal(err)
	}
	_, err, _ = drive(t, clk, func() (hci.Adapter, error) { return r.Claimed(context.Background()) })
	if err == nil || !strings.Contains(err.Error(), "cannot tell") {
		t.Errorf("two adapters: %v", err)
	}

	// The kernel answering for another adapter than asked.
	k.Script(3, up(2, realtek))
	_, err, _ = drive(t, clk, func() (hci.Adapter, error) { return node(t, k, clk).Claimed(context.Background()) })
	if err == nil || !strings.Contains(err.Error(), `answered for "hci2"`) {
		t.Errorf("wrong name: %v", err)
	}
}

func TestClaimedWaitsForTheAdapterToRegister(t *testing.T) {
	// The claimed node's USB device has no hciN below it yet (btusb still
	// probing); a second claimed node, the hub, never gets one. The wait
	// ends with a timeout naming the missing adapter.
	k := hcitest.NewKernel()
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	r := node(t, k, clk)
	r.Dev = t.TempDir()
	if _, err := hcitest.ClaimNode(r.Dev, 1, 3); err != nil {
		t.Fatal(err)
	}
	r.Timeout = time.Second
	_, err, waited := drive(t, clk, func() (hci.Adapter, error) { return r.Claimed(context.Background()) })
	if !errors.Is(err, hci.ErrNoAdapter) || waited != time.Second {
		t.Fatalf("%v after %s", err, waited)
	}
}

func TestClaimedHonoursCancel(t *testing.T) {
	k := hcitest.NewKernel()
	k.Script(3, up(3, bdaddr.Address{}))
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	r := node(t, k, clk)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.Claimed(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("%v, want context.Canceled", err)
	}
}

func TestIndexForAVirtualAdapter(t *testing.T) {
	k := hcitest.NewKernel()
	vm := bdaddr.Address{0x00, 0xAA, 0x01, 0x01, 0x00, 0x01}
	k.Script(1, up(1, bdaddr.Address{}), up(1, vm))
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	r := &hci.Resolver{Kernel: k, Clock: clk}
	a, err, _ := drive(t, clk, func() (hci.Adapter, error) { return r.Index(context.Background(), 1) })
	if err != nil || a.Info.Address != vm {
		t.Fatalf("%v, %v", a.Info.Address, err)
	}
}

// TestSocket opens the real AF_BLUETOOTH socket. On a kernel without
// Bluetooth, or outside the host's network namespace, the error must say
// so; on one with it (the VM tier), an index answers either ENODEV or a
// record named for that index.
func TestSocket(t *testing.T) {
	s, err := hci.OpenSocket()
	if err != nil {
		if !errors.Is(err, unix.EAFNOSUPPORT) || !strings.Contains(err.Error(), "hostNetwork") {
			t.Fatalf("OpenSocket: %v; want EAFNOSUPPORT with the hostNetwork hint", err)
		}
		t.Logf("no AF_BLUETOOTH here: %v", err)
		return
	}
	defer s.Close()
	d, err := s.DevInfo(0)
	switch {
	case errors.Is(err, hci.ErrNoDevice):
		t.Log("hci0: no such device")
	case err != nil:
		t.Fatalf("HCIGETDEVINFO hci0: %v", err)
	case d.Name != "hci0" || d.ID != 0:
		t.Fatalf("hci0 answered %+v", d)
	default:
		t.Logf("hci0 is %s", d.Address)
	}
}
