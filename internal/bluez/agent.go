// SPDX-License-Identifier: Apache-2.0

package bluez

import (
	"context"
	"fmt"
	"sync"

	"github.com/godbus/dbus/v5"
)

// AgentPath is where this client exports its pairing agent.
const AgentPath = dbus.ObjectPath("/sh/liken/bluetooth/agent")

// AgentCapability is the IO capability the agent registers with:
// KeyboardDisplay, so that bluetoothd may ask for every kind of answer
// (Just Works, passkey display and entry, numeric comparison, PIN codes)
// and the handler decides what it can give. The capability drives the
// Secure Simple Pairing association model (Core spec Vol 3 Part C 5.2.2).
const AgentCapability = "KeyboardDisplay"

// AgentHandler answers bluetoothd's agent calls (BlueZ
// doc/org.bluez.Agent.rst). Methods are called concurrently, on the bus's
// goroutines, and may block until a person answers; bluetoothd cancels a
// request it gave up on with Cancel. An error refuses the request; use
// ErrRejected or ErrCanceled, whose D-Bus names bluetoothd knows.
type AgentHandler interface {
	// RequestPinCode returns a legacy PIN (1 to 16 characters).
	RequestPinCode(device dbus.ObjectPath) (string, error)
	// DisplayPinCode shows a PIN the person types on the device.
	DisplayPinCode(device dbus.ObjectPath, pin string) error
	// RequestPasskey returns the passkey (0 to 999999) the device shows.
	RequestPasskey(device dbus.ObjectPath) (uint32, error)
	// DisplayPasskey shows a passkey the person types on the device;
	// entered counts the keys typed so far.
	DisplayPasskey(device dbus.ObjectPath, passkey uint32, entered uint16)
	// RequestConfirmation returns nil when the person confirms that the
	// device shows passkey.
	RequestConfirmation(device dbus.ObjectPath, passkey uint32) error
	// RequestAuthorization authorises a Just Works pairing the device
	// started.
	RequestAuthorization(device dbus.ObjectPath) error
	// AuthorizeService authorises a connection to a service (uuid).
	AuthorizeService(device dbus.ObjectPath, uuid string) error
	// Cancel says bluetoothd gave up the request in progress.
	Cancel()
}

// Errors an AgentHandler returns to refuse.
var (
	ErrRejected = dbus.NewError("org.bluez.Error.Rejected", []any{"rejected"})
	ErrCanceled = dbus.NewError("org.bluez.Error.Canceled", []any{"canceled"})
)

// agentObject is what godbus exports at AgentPath: its method names are
// Agent1's.
type agentObject struct{ h AgentHandler }

func dbusErr(err error) *dbus.Error {
	if err == nil {
		return nil
	}
	if de, ok := err.(*dbus.Error); ok {
		return de
	}
	return dbus.NewError("org.bluez.Error.Rejected", []any{err.Error()})
}

func (a agentObject) Release() *dbus.Error { return nil }
func (a agentObject) Cancel() *dbus.Error  { a.h.Cancel(); return nil }
func (a agentObject) RequestPinCode(d dbus.ObjectPath) (string, *dbus.Error) {
	pin, err := a.h.RequestPinCode(d)
	return pin, dbusErr(err)
}
func (a agentObject) DisplayPinCode(d dbus.ObjectPath, pin string) *dbus.Error {
	return dbusErr(a.h.DisplayPinCode(d, pin))
}
func (a agentObject) RequestPasskey(d dbus.ObjectPath) (uint32, *dbus.Error) {
	p, err := a.h.RequestPasskey(d)
	return p, dbusErr(err)
}
func (a agentObject) DisplayPasskey(d dbus.ObjectPath, passkey uint32, entered uint16) *dbus.Error {
	a.h.DisplayPasskey(d, passkey, entered)
	return nil
}
func (a agentObject) RequestConfirmation(d dbus.ObjectPath, passkey uint32) *dbus.Error {
	return dbusErr(a.h.RequestConfirmation(d, passkey))
}
func (a agentObject) RequestAuthorization(d dbus.ObjectPath) *dbus.Error {
	return dbusErr(a.h.RequestAuthorization(d))
}
func (a agentObject) AuthorizeService(d dbus.ObjectPath, uuid string) *dbus.Error {
	return dbusErr(a.h.AuthorizeService(d, uuid))
}

// agentState is whether the agent is exported and registered.
type agentState struct {
	mu         sync.Mutex
	exported   bool
	registered bool
}

// RegisterAgent exports h at AgentPath (once per client) and registers it
// with bluetoothd as the default agent (AgentManager1.RegisterAgent with
// AgentCapability, then RequestDefaultAgent). Registering again is
// harmless. Errors name the step that failed.
func (c *Client) RegisterAgent(ctx context.Context, h AgentHandler) error {
	c.agent.mu.Lock()
	defer c.agent.mu.Unlock()
	if !c.agent.exported {
		if err := c.conn.Export(agentObject{h}, AgentPath, AgentInterface); err != nil {
			return fmt.Errorf("exporting the pairing agent: %w", err)
		}
		c.agent.exported = true
	}
	if c.agent.registered {
		return nil
	}
	err := c.call(ctx, 0, agentManagerPath, AgentManagerInterface+".RegisterAgent", AgentPath, AgentCapability)
	if err != nil && ErrorName(err) != "org.bluez.Error.AlreadyExists" {
		return err
	}
	if err := c.call(ctx, 0, agentManagerPath, AgentManagerInterface+".RequestDefaultAgent", AgentPath); err != nil {
		return err
	}
	c.agent.registered = true
	return nil
}

// UnregisterAgent withdraws the agent from bluetoothd, so that nothing
// answers pairing on a person's behalf outside a window; an agent not
// registered (org.bluez.Error.DoesNotExist) is success.
func (c *Client) UnregisterAgent(ctx context.Context) error {
	c.agent.mu.Lock()
	defer c.agent.mu.Unlock()
	c.agent.registered = false
	err := c.call(ctx, 0, agentManagerPath, AgentManagerInterface+".UnregisterAgent", AgentPath)
	if ErrorName(err) == "org.bluez.Error.DoesNotExist" {
		return nil
	}
	return err
}
