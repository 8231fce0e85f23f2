// SPDX-License-Identifier: Apache-2.0

//go:build vmtier

package bluez

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/liken-sh/operators/internal/audio/modes"
	"github.com/liken-sh/operators/internal/bdaddr"
	"github.com/liken-sh/operators/test/pwtest"
	"github.com/liken-sh/operators/test/vm/guest"
)

const a2dpSourceUUID = "0000110a-0000-1000-8000-00805f9b34fb"

// waitAdvertises waits up to timeout until the adapter at path lists uuid
// in its Adapter1.UUIDs, read as any client reads it.
func waitAdvertises(path dbus.ObjectPath, uuid string, timeout time.Duration) bool {
	conn, err := dbus.Connect(busAddress)
	if err != nil {
		return false
	}
	defer conn.Close()
	return guest.WaitFor(timeout, func() bool {
		v, err := conn.Object("org.bluez", path).GetProperty("org.bluez.Adapter1.UUIDs")
		uuids, _ := v.Value().([]string)
		return err == nil && slices.ContainsFunc(uuids, func(u string) bool { return strings.EqualFold(u, uuid) })
	})
}

// probeEndpoints runs the audio operator's endpoints-registered probe,
// as the WirePlumber container's probes do, against the guest's bus.
func probeEndpoints(t *testing.T) (int, string) {
	t.Helper()
	var out strings.Builder
	code := modes.EndpointsRegistered(context.Background(), nil, modes.Env{
		Environ: []string{modes.EnvSystemBus + "=" + busAddress}, Stdout: &out, Stderr: &out})
	return code, strings.TrimSpace(out.String())
}

// The VM tier's speaker-side test, with the real bluetoothd 5.66 on a
// btvirt controller: real PipeWire and WirePlumber, configured as the
// audio pod configures them when its claim delivers the media bus,
// register their A2DP source endpoints, and bluetoothd then advertises
// the Audio Source profile in the adapter's UUIDs; the
// endpoints-registered probe passes. When the bus restarts (dbus-daemon
// and bluetoothd, as the bluetoothd container restarting does) the new
// bluetoothd holds no endpoint and the probe fails; restarting WirePlumber
// alone, as the liveness probe makes the kubelet do, registers them again
// and the probe passes.
func TestVMSpeakerEndpoints(t *testing.T) {
	bv, err := guest.StartBtvirt(1)
	if err != nil {
		t.Fatal(err)
	}
	defer bv.Stop()
	s, err := guest.MgmtAddress(bv.Controllers[0])
	if err != nil {
		t.Fatal(err)
	}
	addr, err := bdaddr.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	d := startBluetoothd(t)
	defer func() { d.stop() }()
	hci := waitAdapters(t, d, []bdaddr.Address{addr})[0]
	if code, said := probeEndpoints(t); code != 1 {
		t.Fatalf("before WirePlumber runs the probe passes (%s): it cannot fail", said)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	start := time.Now()
	pw := startDaemons(t, ctx)
	if !waitAdvertises(hci, a2dpSourceUUID, 60*time.Second) {
		t.Fatalf("the adapter does not advertise the Audio Source profile 60 s after WirePlumber started\n%s", pw.Logs())
	}
	t.Logf("%s advertises %s %v after WirePlumber started", hci, a2dpSourceUUID, time.Since(start).Round(time.Millisecond))
	code, said := probeEndpoints(t)
	if code != 0 {
		t.Fatalf("with WirePlumber's endpoints registered the probe fails: %s", said)
	}
	t.Logf("probe: %s", said)

	// The bus restarts.
	d.stop()
	d = startBluetoothd(t)
	hci = waitAdapters(t, d, []bdaddr.Address{addr})[0]
	if code, said = probeEndpoints(t); code != 1 {
		t.Fatalf("after the bus restarted the probe passes (%s): the loss is not seen", said)
	}
	t.Logf("after the bus restart: %s", said)

	// WirePlumber alone restarts.
	pw.StopWirePlumber()
	restart := time.Now()
	if _, err := pw.LaunchWirePlumber(); err != nil {
		t.Fatal(err)
	}
	if !waitAdvertises(hci, a2dpSourceUUID, 60*time.Second) {
		t.Fatalf("the new bluetoothd's adapter does not advertise the Audio Source profile 60 s after WirePlumber restarted\n%s", pw.Logs())
	}
	if code, said = probeEndpoints(t); code != 0 {
		t.Fatalf("after WirePlumber restarted the probe fails: %s", said)
	}
	t.Logf("recovered %v after WirePlumber restarted: %s", time.Since(restart).Round(time.Millisecond), said)
}

// startDaemons starts PipeWire and WirePlumber with the pod's
// configuration and the guest's bus as the media bus. Readiness is left
// to the caller: under software emulation pwtest's usual check, a
// pw-dump, got no answer within 20 s while WirePlumber was still
// starting (measured), and WirePlumber's endpoints are what the test
// waits for anyway.
func startDaemons(t *testing.T, ctx context.Context) *pwtest.Daemons {
	t.Helper()
	pw, err := pwtest.Prepare(pwtest.Options{MediaBus: busAddress, NoGate: true, ReadyTimeout: 90 * time.Second, ReadyAttempt: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pw.Stop() })
	if err := pw.StartPipeWire(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := pw.LaunchWirePlumber(); err != nil {
		t.Fatal(err)
	}
	return pw
}
