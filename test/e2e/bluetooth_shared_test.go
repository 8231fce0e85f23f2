// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"strconv"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/liken-sh/operators/internal/bluetooth"
	"github.com/liken-sh/operators/internal/bluez"
	"github.com/liken-sh/operators/test/e2e/kubelet"
)

// One gamepad, several claims (DRA consumable capacity, through the real
// scheduler): two claims share the pad and are both prepared, a third
// reaches it through the gamepad DeviceClass; a claim
// that asks for all of its consumers to hold it alone is unschedulable
// while they hold it, and gets it once they let go.
func TestBluetoothSharedController(t *testing.T) {
	ctx, cluster := startBluetoothCluster(t)
	client := cluster.Client()
	dir := t.TempDir()
	sim, sysRoot := simulatedBluetoothNode(t, dir)
	draOpts := bluetoothDRA(dir)
	runBluetoothOperator(t, ctx, cluster, bluetooth.Config{
		Bus: bluez.Options{Address: sim.Address()}, BondsRoot: sim.StorageDir(),
		SysRoot: sysRoot, DRA: draOpts, BondSettle: 300 * time.Millisecond,
	})
	pad := bluetooth.ControllerName(mustAddr(t, padAddr))
	waitForDriverSlice(t, ctx, cluster, bluetooth.DriverName, func(s *resourceapi.ResourceSlice) bool {
		for _, d := range s.Spec.Devices {
			if d.Name == pad {
				c, ok := d.Capacity[bluetooth.CapacityConsumers]
				return d.AllowMultipleAllocations != nil && *d.AllowMultipleAllocations && ok && c.Value.Value() == bluetooth.MaxConsumers
			}
		}
		return false
	})

	claimOf := func(name string, alone bool) *resourceapi.ResourceClaim {
		req := &resourceapi.ExactDeviceRequest{DeviceClassName: "bluetooth-input"}
		if alone {
			req.Capacity = &resourceapi.CapacityRequirements{Requests: map[resourceapi.QualifiedName]resource.Quantity{
				bluetooth.CapacityConsumers: resource.MustParse(strconv.Itoa(bluetooth.MaxConsumers)),
			}}
		}
		return &resourceapi.ResourceClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
			Spec:       resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{Name: "pad", Exactly: req}}}},
		}
	}
	kl := kubelet.New(client, draOpts.RegistrarDir)
	t.Cleanup(func() { kl.Close() })
	plugin, err := kl.Discover(ctx, bluetooth.DriverName)
	if err != nil {
		t.Fatal(err)
	}
	var shared []*resourceapi.ResourceClaim
	for _, name := range []string{"remote", "game"} {
		c := createWithPod(t, ctx, cluster, claimOf(name, false), name)
		r := c.Status.Allocation.Devices.Results[0]
		if consumed := r.ConsumedCapacity[bluetooth.CapacityConsumers]; r.Device != pad || r.ShareID == nil || consumed.Value() != 1 {
			t.Fatalf("claim %s: allocated %+v, want a share of the pad consuming one consumer", name, r)
		}
		prepareOK(t, ctx, plugin, c)
		shared = append(shared, c)
	}
	if *shared[0].Status.Allocation.Devices.Results[0].ShareID == *shared[1].Status.Allocation.Devices.Results[0].ShareID {
		t.Error("the two claims got the same share")
	}
	// The gamepad class reaches the same pad (its Class of Device says
	// gamepad) and never the speaker beside it, with no CEL in the claim.
	byClass := claimOf("any-gamepad", false)
	byClass.Spec.Devices.Requests[0].Exactly.DeviceClassName = "gamepad"
	c := createWithPod(t, ctx, cluster, byClass, "any-gamepad")
	if r := c.Status.Allocation.Devices.Results[0]; r.Device != pad {
		t.Fatalf("a gamepad-class claim got %s, want the pad %s", r.Device, pad)
	}
	shared = append(shared, c)

	alone := claimOf("alone", true)
	_, err = client.ResourceV1().ResourceClaims("default").Create(ctx, alone, metav1.CreateOptions{})
	must(t, err)
	_, err = client.CoreV1().Pods("default").Create(ctx, podFor(alone, "alone"), metav1.CreateOptions{})
	must(t, err)
	if _, err := cluster.WaitForPodUnschedulable(ctx, "default", "alone"); err != nil {
		t.Fatalf("a claim on all of the pad's consumers while two claims share it: %v", err)
	}
	for _, c := range shared {
		must(t, client.CoreV1().Pods("default").Delete(ctx, c.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}))
		must(t, client.ResourceV1().ResourceClaims("default").Delete(ctx, c.Name, metav1.DeleteOptions{}))
	}
	got, err := cluster.WaitForClaimAllocated(ctx, "default", "alone")
	must(t, err)
	r := got.Status.Allocation.Devices.Results[0]
	if consumed := r.ConsumedCapacity[bluetooth.CapacityConsumers]; r.Device != pad || consumed.Value() != bluetooth.MaxConsumers {
		t.Errorf("the lone claim got %+v, want all of the pad's consumers", r)
	}
	prepareOK(t, ctx, plugin, got)
}
