// SPDX-License-Identifier: Apache-2.0

// Command bluezsim-daemon runs the BlueZ simulator (package bluezsim) in
// bluetoothd's place, for the kubelet tier, where the kernel has no
// Bluetooth: the bluetoothd image's entrypoint starts the pod's system bus
// as it always does and execs this command instead of bluetoothd (its
// -bluetoothd flag). It writes the simulator's template to a temporary
// file, runs it with /usr/bin/python3 -m dbusmock on $DBUS_SYSTEM_BUS_ADDRESS
// with BlueZ's storage root, registers the adapter a radio would bring
// (which loads the bonds stored under it, as bluetoothd does when an
// adapter registers), and then waits for the simulator, forwarding
// SIGTERM and SIGINT to it. Its exit status is the simulator's.
//
// Usage (bluetoothd's own -n, "stay in the foreground", is accepted):
//
//	bluezsim-daemon [-n] [-storage DIR] [-adapter hciN=ADDRESS]
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/liken-sh/operators/test/bluezsim"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "bluezsim-daemon: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	flag.Bool("n", true, "stay in the foreground (always; accepted as bluetoothd accepts it)")
	storage := flag.String("storage", "/var/lib/bluetooth", "BlueZ's storage `directory`")
	adapter := flag.String("adapter", "hci0=00:1A:7D:DA:71:13", "the adapter to register, `hciN=ADDRESS`; empty registers none")
	flag.Parse()
	address := os.Getenv("DBUS_SYSTEM_BUS_ADDRESS")
	if address == "" {
		return errors.New("DBUS_SYSTEM_BUS_ADDRESS is not set: it names the bus to own org.bluez on")
	}
	var name, addr string
	if *adapter != "" {
		var ok bool
		if name, addr, ok = strings.Cut(*adapter, "="); !ok {
			return fmt.Errorf("-adapter %q is not hciN=ADDRESS", *adapter)
		}
	}
	dir, err := os.MkdirTemp("", "bluezsim")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	tmpl := filepath.Join(dir, "bluez_liken.py")
	if err := os.WriteFile(tmpl, bluezsim.Template(), 0o644); err != nil {
		return err
	}
	params, err := json.Marshal(map[string]any{"storage": *storage, "late_write_ms": 0})
	if err != nil {
		return err
	}
	cmd := exec.Command(bluezsim.Python, "-m", "dbusmock", "--system", "--template", tmpl, "-p", string(params))
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", bluezsim.Python, err)
	}
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		for s := range signals {
			_ = cmd.Process.Signal(s)
		}
	}()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

	if name != "" {
		if err := register(address, *storage, name, addr, done); err != nil {
			_ = cmd.Process.Kill()
			return err
		}
		fmt.Fprintf(os.Stderr, "bluezsim-daemon: org.bluez owned on %s; adapter %s at %s registered, bonds under %s loaded\n", address, name, addr, *storage)
	}
	if err := <-done; err != nil {
		return fmt.Errorf("the simulator: %w", err)
	}
	return nil
}

// register waits (60 s at most) for the simulator to own org.bluez and
// registers the adapter.
func register(address, storage, name, addr string, done <-chan error) error {
	conn, err := dbus.Connect(address)
	if err != nil {
		return fmt.Errorf("connect to %s: %w", address, err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), bluezsim.DefaultStartTimeout)
	defer cancel()
	for {
		var owned bool
		err := conn.BusObject().CallWithContext(ctx, "org.freedesktop.DBus.NameHasOwner", 0, bluezsim.Service).Store(&owned)
		if err == nil && owned {
			break
		}
		select {
		case err := <-done:
			return fmt.Errorf("the simulator exited (%v) before owning %s", err, bluezsim.Service)
		case <-ctx.Done():
			return fmt.Errorf("%s not owned after %s", bluezsim.Service, bluezsim.DefaultStartTimeout)
		case <-time.After(50 * time.Millisecond):
		}
	}
	sim, err := bluezsim.Attach(address, storage)
	if err != nil {
		return err
	}
	defer sim.Stop()
	_, err = sim.AddAdapter(name, addr)
	return err
}
