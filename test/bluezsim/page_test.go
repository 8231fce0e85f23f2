// SPDX-License-Identifier: Apache-2.0

package bluezsim

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
)

// TestSwitchedOffAnswersNoPage: a paired speaker switched off drops its
// link with reason Remote; a client's Device1.Connect then fails with
// bluetoothd's page-timeout error, and not before the page timeout has
// passed; the device cannot connect by itself either. Switched on, it
// does not connect by itself, and the next Device1.Connect brings the
// link up. Every call is recorded with its outcome, in order.
func TestSwitchedOffAnswersNoPage(t *testing.T) {
	const page = 300 * time.Millisecond
	s, c := setup(t, Options{PageTimeout: page})
	const spk = "A0:AB:51:33:B7:12"
	path, err := s.AddSpeaker("hci0", spk, Speaker{Name: "Kitchen"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Connect("hci0", spk); err != nil {
		t.Fatal(err)
	}
	if err := s.SetSwitchedOn("hci0", spk, false); err != nil {
		t.Fatal(err)
	}
	if d := c.next("Disconnected"); d.Path != path || d.Body[0] != "org.bluez.Reason.Remote" {
		t.Errorf("Disconnected signal = %v %v, want %s with org.bluez.Reason.Remote", d.Path, d.Body, path)
	}
	if got := c.managedObjects()[path][DeviceInterface]["Connected"].Value(); got != false {
		t.Fatalf("switched off: Connected = %v", got)
	}

	connect := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		return c.conn.Object(Service, path).CallWithContext(ctx, DeviceInterface+".Connect", 0).Err
	}
	start := time.Now()
	err = connect()
	took := time.Since(start)
	var derr dbus.Error
	if errorName(err) != "org.bluez.Error.Failed" {
		t.Fatalf("Connect while switched off: %v, want org.bluez.Error.Failed", err)
	}
	if errors.As(err, &derr); len(derr.Body) == 0 || derr.Body[0] != "br-connection-page-timeout" {
		t.Errorf("Connect while switched off: message %v, want br-connection-page-timeout", derr.Body)
	}
	if took < page {
		t.Errorf("Connect while switched off failed after %v, before the %v page timeout", took, page)
	}
	if err := s.Connect("hci0", spk); err == nil {
		t.Error("a switched-off device connected by itself")
	}

	if err := s.SetSwitchedOn("hci0", spk, true); err != nil {
		t.Fatal(err)
	}
	if got := c.managedObjects()[path][DeviceInterface]["Connected"].Value(); got != false {
		t.Errorf("switched on: Connected = %v; a speaker waits to be paged", got)
	}
	if err := connect(); err != nil {
		t.Fatalf("Connect once switched on: %v", err)
	}
	if got := c.managedObjects()[path][DeviceInterface]["Connected"].Value(); got != true {
		t.Errorf("after Connect: Connected = %v", got)
	}

	calls, err := s.ConnectCalls("hci0", spk)
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != 2 {
		t.Fatalf("recorded calls %+v, want 2", calls)
	}
	if calls[0].Pending || calls[0].Error != "org.bluez.Error.Failed: br-connection-page-timeout" || calls[1].Pending || calls[1].Error != "" {
		t.Errorf("recorded outcomes %+v, want a page timeout and then success", calls)
	}
	if calls[1].At <= calls[0].At || calls[1].Sender == "" {
		t.Errorf("recorded calls %+v: arrival times out of order or no sender", calls)
	}
}

// TestSwitchedOffStaysOffAcrossRestart: a speaker's power is its own, so
// one switched off is still off the air when the BlueZ side restarts
// and loads its bond again.
func TestSwitchedOffStaysOffAcrossRestart(t *testing.T) {
	s, _ := setup(t, Options{PageTimeout: 50 * time.Millisecond})
	const spk = "A0:AB:51:33:B7:12"
	path, err := s.AddSpeaker("hci0", spk, Speaker{Name: "Kitchen"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetSwitchedOn("hci0", spk, false); err != nil {
		t.Fatal(err)
	}
	if err := s.StopBlueZ(); err != nil {
		t.Fatal(err)
	}
	if err := s.StartBlueZ(context.Background()); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.conn.Object(Service, path).CallWithContext(ctx, DeviceInterface+".Connect", 0).Err; errorName(err) != "org.bluez.Error.Failed" {
		t.Fatalf("Connect after the restart: %v, want the page timeout", err)
	}
	if err := s.SetSwitchedOn("hci0", spk, true); err != nil {
		t.Fatal(err)
	}
	if err := c.conn.Object(Service, path).CallWithContext(ctx, DeviceInterface+".Connect", 0).Err; err != nil {
		t.Fatalf("Connect once switched on: %v", err)
	}
}
