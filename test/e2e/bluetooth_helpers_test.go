// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2/ktesting"

	"github.com/liken-sh/operators/internal/bluetooth"
	"github.com/liken-sh/operators/internal/bluez"
	"github.com/liken-sh/operators/internal/dra"
	"github.com/liken-sh/operators/test/bluezsim"
	"github.com/liken-sh/operators/test/e2e/harness"
)

// startBluetoothCluster starts the control plane of a Bluetooth test as
// deploy/bluetooth/operator.yaml expects it: the liken node, the
// Bluetooth DeviceClasses and those of each further file in
// deviceClassFiles (paths from the repository root), the default service
// account, and the liken-system namespace the bond Secrets live in. The
// cluster stops when the test ends; ctx is the test's logging context.
func startBluetoothCluster(t *testing.T, deviceClassFiles ...string) (context.Context, *harness.Cluster) {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	cluster, err := harness.Start(ctx, harness.Options{Logf: t.Logf})
	must(t, err)
	t.Cleanup(cluster.Stop)
	must(t, cluster.AddLikenNode(ctx, node))
	for _, f := range append([]string{"deploy/bluetooth/deviceclasses.yaml"}, deviceClassFiles...) {
		must(t, cluster.ApplyDeviceClassesFile(ctx, f))
	}
	must(t, ignore(cluster.WaitForServiceAccount(ctx, "default", "default")))
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "liken-system"}}
	must(t, ignore(cluster.Client().CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})))
	return ctx, cluster
}

// bluetoothDRA is the Bluetooth operator's kubelet registration, plugin
// and CDI directories under the scratch directory dir, with a 300 ms
// slice settle window so the tests see changes quickly.
func bluetoothDRA(dir string) dra.Options {
	return dra.Options{
		RegistrarDir: filepath.Join(dir, "plugins_registry"),
		PluginDir:    filepath.Join(dir, "plugins", bluetooth.DriverName),
		CDIDir:       filepath.Join(dir, "cdi"),
		SettleQuiet:  300 * time.Millisecond,
	}
}

// mediaBusNode is a node on which the media bus is all the operator
// publishes until the test adds more: the BlueZ simulator with hci0 (its
// storage under dir/bluetooth) and a sysfs under dir/sys with no HID
// device. start runs the operator on it (runBluetoothOperator), each
// call a new run, as the kubelet restarts its container.
func mediaBusNode(t *testing.T, ctx context.Context, cluster *harness.Cluster, dir string) (sim *bluezsim.Sim, start func() *bluetoothOperator) {
	t.Helper()
	sim = bluezsim.New(t, bluezsim.Options{StorageDir: filepath.Join(dir, "bluetooth")})
	must(t, ignore(sim.AddAdapter("hci0", adapterAddr)))
	sysRoot := filepath.Join(dir, "sys")
	must(t, os.MkdirAll(filepath.Join(sysRoot, "bus", "hid", "devices"), 0o755))
	return sim, func() *bluetoothOperator {
		return runBluetoothOperator(t, ctx, cluster, bluetooth.Config{
			Bus: bluez.Options{Address: sim.Address()}, BondsRoot: sim.StorageDir(),
			SysRoot: sysRoot, DRA: bluetoothDRA(dir), BondSettle: 300 * time.Millisecond,
		})
	}
}

// bluetoothOperator is one run of bluetooth.Run in the test's process,
// as the operator's container runs it: Stop stands for the kubelet's
// SIGTERM, and a run that returns by itself is the container exiting.
type bluetoothOperator struct {
	cancel context.CancelFunc
	exited chan struct{}
	err    error
}

// runBluetoothOperator starts bluetooth.Run with cfg on the cluster's
// node: NodeName, Namespace (liken-system), KubeClient and DevRoot (/dev)
// are filled in where cfg leaves them empty. The run is stopped when the
// test ends, if it has not been already; one that does not return within
// the bond write-back bound and 30 s more fails the test rather than
// hanging it.
func runBluetoothOperator(t *testing.T, ctx context.Context, cluster *harness.Cluster, cfg bluetooth.Config) *bluetoothOperator {
	t.Helper()
	if cfg.NodeName == "" {
		cfg.NodeName = node
	}
	if cfg.Namespace == "" {
		cfg.Namespace = "liken-system"
	}
	if cfg.KubeClient == nil {
		cfg.KubeClient = cluster.Client()
	}
	if cfg.DevRoot == "" {
		cfg.DevRoot = "/dev"
	}
	opCtx, cancel := context.WithCancel(ctx)
	op := &bluetoothOperator{cancel: cancel, exited: make(chan struct{})}
	go func() {
		defer close(op.exited)
		op.err = bluetooth.Run(opCtx, cfg)
	}()
	t.Cleanup(func() {
		op.Terminate()
		select {
		case <-op.exited:
		case <-time.After(bluetooth.FlushBondsTimeout + 30*time.Second):
			t.Error("the Bluetooth operator did not stop at the end of the test")
		}
	})
	return op
}

// Terminate asks the run to stop, as SIGTERM does, without waiting.
func (o *bluetoothOperator) Terminate() { o.cancel() }

// Exited is closed once bluetooth.Run has returned.
func (o *bluetoothOperator) Exited() <-chan struct{} { return o.exited }

// Err is what bluetooth.Run returned; it is only meaningful once Exited
// is closed.
func (o *bluetoothOperator) Err() error { return o.err }

// Stop terminates the run, waits for bluetooth.Run to return and returns
// its error. Stopping a run that has already ended returns the same
// error again.
func (o *bluetoothOperator) Stop() error {
	o.cancel()
	<-o.exited
	return o.err
}
