// SPDX-License-Identifier: Apache-2.0

// Command kubectl-liken-bluetooth is the Bluetooth operator's kubectl
// plugin, for pairing without a shell on any node:
//
//	kubectl liken bluetooth pair [--adapter X] [--node N] [--device MAC] [--window D] [--pin P]
//	kubectl liken bluetooth list
//	kubectl liken bluetooth unpair NAME
//	kubectl liken bluetooth completion bash|zsh|fish|powershell
//
// It takes kubectl's connection flags (--kubeconfig, --context,
// --namespace, ...) and needs no more than create and update on
// PairingRequests in the namespace to pair (get and watch to follow the
// request; the bluetooth-pairing role grants them), and read access to
// Adapters and Peripherals for list and for pair without --adapter
// (list on ResourceClaims and ResourceSlices, if granted, lets list name
// every claim that holds a device).
//
// Exit status: 0 when the command did what it says (pair: the device is
// Paired), 1 otherwise, with the reason on stderr.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/liken-sh/operators/internal/bluetoothcli"
)

// version is the release, set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	// Interrupt, termination and a closed terminal all end the command
	// the same way: an open pairing request is deleted, so the adapter
	// does not stay discoverable for nobody.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	streams := genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	os.Exit(bluetoothcli.Execute(ctx, version, streams, os.Args[1:]))
}
