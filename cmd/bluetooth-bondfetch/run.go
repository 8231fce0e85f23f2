// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/clock"

	"github.com/liken-sh/operators/internal/bonds"
	"github.com/liken-sh/operators/internal/hci"
	"github.com/liken-sh/operators/internal/kubeclient"
)

// world is what run reaches outside the process, so that tests can put a
// scripted kernel and a real API server with a chosen identity in place.
type world struct {
	// openKernel opens the AF_BLUETOOTH socket; close releases it.
	openKernel func() (k hci.Kernel, close func() error, err error)
	// newClient builds the client of namespace's Secrets: from
	// kubeconfig, else $KUBECONFIG, else in-cluster.
	newClient func(kubeconfig, namespace string) (bonds.SecretLister, error)
	// clock paces the wait for the adapter's address.
	clock clock.Clock
	// interval is the pause between reads of the address.
	interval time.Duration
}

func realWorld() world {
	return world{
		openKernel: openKernel,
		newClient: func(kubeconfig, namespace string) (bonds.SecretLister, error) {
			cfg, err := kubeclient.Config(kubeconfig, "bluetooth-bondfetch")
			if err != nil {
				return nil, err
			}
			return bonds.NewSecretLister(cfg, namespace)
		},
		clock:    clock.RealClock{},
		interval: hci.DefaultInterval,
	}
}

// openKernel opens the AF_BLUETOOTH socket. A build with the hcisim tag
// replaces it (kernel_hcisim.go).
var openKernel = func() (hci.Kernel, func() error, error) {
	s, err := hci.OpenSocket()
	if err != nil {
		return nil, nil, err
	}
	return s, s.Close, nil
}

// options are the command line.
type options struct {
	root, sysfs, dev, adapter, kubeconfig string
	timeout                               time.Duration
}

var hciIndex = regexp.MustCompile(`^hci([0-9]{1,5})$`)

// run is the whole program; it returns the exit status and writes its
// lines, each starting "bondfetch: ", to stderr.
func run(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer, w world) int {
	logf := func(format string, a ...any) { fmt.Fprintf(stderr, "bondfetch: "+format+"\n", a...) }
	fail := func(format string, a ...any) int {
		logf(format, a...)
		return 1
	}

	opts := options{root: getenv("BLUETOOTH_BONDS_ROOT")}
	if opts.root == "" {
		opts.root = "/var/lib/bluetooth"
	}
	fs := flag.NewFlagSet("bluetooth-bondfetch", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&opts.root, "root", opts.root, "BlueZ's storage `directory`, the volume bluetoothd reads")
	fs.StringVar(&opts.sysfs, "sysfs", "/sys", "where sysfs is mounted")
	fs.StringVar(&opts.dev, "dev", "/dev", "the container's /dev, which holds the claimed adapter's usbfs node")
	fs.StringVar(&opts.adapter, "adapter", "", "read this adapter (`hciN`) instead of the claimed USB adapter; for adapters that are not USB devices")
	fs.StringVar(&opts.kubeconfig, "kubeconfig", "", "use this kubeconfig `file` instead of the in-cluster configuration")
	fs.DurationVar(&opts.timeout, "timeout", hci.DefaultTimeout, "how long to wait for the adapter to report its address")
	if err := fs.Parse(args); err != nil {
		// -help (or -h) asked for the usage the flag package has just
		// printed: an answer, not a failure.
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return fail("%v", err)
	}
	if fs.NArg() > 0 {
		return fail("unexpected arguments %q", fs.Args())
	}
	var index *uint16
	if opts.adapter != "" {
		m := hciIndex.FindStringSubmatch(opts.adapter)
		if m == nil {
			return fail("-adapter %q is not hciN", opts.adapter)
		}
		n, err := strconv.ParseUint(m[1], 10, 16)
		if err != nil {
			return fail("-adapter %q: index out of range", opts.adapter)
		}
		index = new(uint16(n))
	}

	namespace := getenv("POD_NAMESPACE")
	if namespace == "" {
		return fail("POD_NAMESPACE is not set: it names the namespace of the bond Secrets (the downward API's metadata.namespace)")
	}
	if errs := validation.IsDNS1123Label(namespace); len(errs) > 0 {
		return fail("POD_NAMESPACE %q is not a namespace name: %s", namespace, errs[0])
	}
	secrets, err := w.newClient(opts.kubeconfig, namespace)
	if err != nil {
		return fail("API client: %v", err)
	}

	kernel, closeKernel, err := w.openKernel()
	if err != nil {
		return fail("%v", err)
	}
	defer closeKernel() //nolint:errcheck // closing the kernel handle after the read has nothing to report
	resolver := &hci.Resolver{Kernel: kernel, Sysfs: opts.sysfs, Dev: opts.dev, Clock: w.clock, Interval: w.interval, Timeout: opts.timeout}
	var adapter hci.Adapter
	if index != nil {
		adapter, err = resolver.Index(ctx, *index)
	} else {
		adapter, err = resolver.Claimed(ctx)
	}
	if err != nil {
		return fail("the claimed adapter's address: %v", err)
	}
	address := adapter.Info.Address
	if index != nil {
		logf("%s is the adapter at %s", adapter.Info.Name, address)
	} else {
		logf("%s, below the claimed USB device %s, is the adapter at %s", adapter.Info.Name, adapter.USB.Path, address)
	}

	fetched, err := bonds.Fetch(ctx, secrets, namespace, address)
	if err != nil {
		return fail("%v", err)
	}
	for _, s := range fetched.Skipped {
		logf("%v", s)
	}
	// A tree kept from an earlier run of this container in the same pod
	// gets BlueZ's modes back before anything is added to it, or
	// bluetoothd does not start on a tree it cannot use.
	repaired, err := bonds.CheckTree(opts.root, address, os.Geteuid())
	for _, r := range repaired {
		logf("repaired %s (BlueZ's mode)", r)
	}
	if err != nil {
		var joined interface{ Unwrap() []error }
		if errors.As(err, &joined) {
			for _, e := range joined.Unwrap() {
				logf("tree: %v", e)
			}
		}
		return fail("the tree of %s under %s is not one bluetoothd can use; see the lines above", address, opts.root)
	}
	// The operator container serves only this adapter; it reads which
	// one from the tree they share.
	claimed := func() int {
		if err := bonds.WriteClaimed(opts.root, address); err != nil {
			return fail("%v", err)
		}
		return 0
	}
	if len(fetched.Bonds) == 0 {
		logf("no stored bonds for %s (%d secrets labelled %s=%s)", address, fetched.Secrets, bonds.AdapterLabel, address.Key())
		return claimed()
	}
	report, err := bonds.WriteTree(opts.root, address, fetched.Bonds)
	for _, p := range report.Kept {
		logf("kept %s: the tree already holds other bytes there", p)
	}
	if err != nil {
		var joined interface{ Unwrap() []error }
		if errors.As(err, &joined) {
			for _, e := range joined.Unwrap() {
				logf("write: %v", e)
			}
			return fail("writing the bonds of %s under %s failed", address, opts.root)
		}
		return fail("write the bonds of %s under %s: %v", address, opts.root, err)
	}
	logf("restored %d bonds of %s from %d secrets under %s: %d files written, %d unchanged, %d kept, %d secret keys skipped",
		len(fetched.Bonds), address, fetched.Secrets, bonds.AdapterDir(opts.root, address),
		len(report.Written), len(report.Unchanged), len(report.Kept), bonds.SkippedCount(fetched.Skipped))
	return claimed()
}
