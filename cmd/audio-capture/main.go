// SPDX-License-Identifier: Apache-2.0

// Command audio-capture is the capture container of
// deploy/audio/operator.yaml (package capture), as a binary of its own:
// `audio-operator capture` executes it in place, so the container's memory
// is this small program's and not the operator's, whose Kubernetes
// clientset and DRA plumbing cost tens of MiB before doing anything.
//
// Environment: CAPTURE_ADDRESS (default :9201), CAPTURE_TAPS (default 4;
// a value that is not 1 to 32 stops the start), CAPTURE_TLS_DIR (default
// /var/run/audio-capture-tls), PIPEWIRE_RUNTIME_DIR or XDG_RUNTIME_DIR,
// POD_NAMESPACE (optional: the audio-api ServiceAccount's namespace,
// default the pod's own), KUBECONFIG (optional: outside a pod). It exits 1
// with a line naming the fault when the configuration is bad, the API
// client cannot be made or the address cannot be listened on.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/klog/v2"

	"github.com/liken-sh/operators/internal/capture"
	"github.com/liken-sh/operators/internal/kubeclient"
	"github.com/liken-sh/operators/internal/procmem"
)

// version is the release, set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	klog.InitFlags(nil)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	logger := klog.Background()
	ctx = klog.NewContext(ctx, logger)
	if err := run(ctx); err != nil {
		logger.Error(err, "audio-operator capture failed")
		klog.Flush()
		os.Exit(1)
	}
	klog.Flush()
}

func run(ctx context.Context) error {
	if len(os.Args) > 1 {
		return fmt.Errorf("capture takes no arguments (its configuration is the environment), and got %q", os.Args[1:])
	}
	cfg, err := capture.ConfigFromEnv(os.Getenv)
	if err != nil {
		return err
	}
	procmem.Fit(ctx) // the Go memory limit from the container's; start-up memory given back
	rc, err := kubeclient.Config("", "audio-operator/capture")
	if err != nil {
		return err
	}
	reviewer, err := capture.NewTokenReviewer(rc, cfg.CallerUser())
	if err != nil {
		return err
	}
	return capture.Run(ctx, cfg, reviewer, version)
}
