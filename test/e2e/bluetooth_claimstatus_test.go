// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"strings"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/liken-sh/operators/internal/bluetooth"
	"github.com/liken-sh/operators/internal/bluez"
	"github.com/liken-sh/operators/internal/dra"
	"github.com/liken-sh/operators/test/bluezsim"
	"github.com/liken-sh/operators/test/e2e/kubelet"
)

// shareStatus returns the claim's status.devices entry of the pad's
// share, or nil.
func shareStatus(c *resourceapi.ResourceClaim, pad string, share *string) *resourceapi.AllocatedDeviceStatus {
	for i, d := range c.Status.Devices {
		if d.Driver == bluetooth.DriverName && d.Device == pad && d.ShareID != nil && share != nil && *d.ShareID == *share {
			return &c.Status.Devices[i]
		}
	}
	return nil
}

// TestBluetoothClaimStatus: two claims sharing one gamepad each show, in
// their status.devices on the real API server, the pad's share with its
// address, name, connection state and battery and Ready True; the pad
// falling asleep turns both Ready False with the reason, and the charge
// last seen stays; unpreparing one claim removes its entry and leaves
// the other's.
func TestBluetoothClaimStatus(t *testing.T) {
	ctx, cluster := startBluetoothCluster(t)
	client := cluster.Client()
	dir := t.TempDir()
	sim, sysRoot := simulatedBluetoothNode(t, dir)
	must(t, sim.SetDeviceProperty("hci0", padAddr, "Trusted", true))
	must(t, sim.SetBattery("hci0", padAddr, 80))
	draOpts := bluetoothDRA(dir)
	runBluetoothOperator(t, ctx, cluster, bluetooth.Config{
		Bus: bluez.Options{Address: sim.Address()}, BondsRoot: sim.StorageDir(),
		SysRoot: sysRoot, DRA: draOpts, BondSettle: 300 * time.Millisecond,
	})
	pad := bluetooth.ControllerName(mustAddr(t, padAddr))
	waitForDriverSlice(t, ctx, cluster, bluetooth.DriverName, func(s *resourceapi.ResourceSlice) bool {
		return hasDevice(s, pad) && !deviceTainted(s, pad)
	})
	kl := kubelet.New(client, draOpts.RegistrarDir)
	t.Cleanup(func() { kl.Close() })
	plugin, err := kl.Discover(ctx, bluetooth.DriverName)
	must(t, err)

	var claims []*resourceapi.ResourceClaim
	for _, name := range []string{"remote", "game"} {
		c := &resourceapi.ResourceClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
			Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
				Name: "pad", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "gamepad"}}}}},
		}
		c = createWithPod(t, ctx, cluster, c, name)
		prepareOK(t, ctx, plugin, c)
		claims = append(claims, c)
	}
	share := func(c *resourceapi.ResourceClaim) *string {
		return (*string)(c.Status.Allocation.Devices.Results[0].ShareID)
	}
	for _, c := range claims {
		got, err := cluster.WaitForClaim(ctx, "default", c.Name, "the pad's share, Ready, charge 80%", func(rc *resourceapi.ResourceClaim) bool {
			e := shareStatus(rc, pad, share(c))
			return readyIs(e, metav1.ConditionTrue, dra.ReasonReady) && statusData(e)["battery"] == float64(80)
		})
		must(t, err)
		e := shareStatus(got, pad, share(c))
		data := statusData(e)
		if data["address"] != padAddr || data["name"] != "8Bitdo NES30 Pro" || data["connectionState"] != bluetooth.StateConnected {
			t.Errorf("claim %s: status data %v", c.Name, data)
		}
		t.Logf("claim %s, share %s: %s", c.Name, *e.ShareID, e.Data.Raw)
	}

	// The pad falls asleep (its link drops; a trusted controller that
	// gives input is asleep then): both claims say so.
	must(t, sim.Disconnect("hci0", padAddr, bluezsim.ReasonRemote))
	for _, c := range claims {
		got, err := cluster.WaitForClaim(ctx, "default", c.Name, "the pad asleep", func(rc *resourceapi.ResourceClaim) bool {
			e := shareStatus(rc, pad, share(c))
			return readyIs(e, metav1.ConditionFalse, "Disconnected") && statusData(e)["connectionState"] == bluetooth.StateAsleep
		})
		must(t, err)
		e := shareStatus(got, pad, share(c))
		cond := apimeta.FindStatusCondition(e.Conditions, dra.ConditionReady)
		data := statusData(e)
		if !strings.HasPrefix(cond.Message, bluetooth.ProblemAsleep) || (data["battery"] != float64(80) && data["batteryWhenLastConnected"] != float64(80)) {
			t.Errorf("claim %s asleep: Ready message %q, data %v", c.Name, cond.Message, data)
		}
	}

	// The first claim is unprepared: its entry goes, the other's stays.
	uresp, err := plugin.Unprepare(ctx, claims[0])
	must(t, err)
	if e := uresp.Claims[string(claims[0].UID)].GetError(); e != "" {
		t.Fatalf("unprepare: %s", e)
	}
	_, err = cluster.WaitForClaim(ctx, "default", claims[0].Name, "no entry", func(rc *resourceapi.ResourceClaim) bool {
		return len(rc.Status.Devices) == 0
	})
	must(t, err)
	other, err := client.ResourceV1().ResourceClaims("default").Get(ctx, claims[1].Name, metav1.GetOptions{})
	must(t, err)
	if shareStatus(other, pad, share(claims[1])) == nil {
		t.Errorf("the other claim's entry went with the first's: %+v", other.Status.Devices)
	}
}
