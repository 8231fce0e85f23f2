// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2/ktesting"

	"github.com/liken-sh/operators/internal/bluetooth"
	"github.com/liken-sh/operators/internal/bluez"
	"github.com/liken-sh/operators/internal/bonds"
	"github.com/liken-sh/operators/internal/dra"
	"github.com/liken-sh/operators/test/bluezsim"
	"github.com/liken-sh/operators/test/e2e/harness"
)

// TestBluetoothBondsWrittenBackAtStop: a pairing that finished moments
// before the operator is stopped (SIGTERM, a rollout) still reaches its
// Secret, so the next pod's bondfetch restores it. The bond settle window
// is an hour here, so nothing but the write-back at exit can write it.
func TestBluetoothBondsWrittenBackAtStop(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	cluster, err := harness.Start(ctx, harness.Options{Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Stop)
	client := cluster.Client()
	must(t, cluster.AddLikenNode(ctx, node))
	_, err = client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "liken-system"}}, metav1.CreateOptions{})
	must(t, err)

	dir := t.TempDir()
	sim, sysRoot := simulatedBluetoothNode(t, dir)
	opCtx, stopOp := context.WithCancel(ctx)
	defer stopOp()
	opDone := make(chan error, 1)
	go func() {
		opDone <- bluetooth.Run(opCtx, bluetooth.Config{
			NodeName: node, Namespace: "liken-system", KubeClient: client,
			Bus: bluez.Options{Address: sim.Address()}, BondsRoot: sim.StorageDir(), SysRoot: sysRoot, DevRoot: "/dev",
			DRA: dra.Options{
				RegistrarDir: filepath.Join(dir, "plugins_registry"), PluginDir: filepath.Join(dir, "plugins", bluetooth.DriverName),
				CDIDir: filepath.Join(dir, "cdi"), SettleQuiet: 300 * time.Millisecond,
			},
			BondSettle: time.Hour,
		})
	}()

	newPad := "C8:3F:26:00:11:22"
	must(t, ignore(sim.AddDevice("hci0", newPad, bluezsim.Device{Name: "Wireless Controller", Class: 0x002508, UUIDs: []string{hidUUID}})))
	must(t, sim.Pair("hci0", newPad))
	// The operator has seen the pairing once the slice offers it.
	waitForDriverSlice(t, ctx, cluster, bluetooth.DriverName, func(s *resourceapi.ResourceSlice) bool {
		return hasDevice(s, bluetooth.ControllerName(mustAddr(t, newPad)))
	})
	name := bonds.SecretName(mustAddr(t, adapterAddr), mustAddr(t, newPad))
	if _, err := client.CoreV1().Secrets("liken-system").Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("Secret %s before the stop: %v, want not found (the settle window must not have fired)", name, err)
	}

	start := time.Now()
	stopOp()
	select {
	case err := <-opDone:
		if err != nil {
			t.Fatalf("the operator's stop: %v", err)
		}
	case <-time.After(bluetooth.FlushBondsTimeout + 20*time.Second):
		t.Fatal("the operator did not stop")
	}
	t.Logf("stopped in %s, with the write-back", time.Since(start).Round(time.Millisecond))
	for _, d := range []string{padAddr, speakerAddr, newPad} {
		waitForBondSecret(t, ctx, cluster, sim.StorageDir(), d)
	}
}
