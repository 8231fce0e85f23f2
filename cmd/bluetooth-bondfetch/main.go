// SPDX-License-Identifier: Apache-2.0

// Command bluetooth-bondfetch is the init container of the Bluetooth
// operator's pod. It restores the bonds of the adapter this pod claimed
// from their Secrets into BlueZ's storage tree, before the bluetoothd
// sidecar starts: bluetoothd reads that tree once, when the adapter
// registers, and never again.
//
// It reads the claimed adapter's address from the kernel (package hci:
// the claim's usbfs node, sysfs, then HCIGETDEVINFO on an AF_BLUETOOTH
// socket, which needs hostNetwork but no capability), lists the Secrets in
// $POD_NAMESPACE labelled bluetooth.liken.sh/adapter=<address>, and writes
// <root>/<ADAPTER>/<DEVICE>/info and <root>/<ADAPTER>/cache/<DEVICE>
// (package bonds). Secret contents are untrusted: what cannot be a bond is
// skipped with a line naming the Secret and key, and so is what is past
// the bound on what it holds at once (bonds.MaxFetchedBonds and
// bonds.MaxFetchedBytes). At most bonds.MaxSkipped such lines in
// bonds.MaxSkippedBytes are logged; one line "and N more keys skipped"
// counts the rest.
//
// Exit status 0 means the tree is written, or there was nothing to write
// (an adapter that has paired nothing has no Secrets). Any other failure
// exits 1 with a line naming what failed; the pod stays in Init and the
// kubelet's restart is the retry. -help prints the usage and exits 0.
//
// Usage:
//
//	bluetooth-bondfetch [-root DIR] [-sysfs DIR] [-dev DIR] [-adapter hciN] [-timeout D] [-kubeconfig FILE]
//
// Environment: POD_NAMESPACE (required), BLUETOOTH_BONDS_ROOT (the default
// of -root, itself defaulting to /var/lib/bluetooth), and the in-cluster
// API variables unless -kubeconfig or $KUBECONFIG names a kubeconfig.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/liken-sh/operators/internal/bonds"
)

// version is the release, set at build time with -ldflags "-X main.version=..."
// (hack/build-images.sh); "-version" as the only argument prints it.
var version = "dev"

func main() {
	if len(os.Args) == 2 && (os.Args[1] == "-version" || os.Args[1] == "--version") {
		fmt.Println(version)
		return
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		// The container's limit is 64 MiB (deploy/bluetooth/operator.yaml);
		// a soft limit below it has the collector reclaim the pages of
		// Secrets already decoded before the kernel's OOM killer acts.
		debug.SetMemoryLimit(bonds.FetchMemoryLimit)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Getenv, os.Stderr, realWorld()))
}
