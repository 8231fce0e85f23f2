// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/liken-sh/operators/internal/bluetooth"
	"github.com/liken-sh/operators/internal/bluez"
	"github.com/liken-sh/operators/internal/bonds"
	"github.com/liken-sh/operators/test/bluezsim"
)

// TestBluetoothBondsWrittenBackAtStop: a pairing that finished moments
// before the operator is stopped (SIGTERM, a rollout) still reaches its
// Secret, so the next pod's bondfetch restores it. The bond settle window
// is an hour here, so nothing but the write-back at exit can write it.
func TestBluetoothBondsWrittenBackAtStop(t *testing.T) {
	ctx, cluster := startBluetoothCluster(t)
	client := cluster.Client()

	dir := t.TempDir()
	sim, sysRoot := simulatedBluetoothNode(t, dir)
	op := runBluetoothOperator(t, ctx, cluster, bluetooth.Config{
		Bus: bluez.Options{Address: sim.Address()}, BondsRoot: sim.StorageDir(), SysRoot: sysRoot,
		DRA: bluetoothDRA(dir), BondSettle: time.Hour,
	})

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
	op.Terminate()
	select {
	case <-op.Exited():
		if err := op.Err(); err != nil {
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
