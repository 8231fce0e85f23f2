// SPDX-License-Identifier: Apache-2.0

//go:build vmtier

package relayd

import (
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/liken-sh/operators/internal/evdev"
	"github.com/liken-sh/operators/internal/uevent"
	"github.com/liken-sh/operators/internal/uinput"
	"github.com/liken-sh/operators/test/vm/guest"
)

const padAddress = "A4:C1:38:0E:5F:21"

var padSpec = guest.UHIDSpec{
	Name: "liken relayd pad", Phys: "00:aa:01:00:00:00", Uniq: "a4:c1:38:0e:5f:21",
	Bus: guest.BusBluetooth, Vendor: 0x1d6b, Product: 0x0246, Descriptor: guest.GamepadDescriptor,
}

func connectPad(t *testing.T) *guest.UHID {
	t.Helper()
	pad, _, err := guest.CreateUHIDWithNode(padSpec)
	if err != nil {
		t.Fatal(err)
	}
	return pad
}

// readKey reads the consumer's descriptor until a key event with code and
// value arrives.
func readKey(t *testing.T, f *os.File, code uint16, value int32) {
	t.Helper()
	if err := guest.AwaitEvent(f, evdev.EvKey, code, value, 20*time.Second); err != nil {
		t.Fatal(err)
	}
}

// The daemon, served on a unix socket and driven by its own loop, gives a
// claim a node that reads the pad through a nap, with no help; a daemon
// started again from the state file makes the claim's device again while
// the pad sleeps, and feeds it when the pad wakes.
func TestVMDaemonClaimAcrossNapAndRestart(t *testing.T) {
	if err := guest.Modprobe("uhid", "hid-generic", "evdev", "uinput"); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// No rescan within the test: only uevents drive the daemon's loop.
	cfg := Config{UinputPath: uinput.DefaultPath, SysRoot: "/sys", DevRoot: "/dev", StatePath: filepath.Join(dir, "state.json"), Rescan: time.Hour}
	d, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	socket := filepath.Join(dir, "relay.sock")
	ln, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: d.Handler()}
	go srv.Serve(ln)
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events, err := uevent.Listen(ctx, uevent.Options{})
	if err != nil {
		t.Fatal(err)
	}
	go d.Run(ctx, events, nil)
	client := NewClient(socket)

	// A controller never seen connected has no devices to give.
	if _, err := client.Attach(ctx, "c0ffee00-0000-4000-8000-000000000001", padAddress); err == nil {
		t.Fatal("a claim on a controller never seen connected got devices")
	} else {
		t.Logf("before the pad connected: %v", err)
	}

	pad := connectPad(t)
	defer func() {
		if pad != nil {
			pad.Destroy()
		}
	}()
	const uid = "c0ffee00-0000-4000-8000-000000000002"
	var st ClaimStatus
	if !guest.WaitFor(30*time.Second, func() bool {
		st, err = client.Attach(ctx, uid, padAddress)
		return err == nil && st.Attached
	}) {
		t.Fatalf("claim: %+v, %v", st, err)
	}
	if len(st.Nodes) != 1 || st.Nodes[0].Major != 13 || st.Nodes[0].Device != padSpec.Name {
		t.Fatalf("claim status %+v, want one event node (major 13) standing for %q", st, padSpec.Name)
	}
	node := filepath.Join("/dev/input", st.Nodes[0].Name)
	consumer, err := evdev.Open(node)
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	pad.Input([]byte{1, 0, 0})
	readKey(t, consumer, 0x130, 1)

	// The nap: the daemon's own loop notices, and the consumer reads the
	// release, then the pad after it wakes.
	pad.Destroy()
	pad = nil
	readKey(t, consumer, 0x130, 0)
	pad = connectPad(t)
	if !guest.WaitFor(30*time.Second, func() bool {
		s, err := client.Status(ctx)
		return err == nil && s[uid].Attached
	}) {
		t.Fatal("the daemon did not attach the woken pad")
	}

	pad.Input([]byte{2, 0, 0})
	readKey(t, consumer, 0x131, 1)

	// A restart of the daemon while the pad sleeps: the claim's device is
	// made again from the state file, at a node the status names, and
	// fed once the pad wakes.
	pad.Destroy()
	pad = nil
	srv.Close()
	cancel()
	d.Close()
	d2, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer d2.Close()
	s2, err := d2.Status()
	if err != nil || len(s2[uid].Nodes) != 1 || s2[uid].Attached {
		t.Fatalf("after the restart: %+v, %v; want the claim's one device, not fed while the pad sleeps", s2, err)
	}
	consumer2, err := evdev.Open(filepath.Join("/dev/input", s2[uid].Nodes[0].Name))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer2.Close()
	caps, err := evdev.ReadCapabilities(consumer2)
	if err != nil || caps.Name != padSpec.Name || caps.ID.Vendor != 0x1d6b {
		t.Fatalf("the remade device is %+v (%v)", caps, err)
	}
	pad = connectPad(t)
	if err := d2.Reconcile(); err != nil {
		t.Fatal(err)
	}
	pad.Input([]byte{4, 0, 0})
	readKey(t, consumer2, 0x132, 1)
	if err := d2.Release(uid); err != nil {
		t.Fatal(err)
	}
	if s, _ := d2.Status(); len(s) != 0 {
		t.Errorf("after release: %+v", s)
	}

	// A new pod: a daemon with no state, seeded with the snapshot kept
	// with the pad's bond, makes a claim's device while the pad sleeps
	// and feeds it once the pad wakes.
	kept := d2.Snapshots()[padAddress]
	pad.Destroy()
	pad = nil
	d3, err := New(Config{UinputPath: uinput.DefaultPath, SysRoot: "/sys", DevRoot: "/dev", StatePath: filepath.Join(t.TempDir(), "state.json")})
	if err != nil {
		t.Fatal(err)
	}
	defer d3.Close()
	if _, err := d3.Attach(uid, padAddress); err == nil {
		t.Fatal("a daemon with no snapshot made devices for a sleeping pad")
	}
	if err := d3.Seed(padAddress, kept); err != nil {
		t.Fatal(err)
	}
	s3, err := d3.Attach(uid, padAddress)
	if err != nil || len(s3.Nodes) != 1 || s3.Attached {
		t.Fatalf("seeded, the sleeping pad's claim: %+v (%v), want one device, not fed", s3, err)
	}
	consumer3, err := evdev.Open(filepath.Join("/dev/input", s3.Nodes[0].Name))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer3.Close()
	pad = connectPad(t)
	if err := d3.Reconcile(); err != nil {
		t.Fatal(err)
	}
	pad.Input([]byte{8, 0, 0})
	readKey(t, consumer3, 0x133, 1)
}
