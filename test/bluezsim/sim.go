// SPDX-License-Identifier: Apache-2.0

package bluezsim

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/liken-sh/operators/internal/dbusd"
	"github.com/liken-sh/operators/test/child"
)

// template is the dbusmock template that is the simulated bluetoothd.
//
//go:embed bluez_liken.py
var template []byte

// Python is the interpreter that runs dbusmock: Debian's, which sees the
// python3-dbusmock package; a python3 earlier on PATH (pyenv's, here) does
// not.
const Python = "/usr/bin/python3"

// DefaultStartTimeout bounds the wait for org.bluez to be owned after the
// BlueZ side starts. Python imports dbusmock in about 0.1 s warm, but a
// cold start on a loaded 2-core machine was measured at 4 to 12 s.
const DefaultStartTimeout = 60 * time.Second

// callTimeout bounds each control call to the simulator.
const callTimeout = 30 * time.Second

// Service is BlueZ's bus name.
const Service = "org.bluez"

// controlInterface is the simulator's own interface on /, which only this
// package calls.
const controlInterface = "sh.liken.BluezSim1"

// Options configures Start.
type Options struct {
	// StorageDir is the simulated bluetoothd's storage root, the
	// /var/lib/bluetooth of the pod. Empty means a directory inside the
	// simulator's own, removed by Stop; a given one is left in place.
	StorageDir string
	// Policy is the bus's security policy. The zero value,
	// dbusd.PolicySystem, is the distribution's system policy with
	// BlueZ's bluetooth.conf, and needs root; dbusd.PolicyOpen lets
	// anyone do anything.
	Policy dbusd.Policy
	// LateWrite delays the one part of a bond bluetoothd writes on an idle
	// callback after the keys, an LE device's [General] AddressType; zero
	// writes it on the next idle turn of the main loop, as bluetoothd
	// does.
	LateWrite time.Duration
	// StartTimeout bounds the wait for org.bluez to be owned; zero means
	// DefaultStartTimeout.
	StartTimeout time.Duration
	// PageTimeout is how long a page of a device that does not answer
	// (switched off: SetSwitchedOn) lasts before Device1.Connect fails;
	// zero means a controller's default, 5.12 s.
	PageTimeout time.Duration
}

// DefaultPageTimeout is a controller's page timeout after reset: 0x2000
// slots of 0.625 ms (Bluetooth Core Vol 4 Part E 7.3.16, Write Page
// Timeout).
const DefaultPageTimeout = 5120 * time.Millisecond

// Sim is a running simulator: a private system bus and, on it, the
// simulated bluetoothd. Its methods are safe for concurrent use.
type Sim struct {
	opts    Options
	dir     string // temporary: socket, template, logs
	storage string
	bus     *dbusd.Daemon
	conn    *dbus.Conn // the simulator's control connection

	mu       sync.Mutex
	bluez    *child.Process  // nil while the BlueZ side is stopped
	busDown  bool            // between StopBus and StartBus
	adapters []adapterRecord // re-registered when the BlueZ side restarts
	// off holds the devices switched off (adapter name, address): a
	// device's power outlives a restart of bluetoothd.
	off     map[[2]string]bool
	stopped bool
}

// adapterRecord is an adapter as AddAdapter registered it.
type adapterRecord struct {
	name, address string
	props         map[string]dbus.Variant
}

// Start starts the bus and the simulated bluetoothd with no adapter, and
// returns once org.bluez is owned. Errors name the component that failed,
// with the end of its output; nothing is left running on error.
func Start(ctx context.Context, opts Options) (*Sim, error) {
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = DefaultStartTimeout
	}
	if opts.PageTimeout <= 0 {
		opts.PageTimeout = DefaultPageTimeout
	}
	// A short directory name: the socket path must fit in 107 bytes.
	dir, err := os.MkdirTemp("", "bluezsim")
	if err != nil {
		return nil, fmt.Errorf("bluezsim: %w", err)
	}
	s := &Sim{opts: opts, dir: dir, storage: opts.StorageDir}
	fail := func(err error) (*Sim, error) {
		s.Stop()
		return nil, err
	}
	if s.storage == "" {
		s.storage = filepath.Join(dir, "storage")
	}
	if !filepath.IsAbs(s.storage) {
		return fail(fmt.Errorf("bluezsim: storage directory %q is not absolute", s.storage))
	}
	if err := os.MkdirAll(s.storage, 0o755); err != nil {
		return fail(fmt.Errorf("bluezsim: storage directory: %w", err))
	}
	if err := os.WriteFile(s.templatePath(), template, 0o644); err != nil {
		return fail(fmt.Errorf("bluezsim: write template: %w", err))
	}
	busLog, err := os.Create(filepath.Join(dir, "dbus-daemon.log"))
	if err != nil {
		return fail(fmt.Errorf("bluezsim: %w", err))
	}
	defer busLog.Close() // the daemon holds its own descriptor
	s.bus, err = dbusd.Start(ctx, s.busOptions(busLog))
	if err != nil {
		return fail(fmt.Errorf("bluezsim: %w", err))
	}
	if s.conn, err = dbus.Connect(s.bus.Address()); err != nil {
		return fail(fmt.Errorf("bluezsim: control connection: %w", err))
	}
	if err := s.StartBlueZ(ctx); err != nil {
		return fail(err)
	}
	return s, nil
}

// busOptions are the bus's options, the same at every start: one socket
// path for the simulator's life.
func (s *Sim) busOptions(log *os.File) dbusd.Options {
	return dbusd.Options{
		SocketPath:    filepath.Join(s.dir, "system_bus_socket"),
		Policy:        s.opts.Policy,
		KeepUser:      true,
		Stdout:        log,
		Stderr:        log,
		DieWithParent: true,
	}
}

// New starts a simulator for a test, failing it on error, and stops the
// simulator when the test ends; a failed test's log shows the end of the
// simulator's call log.
func New(t testing.TB, opts Options) *Sim {
	t.Helper()
	s, err := Start(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("bluezsim call log (%s), last lines:\n%s", s.LogPath(), child.Tail(s.LogPath(), 40))
		}
		if err := s.Stop(); err != nil {
			t.Errorf("bluezsim: stop: %v", err)
		}
	})
	return s
}

// Address returns the bus's address, unix:path=..., for
// DBUS_SYSTEM_BUS_ADDRESS or godbus's Connect.
func (s *Sim) Address() string { return s.bus.Address() }

// SocketPath returns the bus socket's path.
func (s *Sim) SocketPath() string { return s.bus.SocketPath() }

// StorageDir returns the storage root the simulated bluetoothd writes bonds
// under.
func (s *Sim) StorageDir() string { return s.storage }

// LogPath returns the file where the simulated bluetoothd logs every call
// it receives and every signal it emits.
func (s *Sim) LogPath() string { return filepath.Join(s.dir, "bluez.log") }

func (s *Sim) templatePath() string { return filepath.Join(s.dir, "bluez_liken.py") }

// StartBlueZ starts the simulated bluetoothd, waits until it owns org.bluez,
// and registers again every adapter added before, which loads the bonds
// stored under each. It fails if the BlueZ side is already running.
func (s *Sim) StartBlueZ(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return errors.New("bluezsim: stopped")
	}
	if s.bluez != nil {
		return errors.New("bluezsim: the BlueZ side is already running")
	}
	if s.busDown {
		return errors.New("bluezsim: the bus is stopped (StartBus)")
	}
	params, err := json.Marshal(map[string]any{"storage": s.storage, "late_write_ms": s.opts.LateWrite.Milliseconds(),
		"page_timeout_ms": s.opts.PageTimeout.Milliseconds()})
	if err != nil {
		return err
	}
	p, err := child.Start(filepath.Join(s.dir, "bluez-stderr.log"), append(os.Environ(), "DBUS_SYSTEM_BUS_ADDRESS="+s.bus.Address()),
		Python, "-m", "dbusmock", "--system", "--template", s.templatePath(), "-p", string(params), "-l", s.LogPath())
	if err != nil {
		return fmt.Errorf("bluezsim: start %s: %w", Python, err)
	}
	if err := s.waitOwner(ctx, p); err != nil {
		p.Stop()
		return err
	}
	s.bluez = p
	for _, a := range s.adapters {
		if err := s.call(ctx, "AddAdapter", a.name, a.address, a.props); err != nil {
			return fmt.Errorf("bluezsim: register adapter %s again: %w", a.name, err)
		}
	}
	for dev := range s.off {
		// A device that did not come back (not bonded) is off the air
		// anyway.
		if err := s.call(ctx, "SetSwitchedOn", dev[0], dev[1], false); err != nil && dbusErrorName(err) != controlInterface+".NoSuchDevice" {
			return fmt.Errorf("bluezsim: switch %s off again: %w", dev[1], err)
		}
	}
	return nil
}

// dbusErrorName is the D-Bus error name in err, or "".
func dbusErrorName(err error) string {
	var e dbus.Error
	if errors.As(err, &e) {
		return e.Name
	}
	return ""
}

// waitOwner polls until org.bluez has an owner, p exits, or the bound
// passes.
func (s *Sim) waitOwner(ctx context.Context, p *child.Process) error {
	switch err := s.waitOwned(ctx, s.opts.StartTimeout, p.Done()); {
	case err == nil:
		return nil
	case errors.Is(err, errExited):
		return fmt.Errorf("bluezsim: the simulated bluetoothd exited (%v) before owning %s:\n%s", p.Err(), Service, child.Tail(p.LogPath, 20))
	default:
		return fmt.Errorf("bluezsim: %s not owned after %v: %w\n%s", Service, s.opts.StartTimeout, err, child.Tail(p.LogPath, 20))
	}
}

// errExited is waitOwned's answer when the process it watches exits.
var errExited = errors.New("exited")

// waitOwned polls every 20 ms until org.bluez has an owner on the Sim's
// bus (nil), exited closes first (errExited; a nil channel never
// does), or timeout passes or ctx ends (ctx's error).
func (s *Sim) waitOwned(ctx context.Context, timeout time.Duration, exited <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		var owned bool
		err := s.conn.BusObject().CallWithContext(ctx, "org.freedesktop.DBus.NameHasOwner", 0, Service).Store(&owned)
		if err == nil && owned {
			return nil
		}
		select {
		case <-exited:
			return errExited
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// StopBlueZ stops the simulated bluetoothd; org.bluez leaves the bus, and
// clients see NameOwnerChanged with an empty new owner, as when bluetoothd
// exits. The bus and the storage stay. Stopping a stopped BlueZ side is
// harmless.
func (s *Sim) StopBlueZ() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopBlueZLocked()
}

func (s *Sim) stopBlueZLocked() error {
	if s.bluez == nil {
		return nil
	}
	s.bluez.Stop()
	s.bluez = nil
	if s.conn == nil {
		return nil
	}
	// The name is released when the process's connection closes; wait
	// for the bus to say so, so that a restart cannot race the old owner.
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	for {
		var owned bool
		if err := s.conn.BusObject().CallWithContext(ctx, "org.freedesktop.DBus.NameHasOwner", 0, Service).Store(&owned); err != nil {
			return fmt.Errorf("bluezsim: after stopping BlueZ: %w", err)
		}
		if !owned {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("bluezsim: %s still owned after its process ended", Service)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// Stop stops the simulated bluetoothd and then the bus, and removes the
// simulator's directory (and the storage, unless Options.StorageDir named
// it). Stopping twice is harmless.
func (s *Sim) Stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return nil
	}
	s.stopped = true
	var errs []error
	if err := s.stopBlueZLocked(); err != nil {
		errs = append(errs, err)
	}
	if s.conn != nil {
		s.conn.Close()
	}
	if s.bus != nil && !s.busDown {
		if err := s.bus.Stop(); err != nil {
			errs = append(errs, err)
		}
	}
	// The directory is the simulator's own; a storage directory the
	// caller named lies outside it and stays.
	if err := os.RemoveAll(s.dir); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Attach controls a simulator that runs elsewhere, on the bus at address
// (unix:path=...): one started by the bluezsim-daemon command in a
// bluetoothd container, say. The returned Sim has no bus and no BlueZ
// process of its own: StartBlueZ fails, StopBlueZ does nothing, and Stop
// only closes the connection. storage is the simulator's storage root as
// the caller sees it ("" when the caller does not read it).
func Attach(address, storage string) (*Sim, error) {
	conn, err := dbus.Connect(address)
	if err != nil {
		return nil, fmt.Errorf("bluezsim: connect to %s: %w", address, err)
	}
	return &Sim{storage: storage, conn: conn}, nil
}

// Template returns the dbusmock template that is the simulated bluetoothd,
// for a command that runs it itself (python3 -m dbusmock --system
// --template FILE -p '{"storage": DIR}').
func Template() []byte { return template }

// WaitBlueZ waits, up to timeout, until org.bluez has an owner on the
// Sim's bus: for an attached Sim, whose simulator starts on its own.
func (s *Sim) WaitBlueZ(ctx context.Context, timeout time.Duration) error {
	if err := s.waitOwned(ctx, timeout, nil); err != nil {
		return fmt.Errorf("bluezsim: %s not owned after %s", Service, timeout)
	}
	return nil
}
