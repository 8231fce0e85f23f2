// SPDX-License-Identifier: Apache-2.0

// Command liken-inventory is the liken.sh DRA driver for clusters whose
// nodes do not run liken's own operating system (deploy/inventory): it
// publishes the node's sound controllers and btusb Bluetooth adapters
// under liken's names and attributes, and prepares claims on them into
// CDI specs that deliver their device nodes (package inventory).
//
// Environment: NODE_NAME (required, from the downward API), POD_UID
// (per-pod kubelet sockets for rolling updates), METRICS_ADDRESS (empty:
// no metrics listener), and LIKEN_INVENTORY_SYS_ROOT and
// LIKEN_INVENTORY_DEV_ROOT, the defaults of -sys-root and -dev-root, so a
// test can point a pod's driver at a recorded tree without new args.
//
// Exit status: 0 on SIGTERM or SIGINT; 1 on any failure, among them a node
// another liken.sh driver serves already (the log says which socket or
// slice), so that the pod's restarts show it.
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/liken-sh/operators/internal/dra"
	"github.com/liken-sh/operators/internal/inventory"
	"github.com/liken-sh/operators/internal/kubeclient"
	"github.com/liken-sh/operators/internal/metricsserver"
)

// version is the release, set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	klog.InitFlags(nil)
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, else the pod's service account)")
	sysRoot := flag.String("sys-root", cmp.Or(os.Getenv("LIKEN_INVENTORY_SYS_ROOT"), inventory.DefaultSysRoot), "sysfs mount")
	devRoot := flag.String("dev-root", cmp.Or(os.Getenv("LIKEN_INVENTORY_DEV_ROOT"), inventory.DefaultDevRoot), "device node directory")
	pciIDs := flag.String("pci-ids", inventory.DefaultPCIIDs, "PCI ID database (pci.ids) that names PCI devices")
	registrar := flag.String("kubelet-registry-dir", dra.DefaultRegistrarDir, "kubelet plugin registration directory")
	plugins := flag.String("kubelet-plugins-dir", dra.DefaultPluginsDir, "kubelet plugins directory; the driver uses <dir>/"+inventory.DriverName)
	cdiDir := flag.String("cdi-dir", dra.DefaultCDIDir, "CDI spec directory")
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
	logger.Info("liken-inventory starting", "version", version, "sysRoot", *sysRoot, "devRoot", *devRoot)
	err := run(ctx, *kubeconfig, inventory.Config{
		SysRoot: *sysRoot, DevRoot: *devRoot, PCIIDs: *pciIDs,
		DRA: dra.Options{
			RegistrarDir: *registrar, PluginDir: filepath.Join(*plugins, inventory.DriverName), CDIDir: *cdiDir,
			PodUID: types.UID(os.Getenv("POD_UID")),
		},
	})
	if err != nil {
		logger.Error(err, "liken-inventory failed")
		klog.Flush()
		os.Exit(1)
	}
	logger.Info("liken-inventory stopped")
	klog.Flush()
}

func run(ctx context.Context, kubeconfig string, cfg inventory.Config) error {
	cfg.NodeName = os.Getenv("NODE_NAME")
	if cfg.NodeName == "" {
		return errors.New("NODE_NAME must be set (deploy/inventory/driver.yaml sets it from the downward API)")
	}
	rc, err := kubeclient.Config(kubeconfig, "liken-inventory")
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	reg, err := metricsserver.Start(ctx, os.Getenv("METRICS_ADDRESS"))
	if err != nil {
		return err
	}
	metricsserver.BuildInfo(reg, "liken-inventory", version)
	cfg.KubeClient, cfg.Registerer = client, reg
	return inventory.Run(ctx, cfg)
}
