// SPDX-License-Identifier: Apache-2.0

// Command bluetooth-operator is the operator container of
// deploy/bluetooth/operator.yaml: the bluetooth.liken.sh DRA driver. It reads bluetoothd over the
// pod's D-Bus socket, finds controllers' input nodes in sysfs, publishes
// every paired controller and the adapter's media bus, prepares claims
// into CDI specs, writes new pairings back to Secrets, and serves the
// pairing API (Adapters, Peripherals, PairingRequests) for the adapter
// the pod claimed.
//
// Environment (as deploy/bluetooth/operator.yaml sets it): NODE_NAME and POD_NAMESPACE
// (required), DBUS_SYSTEM_BUS_ADDRESS, optional BLUETOOTH_BONDS_ROOT,
// POD_UID (per-pod kubelet sockets for rolling updates) and
// METRICS_ADDRESS (empty: no metrics listener). Flags move the host paths
// for tests and for a kubelet with another root directory.
//
// Exit status: 0 on SIGTERM or SIGINT, 1 on any failure, including
// bluetoothd leaving the bus, so that the kubelet's restart is the retry.
package main

import (
	"context"
	"errors"
	"flag"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/liken-sh/operators/internal/bluetooth"
	"github.com/liken-sh/operators/internal/dra"
	"github.com/liken-sh/operators/internal/kubeclient"
	"github.com/liken-sh/operators/internal/metricsserver"
	"github.com/liken-sh/operators/internal/procmem"
)

// version is the release, set at build time with -ldflags "-X main.version=..."
// (hack/build-images.sh).
var version = "dev"

func main() {
	klog.InitFlags(nil)
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, else the pod's service account)")
	sysRoot := flag.String("sys-root", "/sys", "sysfs mount")
	devRoot := flag.String("dev-root", "/dev", "device node directory")
	registrar := flag.String("kubelet-registry-dir", dra.DefaultRegistrarDir, "kubelet plugin registration directory")
	plugins := flag.String("kubelet-plugins-dir", dra.DefaultPluginsDir, "kubelet plugins directory; the driver uses <dir>/"+bluetooth.DriverName)
	cdiDir := flag.String("cdi-dir", dra.DefaultCDIDir, "CDI spec directory")
	relaySocket := flag.String("input-relay", bluetooth.DefaultRelaySocket, "the input-relay sidecar's socket; empty: no relay, and claims in relay mode get the controller's own nodes")
	showVersion := flag.Bool("version", false, "print the version and exit")
	flag.Parse()
	if *showVersion {
		os.Stdout.WriteString(version + "\n")
		return
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	logger := klog.Background()
	ctx = klog.NewContext(ctx, logger)
	logger.Info("bluetooth-operator starting", "version", version)
	procmem.Fit(ctx) // the Go memory limit from the container's; start-up memory given back
	if err := run(ctx, *kubeconfig, *sysRoot, *devRoot, *registrar, *plugins, *cdiDir, *relaySocket); err != nil {
		logger.Error(err, "bluetooth-operator failed")
		klog.Flush()
		os.Exit(1)
	}
	logger.Info("bluetooth-operator stopped")
	klog.Flush()
}

func run(ctx context.Context, kubeconfig, sysRoot, devRoot, registrar, plugins, cdiDir, relaySocket string) error {
	node, ns := os.Getenv("NODE_NAME"), os.Getenv("POD_NAMESPACE")
	if node == "" || ns == "" {
		return errors.New("NODE_NAME and POD_NAMESPACE must be set (deploy/bluetooth/operator.yaml sets both from the downward API)")
	}
	rc, err := kubeclient.Config(kubeconfig, "bluetooth-operator")
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return err
	}
	reg, err := metricsserver.Start(ctx, os.Getenv("METRICS_ADDRESS"))
	if err != nil {
		return err
	}
	metricsserver.BuildInfo(reg, "bluetooth-operator", version)
	bondsRoot := os.Getenv("BLUETOOTH_BONDS_ROOT")
	var relay bluetooth.Relay
	if relaySocket != "" {
		relay = bluetooth.NewInputRelay(relaySocket, devRoot)
	}
	return bluetooth.Run(ctx, bluetooth.Config{
		Relay:    relay,
		NodeName: node, Namespace: ns, KubeClient: client, Dynamic: dyn,
		BondsRoot: bondsRoot, SysRoot: sysRoot, DevRoot: devRoot,
		DRA: dra.Options{
			RegistrarDir: registrar, PluginDir: filepath.Join(plugins, bluetooth.DriverName), CDIDir: cdiDir,
			PodUID: types.UID(os.Getenv("POD_UID")),
		},
		Registerer: reg,
	})
}
