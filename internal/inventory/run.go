// SPDX-License-Identifier: Apache-2.0

package inventory

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/liken-sh/operators/internal/dra"
	"github.com/liken-sh/operators/internal/pciids"
	"github.com/liken-sh/operators/internal/settle"
	"github.com/liken-sh/operators/internal/uevent"
)

// Defaults of Config.
const (
	DefaultSysRoot = "/sys"
	DefaultDevRoot = "/dev"
	// DefaultPCIIDs is where Debian's pci.ids package puts the PCI ID
	// database, and where the driver's image carries it.
	DefaultPCIIDs = "/usr/share/misc/pci.ids"
	// DefaultRescanQuiet is how long uevents must pause before a rescan:
	// the dozen uevents of one USB device plugging in make one walk.
	DefaultRescanQuiet = time.Second
	// rescanCap bounds how long a steady trickle of uevents holds a
	// rescan back.
	rescanCap = 10 * time.Second
	// DefaultBackstop is the pass every few minutes that catches anything
	// a lost uevent hid.
	DefaultBackstop = 5 * time.Minute
	// burstLog is the number of uevents in one settled burst from which
	// the rescan says how many it covered.
	burstLog = 1000
)

// Events is a source of kernel uevents; *uevent.Listener is one.
type Events interface {
	Events() <-chan uevent.Event
	Errors() <-chan error
	Done() <-chan struct{}
	Err() error
}

// Config is what the driver runs with. NodeName and KubeClient are
// required.
type Config struct {
	NodeName   string
	KubeClient kubernetes.Interface
	// SysRoot and DevRoot are where sysfs and /dev are; a test points
	// them at a recorded tree.
	SysRoot, DevRoot string
	// PCIIDs is the PCI ID database that names PCI devices (the name
	// attribute); DefaultPCIIDs when empty. A missing database leaves
	// PCI devices without a name, logged once.
	PCIIDs string
	// DRA locates the kubelet and CDI directories; DriverName, CDIClass,
	// NodeName, KubeClient and Registerer are filled in by Run.
	DRA dra.Options
	// Events, when nil, is a uevent.Listen of the kernel's broadcasts.
	Events Events
	// RescanQuiet and Backstop default to DefaultRescanQuiet and
	// DefaultBackstop.
	RescanQuiet time.Duration
	Backstop    time.Duration
	Registerer  prometheus.Registerer
}

func (c *Config) complete() error {
	switch {
	case c.NodeName == "":
		return errors.New("the node name is required (NODE_NAME)")
	case c.KubeClient == nil:
		return errors.New("an API client is required")
	}
	if c.SysRoot == "" {
		c.SysRoot = DefaultSysRoot
	}
	if c.DevRoot == "" {
		c.DevRoot = DefaultDevRoot
	}
	if c.PCIIDs == "" {
		c.PCIIDs = DefaultPCIIDs
	}
	if c.RescanQuiet <= 0 {
		c.RescanQuiet = DefaultRescanQuiet
	}
	if c.Backstop <= 0 {
		c.Backstop = DefaultBackstop
	}
	c.DRA.DriverName, c.DRA.CDIClass = DriverName, CDIClass
	c.DRA.NodeName, c.DRA.KubeClient, c.DRA.Registerer = c.NodeName, c.KubeClient, c.Registerer
	return nil
}

// Relevant reports whether a uevent may change what Discover finds: a
// device of the sound, usb, pci, platform, bluetooth or misc subsystem
// arriving, leaving or having its driver bound or unbound. A network
// device's uevents (a pod's veth coming and going) never are.
func Relevant(ev uevent.Event) bool {
	switch ev.Action {
	case "add", "remove", "bind", "unbind", "move":
	default:
		return false
	}
	switch ev.Subsystem {
	case "sound", "usb", "pci", "platform", "bluetooth", "misc":
		return true
	}
	return false
}

// Run is the driver: it refuses to start where another liken.sh driver
// serves the node (CheckAlone), publishes a first scan, serves the
// kubelet, and rescans after every settled burst of relevant uevents, at
// every uevent overflow, and at the backstop.
//
// It returns nil when ctx ends, and an error when the node is served
// already, the DRA plugin cannot start or stops, or the uevent socket
// fails.
func Run(ctx context.Context, cfg Config) error {
	if err := cfg.complete(); err != nil {
		return err
	}
	logger := klog.FromContext(ctx)
	if err := CheckAlone(ctx, cfg.KubeClient, cfg.NodeName, cfg.DRA.RegistrarDir); err != nil {
		return err
	}
	d := &driver{cfg: cfg, pci: pciids.Open(cfg.PCIIDs)}
	if err := d.scan(logger, 0); err != nil {
		return err
	}
	driver, err := dra.Start(ctx, cfg.DRA, Prepare(d.current, cfg.SysRoot, cfg.DevRoot))
	if err != nil {
		return err
	}
	defer driver.Stop()
	d.core = driver
	if err := d.publish(logger); err != nil {
		return err
	}
	events := cfg.Events
	if events == nil {
		l, err := uevent.Listen(ctx, uevent.Options{})
		if err != nil {
			return fmt.Errorf("uevents: %w", err)
		}
		if ok, err := uevent.InInitialUserNamespace(); err == nil && !ok {
			logger.Error(nil, "Not in the initial user namespace: the kernel sends this process no uevents, so devices change only at the backstop pass (deploy/inventory/driver.yaml sets hostUsers: true)", "backstop", cfg.Backstop)
		}
		events = l
	}
	window := settle.New(cfg.RescanQuiet, rescanCap)
	go window.Run(ctx, func(ctx context.Context) { d.pass(klog.FromContext(ctx)) })
	backstop := time.NewTicker(cfg.Backstop)
	defer backstop.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-driver.Done():
			return fmt.Errorf("DRA plugin stopped: %w", driver.Err())
		case <-events.Done():
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("uevent listener stopped: %w", events.Err())
		case ev := <-events.Events():
			if Relevant(ev) {
				d.burst.Add(1)
				window.Poke()
			}
		case err := <-events.Errors():
			if !errors.Is(err, uevent.ErrOverflow) {
				logger.V(2).Info("Ignoring a uevent datagram", "err", err)
				continue
			}
			logger.Info("Uevents were lost; rescanning")
			window.Poke()
		case <-backstop.C:
			window.Poke()
		}
	}
}

// driver is the state of one Run.
type driver struct {
	cfg  Config
	core *dra.Driver
	pci  *pciids.DB

	pciMissing bool // the pass's: the database's absence was logged

	burst counter // relevant uevents since the last pass

	mu       sync.Mutex
	last     Scan
	problems []string // as last logged
}

// counter is a mutex-guarded count, read and reset by the pass.
type counter struct {
	mu sync.Mutex
	n  int
}

func (c *counter) Add(n int) { c.mu.Lock(); c.n += n; c.mu.Unlock() }
func (c *counter) take() int { c.mu.Lock(); defer c.mu.Unlock(); n := c.n; c.n = 0; return n }

func (d *driver) current() Scan {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.last
}

// pass rescans and publishes; failures are logged, and the backstop or the
// next uevent retries.
func (d *driver) pass(logger klog.Logger) {
	n := d.burst.take()
	if err := d.scan(logger, n); err != nil {
		logger.Error(err, "Rescan failed; the devices published before stay")
		return
	}
	if err := d.publish(logger); err != nil {
		logger.Error(err, "Publishing failed; the devices published before stay")
	}
	d.refresh(logger)
}

// refresh rewrites the CDI specs of prepared claims whose devices' nodes
// changed since they were prepared: a USB device plugged in again in the
// same port has the same name and a new usbfs number, a card loaded
// again may have new minors. A device that is gone gets Absent edits.
func (d *driver) refresh(logger klog.Logger) {
	scan := d.current()
	n, err := d.core.RefreshEdits(klog.NewContext(context.Background(), logger), func(device string, prepared dra.ContainerEdits) (dra.ContainerEdits, bool) {
		found, ok := scan.Lookup(device)
		if !ok {
			return Absent(prepared), true
		}
		nodes, err := Nodes(d.cfg.SysRoot, d.cfg.DevRoot, found)
		if err != nil {
			return Absent(prepared), true
		}
		return Edits(nodes, d.cfg.DevRoot), true
	})
	if err != nil {
		logger.Error(err, "Bringing prepared claims' CDI specs up to date", "rewritten", n)
	}
}

// scan walks sysfs, logs problems that are new, and keeps the result.
func (d *driver) scan(logger klog.Logger, uevents int) error {
	scan, err := Discover(d.cfg.SysRoot, d.pci)
	if err != nil {
		return err
	}
	if err := d.pci.Err(); err != nil && !d.pciMissing {
		d.pciMissing = true
		logger.Info("PCI devices are published without a name", "reason", err.Error())
	}
	if uevents >= burstLog {
		logger.Info("One rescan for a burst of uevents", "uevents", uevents, "devices", len(scan.Devices))
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if !slices.Equal(scan.Problems, d.problems) {
		for _, p := range scan.Problems {
			logger.Error(nil, "Device left out", "problem", p)
		}
		d.problems = scan.Problems
	}
	d.last = scan
	return nil
}

// publish hands the last scan to the driver core, whose settle window
// makes the slice write.
func (d *driver) publish(logger klog.Logger) error {
	scan := d.current()
	devices := make([]dra.Device, len(scan.Devices))
	for i, f := range scan.Devices {
		devices[i] = f.Device
	}
	if err := d.core.SetDevices(devices); err != nil {
		return err
	}
	names := make([]string, len(devices))
	for i, dev := range devices {
		names[i] = dev.Name
	}
	logger.V(2).Info("Devices found", "devices", names)
	return nil
}
