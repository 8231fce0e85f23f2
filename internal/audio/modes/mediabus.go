// SPDX-License-Identifier: Apache-2.0

package modes

import (
	"context"
	"fmt"
	"time"

	"github.com/godbus/dbus/v5"
)

// WirePlumber registers its A2DP endpoints with bluetoothd once, on the
// media bus it connected to at start, and neither WirePlumber 0.5 nor
// PipeWire's bluez5 plugin connects again when that bus goes away: a
// dbus-daemon that restarted (the Bluetooth pod's bluetoothd container
// restarting) leaves a WirePlumber with no endpoints until its container
// restarts. The liveness probe finds that within its 20 s × 3 window
// (deploy/audio/operator.yaml). The wireplumber mode also watches the bus itself: when
// the connection it held ends and a different bus (another
// org.freedesktop.DBus.GetId) answers at the same address, it ends the
// container at once, and the kubelet starts a new WirePlumber on the new
// bus. The probe stays the backstop for every other way endpoints go.

// Bounds of the media bus watch. A new dbus-daemon answers within about
// 2 s of the old one's end (measured with the Bluetooth pod's bluetoothd
// container); the wait outlasts the kubelet's crash backoff (5 min), as
// PipeWireReturnLimit does.
const (
	mediaBusPoll       = 200 * time.Millisecond
	mediaBusReturn     = 6 * time.Minute
	mediaBusConnectFor = 3 * time.Second
)

// busID connects to address and returns the bus's ID
// (org.freedesktop.DBus.GetId, unique to one dbus-daemon run) with the
// open connection.
func busID(ctx context.Context, address string) (*dbus.Conn, string, error) {
	conn, err := connectBus(ctx, address, mediaBusConnectFor)
	if err != nil {
		return nil, "", err
	}
	var id string
	if err := conn.BusObject().CallWithContext(ctx, "org.freedesktop.DBus.GetId", 0).Store(&id); err != nil {
		conn.Close()
		return nil, "", fmt.Errorf("GetId: %w", err)
	}
	return conn, id, nil
}

// watchMediaBus follows the bus at address until ctx ends, and returns
// (closing replaced) when the bus it was connected to has been replaced
// by another that answers at address; it returns without closing it when
// ctx ends or no bus answers within returnLimit after a loss. Before the
// first connection it tries every poll, quietly: a bus that is not there
// yet is the probe's to judge. A connection that drops while the same
// bus still answers is made again.
func watchMediaBus(ctx context.Context, address string, poll, returnLimit time.Duration, replaced chan<- struct{}, logf func(string, ...any)) {
	var (
		conn *dbus.Conn
		id   string
	)
	for {
		c, got, err := busID(ctx, address)
		if err == nil {
			conn, id = c, got
			break
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(poll):
		}
	}
	logf("media bus %s answers (bus ID %s): watching it", address, id)
	for {
		select {
		case <-ctx.Done():
			conn.Close()
			return
		case <-conn.Context().Done():
		}
		lost := time.Now()
		logf("the connection to media bus %s ended: waiting up to %v for a bus there", address, returnLimit)
		for {
			c, got, err := busID(ctx, address)
			if err == nil {
				if got == id {
					// The same daemon: only this connection went.
					conn = c
					logf("media bus %s still has bus ID %s: watching it again", address, id)
					break
				}
				c.Close()
				logf("a new media bus answers at %s (bus ID %s, was %s) %v after the loss: ending this container, so that the kubelet starts WirePlumber again on it",
					address, got, id, time.Since(lost).Round(time.Millisecond))
				close(replaced)
				return
			}
			if time.Since(lost) > returnLimit {
				logf("no media bus answered at %s within %v: leaving WirePlumber to the liveness probe", address, returnLimit)
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(poll):
			}
		}
	}
}
