// SPDX-License-Identifier: Apache-2.0

package hci

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/utils/clock"
)

// Defaults for Resolver. The reference measured about one second between a
// USB dongle enumerating and its address reading non-zero; 30 s leaves room
// for a slow controller firmware load.
const (
	DefaultInterval = 250 * time.Millisecond
	DefaultTimeout  = 30 * time.Second
)

// Adapter is the claimed adapter, found and read.
type Adapter struct {
	// USB is the usbfs node the claim delivered; zero for an adapter
	// chosen by index.
	USB USBNode
	// Sysfs is where the adapter was found in sysfs; zero for an adapter
	// chosen by index.
	Sysfs Found
	// Info is the kernel's record, with a non-zero Address.
	Info DevInfo
}

// Resolver finds the adapter this pod claimed and reads its address,
// waiting while it is not ready. The zero value is not usable: Kernel must
// be set.
type Resolver struct {
	// Kernel answers HCIGETDEVINFO; normally a *Socket.
	Kernel Kernel
	// Sysfs is where sysfs is mounted; empty means /sys.
	Sysfs string
	// Dev is the container's /dev, where the claim put the usbfs node;
	// empty means /dev.
	Dev string
	// Clock paces the wait; nil means the real clock.
	Clock clock.Clock
	// Interval is the pause between attempts; zero means DefaultInterval.
	Interval time.Duration
	// Timeout bounds the wait; zero means DefaultTimeout.
	Timeout time.Duration
}

// errNotReady marks a failed attempt that a later one may get past.
type errNotReady struct{ err error }

func (e errNotReady) Error() string { return e.err.Error() }
func (e errNotReady) Unwrap() error { return e.err }

// Claimed returns the adapter below the USB device whose usbfs node the
// claim delivered into this container (see ClaimedUSBNodes and
// FindAdapter), once the kernel reports its address as non-zero.
//
// It waits, up to Timeout, while no hciN is registered below the USB
// device yet, while the kernel answers ENODEV for it, and while the address
// reads 00:00:00:00:00:00 (the kernel registers the adapter before its
// power-on work has read the address). It fails at once when the container
// holds no usbfs node, when the claimed nodes lead to more than one
// adapter, and on any other kernel error; on timeout the error names the
// last reason. ctx cancels the wait.
func (r *Resolver) Claimed(ctx context.Context) (Adapter, error) {
	dev := r.Dev
	if dev == "" {
		dev = "/dev"
	}
	sysfs := r.Sysfs
	if sysfs == "" {
		sysfs = "/sys"
	}
	nodes, err := ClaimedUSBNodes(dev)
	if err != nil {
		return Adapter{}, err
	}
	if len(nodes) == 0 {
		return Adapter{}, fmt.Errorf("no usbfs node under %s/bus/usb: the claim delivered no USB adapter into this container", dev)
	}
	return r.wait(ctx, func() (Adapter, error) {
		var hits []Adapter
		var last error
		for _, n := range nodes {
			f, err := FindAdapter(sysfs, n)
			if errors.Is(err, ErrNoAdapter) {
				last = errNotReady{err}
				continue
			}
			if err != nil {
				return Adapter{}, err
			}
			hits = append(hits, Adapter{USB: n, Sysfs: f})
		}
		switch {
		case len(hits) == 0:
			return Adapter{}, last
		case len(hits) > 1:
			return Adapter{}, fmt.Errorf("the claimed usbfs nodes %s and %s both lead to adapters (%s, %s); cannot tell which holds the bonds",
				hits[0].USB, hits[1].USB, hits[0].Sysfs.Name, hits[1].Sysfs.Name)
		}
		a := hits[0]
		a.Info, err = r.read(a.Sysfs.Index)
		return a, err
	})
}

// Index returns adapter hci<id> once its address is non-zero, waiting as
// Claimed does. It is for adapters that are not USB devices (the virtual
// controllers of the VM test tier, UART adapters), which a claim cannot
// name by usbfs node.
func (r *Resolver) Index(ctx context.Context, id uint16) (Adapter, error) {
	return r.wait(ctx, func() (Adapter, error) {
		info, err := r.read(id)
		return Adapter{Info: info}, err
	})
}

// read asks the kernel for hci<id>, sorting the answers into ready, not
// ready, and failed.
func (r *Resolver) read(id uint16) (DevInfo, error) {
	info, err := r.Kernel.DevInfo(id)
	switch {
	case errors.Is(err, ErrNoDevice):
		return info, errNotReady{err}
	case err != nil:
		return info, err
	case info.Name != fmt.Sprintf("hci%d", id):
		return info, fmt.Errorf("HCIGETDEVINFO hci%d answered for %q", id, info.Name)
	case info.Address.IsZero():
		return info, errNotReady{fmt.Errorf("%s reports the address %s: the kernel has not read it from the controller yet", info.Name, info.Address)}
	}
	return info, nil
}

// wait runs attempt until it succeeds, fails with an error that is not
// errNotReady, or Timeout passes.
func (r *Resolver) wait(ctx context.Context, attempt func() (Adapter, error)) (Adapter, error) {
	clk := r.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	interval, timeout := r.Interval, r.Timeout
	if interval <= 0 {
		interval = DefaultInterval
	}
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	start := clk.Now()
	for {
		a, err := attempt()
		var notReady errNotReady
		if !errors.As(err, &notReady) {
			return a, err
		}
		if clk.Since(start) >= timeout {
			return Adapter{}, fmt.Errorf("gave up after %s: %w", timeout, notReady.err)
		}
		select {
		case <-ctx.Done():
			return Adapter{}, fmt.Errorf("%w while waiting: %w", ctx.Err(), notReady.err)
		case <-clk.After(interval):
		}
	}
}
