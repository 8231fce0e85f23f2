// SPDX-License-Identifier: Apache-2.0

package bluez

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/godbus/dbus/v5"
)

// More of BlueZ's interfaces (BlueZ doc/org.bluez.AgentManager.rst,
// doc/org.bluez.Battery.rst).
const (
	AgentManagerInterface = "org.bluez.AgentManager1"
	AgentInterface        = "org.bluez.Agent1"
	BatteryInterface      = "org.bluez.Battery1"
	// agentManagerPath is where bluetoothd serves AgentManager1.
	agentManagerPath = dbus.ObjectPath("/org/bluez")
)

// PairTimeout bounds Device1.Pair: bluetoothd's own agent requests time
// out after 60 s (src/agent.c REQUEST_TIMEOUT), and a person typing a
// passkey needs most of that.
const PairTimeout = 90 * time.Second

// ErrorName returns the D-Bus error name in err ("org.bluez.Error.Failed"),
// or "" when err carries none.
func ErrorName(err error) string {
	var derr dbus.Error
	if errors.As(err, &derr) {
		return derr.Name
	}
	var perr *dbus.Error
	if errors.As(err, &perr) && perr != nil {
		return perr.Name
	}
	return ""
}

// call invokes method on path with the call timeout (or timeout when it
// is larger), wrapping failures as callError does.
func (c *Client) call(ctx context.Context, timeout time.Duration, path dbus.ObjectPath, method string, args ...any) error {
	if timeout < c.callTimeout {
		timeout = c.callTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := c.conn.Object(Service, path).CallWithContext(ctx, method, 0, args...).Err; err != nil {
		return c.callError(fmt.Sprintf("%s on %s", method, path), err)
	}
	return nil
}

// SetProperty writes property name of iface on path through
// Properties.Set; value's Go type is its D-Bus type (bool, string,
// uint32). Errors name the object and property: BlueZ refused it
// (org.bluez.Error.Failed, InvalidArguments), no answer, or the bus went
// away.
func (c *Client) SetProperty(ctx context.Context, path dbus.ObjectPath, iface, name string, value any) error {
	return c.call(ctx, 0, path, propertiesInterface+".Set", iface, name, dbus.MakeVariant(value))
}

// StartDiscovery starts this client's discovery session on the adapter
// (Adapter1.StartDiscovery). A session already running
// (org.bluez.Error.InProgress) is success.
func (c *Client) StartDiscovery(ctx context.Context, adapter dbus.ObjectPath) error {
	err := c.call(ctx, 0, adapter, AdapterInterface+".StartDiscovery")
	if ErrorName(err) == "org.bluez.Error.InProgress" {
		return nil
	}
	return err
}

// StopDiscovery stops this client's discovery session. No session
// (org.bluez.Error.Failed) and an adapter that is off
// (org.bluez.Error.NotReady) are success: there is nothing to stop.
func (c *Client) StopDiscovery(ctx context.Context, adapter dbus.ObjectPath) error {
	err := c.call(ctx, 0, adapter, AdapterInterface+".StopDiscovery")
	switch ErrorName(err) {
	case "org.bluez.Error.Failed", "org.bluez.Error.NotReady":
		return nil
	}
	return err
}

// Pair runs Device1.Pair, bounded by PairTimeout; bluetoothd calls the
// default agent meanwhile. Errors carry BlueZ's name
// (org.bluez.Error.AuthenticationFailed, AuthenticationRejected,
// AuthenticationCanceled, ConnectionAttemptFailed, AlreadyExists, ...;
// see ErrorName).
func (c *Client) Pair(ctx context.Context, device dbus.ObjectPath) error {
	return c.call(ctx, PairTimeout, device, DeviceInterface+".Pair")
}

// CancelPairing runs Device1.CancelPairing; no pairing in progress
// (org.bluez.Error.DoesNotExist) is success.
func (c *Client) CancelPairing(ctx context.Context, device dbus.ObjectPath) error {
	err := c.call(ctx, 0, device, DeviceInterface+".CancelPairing")
	if ErrorName(err) == "org.bluez.Error.DoesNotExist" {
		return nil
	}
	return err
}

// ConnectTimeout bounds Device1.Connect and ConnectProfile: bluetoothd
// answers once the link and the profile are up or have failed, which
// takes a page timeout (5.12 s by default) at worst, plus the profile's
// own setup.
const ConnectTimeout = 30 * time.Second

// Connect runs Device1.Connect: bluetoothd brings the link up and
// connects the device's auto-connect profiles (A2DP and AVRCP for a
// speaker). A device already connected (org.bluez.Error.AlreadyConnected)
// is success. Errors carry BlueZ's name (see ErrorName).
func (c *Client) Connect(ctx context.Context, device dbus.ObjectPath) error {
	err := c.call(ctx, ConnectTimeout, device, DeviceInterface+".Connect")
	if ErrorName(err) == "org.bluez.Error.AlreadyConnected" {
		return nil
	}
	return err
}

// ConnectProfile runs Device1.ConnectProfile for the service class uuid
// (lower case, 128-bit): bluetoothd connects that one profile, the link
// first if it is down. Errors carry BlueZ's name
// (org.bluez.Error.Failed with the reason as its message,
// NotAvailable for a profile the device does not offer, InProgress).
func (c *Client) ConnectProfile(ctx context.Context, device dbus.ObjectPath, uuid string) error {
	return c.call(ctx, ConnectTimeout, device, DeviceInterface+".ConnectProfile", uuid)
}

// Disconnect runs Device1.Disconnect; a device that is not connected
// (org.bluez.Error.NotConnected) is success.
func (c *Client) Disconnect(ctx context.Context, device dbus.ObjectPath) error {
	err := c.call(ctx, 0, device, DeviceInterface+".Disconnect")
	if ErrorName(err) == "org.bluez.Error.NotConnected" {
		return nil
	}
	return err
}

// RemoveDevice runs Adapter1.RemoveDevice: bluetoothd drops the link and
// deletes the bond from its storage. A device already gone
// (org.bluez.Error.DoesNotExist) is success.
func (c *Client) RemoveDevice(ctx context.Context, adapter, device dbus.ObjectPath) error {
	err := c.call(ctx, 0, adapter, AdapterInterface+".RemoveDevice", device)
	if ErrorName(err) == "org.bluez.Error.DoesNotExist" {
		return nil
	}
	return err
}
