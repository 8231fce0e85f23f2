// SPDX-License-Identifier: Apache-2.0

// Command bluetooth-input-relay is the input relay sidecar of the
// Bluetooth operator's pod (package relayd). For each prepared claim on a
// controller it keeps virtual input devices through /dev/uinput that
// stand for the controller's input devices, fed from the controller
// whenever it is connected, so a consumer reads one node for the claim's
// whole life, through naps and operator restarts.
//
// It needs /dev/uinput and the legacy evdev nodes, which the pod's
// adapter claim delivers, and no capability. The operator reaches it on
// the unix socket -socket; its state (the controllers' capabilities and
// the claims) is kept in -state, in a volume that outlives the container,
// so a restarted relay makes its claims' devices again.
//
// Usage:
//
//	bluetooth-input-relay [-socket PATH] [-state PATH] [-uinput PATH] [-sysfs DIR] [-dev DIR]
//
// It runs until SIGTERM or an interrupt and exits 0; a failure to start
// (a state file it cannot read, a state directory it cannot write, a
// socket it cannot serve) exits 1 with a line naming it, and an empty
// -socket exits 2. A uinput node it cannot open does not stop it (a pod
// whose claims all ask for direct mode needs none): it says so at start,
// and each relay-mode claim's prepare fails naming the node.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/liken-sh/operators/internal/hid"
	"github.com/liken-sh/operators/internal/procmem"
	"github.com/liken-sh/operators/internal/relayd"
	"github.com/liken-sh/operators/internal/uevent"
	"github.com/liken-sh/operators/internal/uinput"
)

// version is the release, set at build time with -ldflags "-X main.version=...".
var version = "dev"

// Defaults: the pod's relay volume (deploy/bluetooth/operator.yaml).
const (
	DefaultSocket = "/var/run/bluetooth.liken.sh/relay/relay.sock"
	DefaultState  = "/var/run/bluetooth.liken.sh/relay/state.json"
)

func main() {
	if len(os.Args) == 2 && (os.Args[1] == "-version" || os.Args[1] == "--version") {
		fmt.Println(version)
		return
	}
	socket := flag.String("socket", DefaultSocket, "the unix socket the operator reaches this relay on")
	statePath := flag.String("state", DefaultState, "the state file (controllers' capabilities and claims)")
	uinputPath := flag.String("uinput", uinput.DefaultPath, "the uinput node")
	sysRoot := flag.String("sysfs", hid.DefaultSysRoot, "the sysfs root")
	devRoot := flag.String("dev", hid.DefaultDevRoot, "the device root")
	flag.Parse()
	if flag.NArg() != 0 {
		fmt.Fprintf(os.Stderr, "bluetooth-input-relay: unexpected arguments %q\n", flag.Args())
		os.Exit(2)
	}
	if *socket == "" {
		// net.Listen would bind an unnamed socket nobody can reach.
		fmt.Fprintln(os.Stderr, "bluetooth-input-relay: -socket is empty; want the path the operator reaches the relay on")
		os.Exit(2)
	}
	log.SetFlags(log.LstdFlags | log.LUTC)
	log.SetPrefix("bluetooth-input-relay: ")
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	// The Go memory limit from the container's (32 MiB), and what start-up
	// allocated given back to the kernel once it is done.
	procmem.Fit(ctx)
	if err := run(ctx, *socket, relayd.Config{UinputPath: *uinputPath, SysRoot: *sysRoot, DevRoot: *devRoot, StatePath: *statePath}); err != nil {
		log.Print(err)
		os.Exit(1)
	}
}

func run(ctx context.Context, socket string, cfg relayd.Config) error {
	if err := checkStateDir(cfg.StatePath); err != nil {
		return err
	}
	if f, err := os.OpenFile(cfg.UinputPath, os.O_RDWR, 0); err != nil {
		log.Printf("uinput %s cannot be opened (%v): a claim in relay mode fails until it can", cfg.UinputPath, err)
	} else {
		f.Close()
	}
	d, err := relayd.New(cfg)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := os.MkdirAll(filepath.Dir(socket), 0o755); err != nil {
		return err
	}
	// A socket file left by an earlier run of this container refuses the
	// bind; nothing else serves at this path.
	if err := os.Remove(socket); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	ln, err := net.Listen("unix", socket)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: d.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	events, err := uevent.Listen(ctx, uevent.Options{})
	if err != nil {
		log.Printf("no uevent socket (%v): rescanning every %s only", err, relayd.DefaultRescan)
		events = nil
	}
	var last string
	go d.Run(ctx, events, func(err error) {
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		if msg != last && msg != "" {
			log.Printf("reconcile: %s", msg)
		}
		last = msg
	})
	log.Printf("serving on %s", socket)
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// checkStateDir makes the directory of the state file at path if it is
// missing and checks that a file can be written in it, as the relay
// writes its state through a temporary file there; "" (no state) needs
// nothing. The error names the directory.
func checkStateDir(path string) error {
	if path == "" {
		return nil
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("state directory %s: %w", dir, err)
	}
	f, err := os.CreateTemp(dir, ".relay-state-probe-*")
	if err != nil {
		return fmt.Errorf("state directory %s cannot be written: %w", dir, err)
	}
	f.Close()
	return os.Remove(f.Name())
}
