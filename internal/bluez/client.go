// SPDX-License-Identifier: Apache-2.0

package bluez

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/liken-sh/operators/internal/dbusd"
)

// AddressEnv is the environment variable that names the system bus, as the
// D-Bus specification ("Well-known Message Bus Instances") defines it.
const AddressEnv = "DBUS_SYSTEM_BUS_ADDRESS"

// Defaults for Options.
const (
	// DefaultWait bounds the wait for the bus socket and then for
	// org.bluez; past it, the kubelet's restart is the retry.
	DefaultWait = 30 * time.Second
	// DefaultCallTimeout bounds every method call into bluetoothd.
	DefaultCallTimeout = 10 * time.Second
	// pollInterval is how often the socket and the name owner are
	// re-checked while waiting.
	pollInterval = 100 * time.Millisecond
)

// Options configure Connect.
type Options struct {
	// Address is the bus address, "unix:path=<absolute path>", the one
	// form dbusd.SocketPath accepts: the pod shares its bus as a socket
	// file on a volume and Connect waits for that file, so no other
	// transport could work. Empty means the value of
	// DBUS_SYSTEM_BUS_ADDRESS.
	Address string
	// Wait bounds the wait for the socket and, separately, for org.bluez
	// to have an owner; zero means DefaultWait.
	Wait time.Duration
	// CallTimeout bounds each method call; zero means DefaultCallTimeout.
	CallTimeout time.Duration
}

// Client is a private connection to the system bus on which bluetoothd owns
// org.bluez. It is safe for concurrent use.
type Client struct {
	conn        *dbus.Conn
	owner       string // unique name that owned org.bluez at Connect
	callTimeout time.Duration

	sigs    chan *dbus.Signal
	changes chan Change
	done    chan struct{}

	agent agentState

	mu     sync.Mutex
	err    error
	closed bool
}

// Connect waits (bounded by opts.Wait and ctx) until the bus socket exists
// and accepts a connection, subscribes to BlueZ's change signals and to
// org.bluez's owner changes, then waits (bounded again) until org.bluez has
// an owner. Subscribing before the first read means no change between the
// caller's first ManagedObjects and its first Change is lost.
//
// Errors: a bad address (see dbusd.SocketPath); ErrNoBus or ErrNoBlueZ, wrapped
// with the last failure seen; ctx's error.
func Connect(ctx context.Context, opts Options) (*Client, error) {
	if opts.Address == "" {
		opts.Address = os.Getenv(AddressEnv)
		if opts.Address == "" {
			return nil, fmt.Errorf("%s is not set", AddressEnv)
		}
	}
	if opts.Wait <= 0 {
		opts.Wait = DefaultWait
	}
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = DefaultCallTimeout
	}
	socket, err := dbusd.SocketPath(opts.Address)
	if err != nil {
		return nil, err
	}
	conn, err := dialWhenReady(ctx, opts.Address, socket, opts.Wait)
	if err != nil {
		return nil, err
	}
	c := &Client{
		conn:        conn,
		callTimeout: opts.CallTimeout,
		sigs:        make(chan *dbus.Signal, 64),
		changes:     make(chan Change),
		done:        make(chan struct{}),
	}
	conn.Signal(c.sigs)
	if err := c.subscribe(ctx); err != nil {
		conn.Close()
		return nil, err
	}
	owner, err := c.waitForOwner(ctx, opts.Wait)
	if err != nil {
		conn.Close()
		return nil, err
	}
	c.owner = owner
	go c.pump()
	return c, nil
}

// dialWhenReady retries until socket is a socket file and a D-Bus
// connection on it authenticates.
func dialWhenReady(ctx context.Context, address, socket string, wait time.Duration) (*dbus.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	var last error
	for {
		fi, err := os.Stat(socket)
		switch {
		case err != nil:
			last = err
		case fi.Mode().Type() != fs.ModeSocket:
			last = fmt.Errorf("%s is not a socket (mode %v)", socket, fi.Mode())
		default:
			conn, err := dbus.Connect(address)
			if err == nil {
				return conn, nil
			}
			last = err
		}
		select {
		case <-ctx.Done():
			if context.Cause(ctx) == context.DeadlineExceeded {
				return nil, fmt.Errorf("%w within %v at %s: %v", ErrNoBus, wait, socket, last)
			}
			return nil, fmt.Errorf("waiting for the bus at %s: %w (last: %v)", socket, ctx.Err(), last)
		case <-time.After(pollInterval):
		}
	}
}

// subscribe adds the match rules: org.bluez's owner changes, BlueZ's
// ObjectManager signals, and property changes of adapters and devices
// (adapters too, so that page scan switched off wakes the operator).
func (c *Client) subscribe(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, c.callTimeout)
	defer cancel()
	rules := [][]dbus.MatchOption{
		{dbus.WithMatchSender("org.freedesktop.DBus"), dbus.WithMatchInterface("org.freedesktop.DBus"),
			dbus.WithMatchMember("NameOwnerChanged"), dbus.WithMatchArg(0, Service)},
		{dbus.WithMatchSender(Service), dbus.WithMatchInterface(objectManagerInterface), dbus.WithMatchMember("InterfacesAdded")},
		{dbus.WithMatchSender(Service), dbus.WithMatchInterface(objectManagerInterface), dbus.WithMatchMember("InterfacesRemoved")},
		{dbus.WithMatchSender(Service), dbus.WithMatchInterface(propertiesInterface), dbus.WithMatchMember("PropertiesChanged"),
			dbus.WithMatchArg(0, DeviceInterface)},
		{dbus.WithMatchSender(Service), dbus.WithMatchInterface(propertiesInterface), dbus.WithMatchMember("PropertiesChanged"),
			dbus.WithMatchArg(0, AdapterInterface)},
	}
	for _, r := range rules {
		if err := c.conn.AddMatchSignalContext(ctx, r...); err != nil {
			return fmt.Errorf("subscribing to BlueZ signals: %w", err)
		}
	}
	return nil
}

// waitForOwner returns org.bluez's unique owner name once it has one. The
// NameOwnerChanged rule is in place first, so an owner that arrives
// between two checks wakes the wait at once; the poll is a backstop.
func (c *Client) waitForOwner(ctx context.Context, wait time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	for {
		owner, err := c.nameOwner(ctx)
		if err != nil {
			return "", err
		}
		if owner != "" {
			return owner, nil
		}
		select {
		case <-ctx.Done():
			if context.Cause(ctx) == context.DeadlineExceeded {
				return "", fmt.Errorf("%w within %v", ErrNoBlueZ, wait)
			}
			return "", fmt.Errorf("waiting for org.bluez: %w", ctx.Err())
		case _, ok := <-c.sigs:
			// Any signal is a reason to look again. BlueZ's own signals
			// from before the owner is known need not be kept: the
			// caller's first read comes after Connect returns.
			if !ok {
				return "", fmt.Errorf("waiting for org.bluez: %w", ErrConnectionLost)
			}
		case <-time.After(pollInterval * 5):
		}
	}
}

// nameOwner returns the unique name owning org.bluez, or "" when none does.
// GetNameOwner rather than NameHasOwner, because the unique name is what
// tells a restarted bluetoothd from the one whose objects were read.
func (c *Client) nameOwner(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, c.callTimeout)
	defer cancel()
	var owner string
	err := c.conn.BusObject().CallWithContext(ctx, "org.freedesktop.DBus.GetNameOwner", 0, Service).Store(&owner)
	var derr dbus.Error
	if errors.As(err, &derr) && derr.Name == "org.freedesktop.DBus.Error.NameHasNoOwner" {
		return "", nil
	}
	if err != nil {
		if !c.conn.Connected() {
			return "", fmt.Errorf("asking who owns org.bluez: %w: %v", ErrConnectionLost, err)
		}
		return "", fmt.Errorf("asking who owns org.bluez: %w", err)
	}
	return owner, nil
}

// Owner returns the unique bus name (":1.N") of the bluetoothd this client
// follows.
func (c *Client) Owner() string { return c.owner }

// ManagedObjects reads BlueZ's whole object tree with one
// ObjectManager.GetManagedObjects call on "/", bounded by the call timeout.
//
// Errors: the call failed (wrapped D-Bus error, or ErrConnectionLost when
// the bus went away); a reply of the wrong shape. Properties of the wrong
// type are not errors here; they are listed in Objects.Problems.
func (c *Client) ManagedObjects(ctx context.Context) (Objects, error) {
	ctx, cancel := context.WithTimeout(ctx, c.callTimeout)
	defer cancel()
	var reply managedObjects
	call := c.conn.Object(Service, "/").CallWithContext(ctx, objectManagerInterface+".GetManagedObjects", 0)
	if err := call.Store(&reply); err != nil {
		return Objects{}, c.callError("reading BlueZ's objects (GetManagedObjects)", err)
	}
	return decodeObjects(reply), nil
}

// SetConnectable switches the adapter's page scan on (Adapter1.Connectable
// = true through Properties.Set), bounded by the call timeout.
//
// Errors name the adapter: BlueZ refused (e.g. org.bluez.Error.Failed when
// the adapter is off), the call timed out, or the bus went away.
func (c *Client) SetConnectable(ctx context.Context, adapter dbus.ObjectPath) error {
	ctx, cancel := context.WithTimeout(ctx, c.callTimeout)
	defer cancel()
	call := c.conn.Object(Service, adapter).CallWithContext(ctx, propertiesInterface+".Set", 0,
		AdapterInterface, "Connectable", dbus.MakeVariant(true))
	if call.Err != nil {
		return c.callError(fmt.Sprintf("setting %s Connectable=true", adapter), call.Err)
	}
	return nil
}

// callError wraps a failed call, marking a lost connection or a departed
// bluetoothd so that the caller can tell them from a refusal.
func (c *Client) callError(what string, err error) error {
	if !c.conn.Connected() {
		return fmt.Errorf("%s: %w: %v", what, ErrConnectionLost, err)
	}
	if stop := c.Err(); stop != nil {
		return fmt.Errorf("%s: %w: %v", what, stop, err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s: no answer within %v: %w", what, c.callTimeout, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// Changes returns the stream of changes BlueZ announces, in arrival order.
// It is closed when the client stops; Err then says why (ErrBlueZGone,
// ErrConnectionLost or ErrClosed). A consumer that falls far behind gets
// one Change of kind Resync in place of what it missed.
func (c *Client) Changes() <-chan Change { return c.changes }

// Done is closed when the client has stopped for good.
func (c *Client) Done() <-chan struct{} { return c.done }

// Err returns nil while the client runs, then why it stopped.
func (c *Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Close closes the connection; Changes closes and Err returns ErrClosed.
func (c *Client) Close() error {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	err := c.conn.Close()
	<-c.done
	return err
}

// stop records why the client stopped; the first reason wins.
func (c *Client) stop(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return
	}
	if c.closed {
		err = ErrClosed
	}
	c.err = err
}
