// SPDX-License-Identifier: Apache-2.0

package speakers

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/liken-sh/operators/internal/bdaddr"
	"github.com/liken-sh/operators/test/bluezsim"
	"github.com/liken-sh/operators/test/poll"
)

const (
	adapterAddr = "00:1A:7D:DA:71:13"
	speakerAddr = "A0:AB:51:33:B7:12"
	padAddr     = "E4:17:D8:C5:67:6D"
)

var speaker = bluezsim.Device{Name: "Living Room", Class: 0x240414,
	UUIDs: []string{AudioSinkUUID, "0000110e-0000-1000-8000-00805f9b34fb"}}

// waitFor polls the reader's set until ok accepts it; the reader itself
// is woken by signals, the poll is only the test's way of looking.
func waitFor(t *testing.T, r *Reader, what string, ok func([]Speaker, bool) bool) []Speaker {
	t.Helper()
	var got []Speaker
	poll.WaitFor(t, context.Background(), what, 30*time.Second, func() (bool, string) {
		var following bool
		got, following = r.Speakers()
		return ok(got, following), fmt.Sprintf("the reader has %+v (following %v)", got, following)
	})
	return got
}

func TestReaderFollowsBlueZ(t *testing.T) {
	sim := bluezsim.New(t, bluezsim.Options{})
	if _, err := sim.AddAdapter("hci0", adapterAddr); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.AddDevice("hci0", speakerAddr, speaker); err != nil {
		t.Fatal(err)
	}
	// A paired device that is no speaker (a gamepad) is never one.
	if _, err := sim.AddDevice("hci0", padAddr, bluezsim.Device{Name: "pad", UUIDs: []string{"00001124-0000-1000-8000-00805f9b34fb"}}); err != nil {
		t.Fatal(err)
	}
	if err := sim.Pair("hci0", padAddr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	changes := make(chan struct{}, 100)
	r := Start(ctx, Options{Address: sim.Address(), OnChange: func() { changes <- struct{}{} }})
	waitFor(t, r, "an unpaired speaker", func(s []Speaker, f bool) bool { return f && len(s) == 0 })

	if err := sim.Pair("hci0", speakerAddr); err != nil {
		t.Fatal(err)
	}
	got := waitFor(t, r, "paired", func(s []Speaker, _ bool) bool { return len(s) == 1 })
	want := Speaker{Address: bdaddr.MustParse(speakerAddr), Alias: "Living Room", Path: bluezsim.DevicePath("hci0", speakerAddr)}
	if got[0] != want {
		t.Fatalf("speaker %+v, want %+v", got[0], want)
	}
	if got[0].Name() != "a0-ab-51-33-b7-12" {
		t.Errorf("name %q", got[0].Name())
	}
	if err := sim.Connect("hci0", speakerAddr); err != nil {
		t.Fatal(err)
	}
	waitFor(t, r, "connected", func(s []Speaker, _ bool) bool { return len(s) == 1 && s[0].Connected })
	if err := sim.Disconnect("hci0", speakerAddr, bluezsim.ReasonRemote); err != nil {
		t.Fatal(err)
	}
	// Switched off: still published, disconnected.
	waitFor(t, r, "switched off", func(s []Speaker, _ bool) bool { return len(s) == 1 && !s[0].Connected })
	if err := sim.Connect("hci0", speakerAddr); err != nil {
		t.Fatal(err)
	}
	waitFor(t, r, "on again", func(s []Speaker, _ bool) bool { return len(s) == 1 && s[0].Connected })

	// bluetoothd restarts: the set is kept, disconnected, then read from
	// the new one.
	if err := sim.StopBlueZ(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, r, "bluetoothd gone", func(s []Speaker, f bool) bool { return !f && len(s) == 1 && !s[0].Connected })
	if err := sim.StartBlueZ(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, r, "bluetoothd back", func(s []Speaker, f bool) bool { return f && len(s) == 1 })
	if err := sim.Connect("hci0", speakerAddr); err != nil {
		t.Fatal(err)
	}
	waitFor(t, r, "reconnected", func(s []Speaker, _ bool) bool { return len(s) == 1 && s[0].Connected })

	// Unpaired: it leaves.
	if err := sim.RemoveDevice("hci0", speakerAddr); err != nil {
		t.Fatal(err)
	}
	waitFor(t, r, "unpaired", func(s []Speaker, f bool) bool { return f && len(s) == 0 })
	if len(changes) == 0 {
		t.Error("OnChange was never called")
	}
}

// TestMalformedAddressIgnored: a device whose Address is not an address
// is left out with an error naming it; the others stay.
func TestMalformedAddressIgnored(t *testing.T) {
	sim := bluezsim.New(t, bluezsim.Options{})
	if _, err := sim.AddAdapter("hci0", adapterAddr); err != nil {
		t.Fatal(err)
	}
	for _, a := range []string{speakerAddr, "A0:AB:51:33:B7:13"} {
		if _, err := sim.AddDevice("hci0", a, speaker); err != nil {
			t.Fatal(err)
		}
		if err := sim.Pair("hci0", a); err != nil {
			t.Fatal(err)
		}
	}
	if err := sim.SetDeviceProperty("hci0", "A0:AB:51:33:B7:13", "Address", "not-an-address"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := Start(ctx, Options{Address: sim.Address()})
	got := waitFor(t, r, "read", func(s []Speaker, f bool) bool { return f })
	if len(got) != 1 || got[0].Address.String() != speakerAddr {
		t.Fatalf("speakers %+v, want only %s", got, speakerAddr)
	}
}

func TestNoBus(t *testing.T) {
	r := Start(context.Background(), Options{})
	select {
	case <-r.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("a reader with no bus keeps running")
	}
	if s, f := r.Speakers(); len(s) != 0 || f {
		t.Fatalf("speakers %v, following %v with no bus", s, f)
	}
}
