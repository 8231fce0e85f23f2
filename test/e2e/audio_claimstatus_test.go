// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"encoding/json"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	metav1apply "k8s.io/client-go/applyconfigurations/meta/v1"
	resourceapply "k8s.io/client-go/applyconfigurations/resource/v1"

	"github.com/liken-sh/operators/internal/alsa"
	"github.com/liken-sh/operators/internal/audio"
	"github.com/liken-sh/operators/internal/dra"
	"github.com/liken-sh/operators/test/e2e/harness"
	"github.com/liken-sh/operators/test/e2e/kubelet"
)

// deviceStatus returns the claim's status.devices entry of driver's
// device, or nil.
func deviceStatus(c *resourceapi.ResourceClaim, driver, device string) *resourceapi.AllocatedDeviceStatus {
	for i, d := range c.Status.Devices {
		if d.Driver == driver && d.Device == device {
			return &c.Status.Devices[i]
		}
	}
	return nil
}

// statusData decodes an entry's data, nil when it has none or it is not
// a JSON object.
func statusData(e *resourceapi.AllocatedDeviceStatus) map[string]any {
	if e == nil || e.Data == nil {
		return nil
	}
	var m map[string]any
	if json.Unmarshal(e.Data.Raw, &m) != nil {
		return nil
	}
	return m
}

// readyIs reports whether an entry's Ready condition has status and
// reason.
func readyIs(e *resourceapi.AllocatedDeviceStatus, status metav1.ConditionStatus, reason string) bool {
	if e == nil {
		return false
	}
	c := apimeta.FindStatusCondition(e.Conditions, dra.ConditionReady)
	return c != nil && c.Status == status && c.Reason == reason
}

// TestAudioClaimStatus: the operator, as its ServiceAccount under the
// RBAC deploy/audio ships, writes a prepared claim's status.devices on
// the real API server: the output with its data and Ready True, Ready
// False with the reason when the monitor is unplugged, and nothing once
// the claim is unprepared. Another driver's entry in the same claim is
// left as it was throughout.
func TestAudioClaimStatus(t *testing.T) {
	a := startAudioNode(t, audioNodeOptions{AsOperator: true})
	ctx, cluster, client, cards, outputs := a.ctx, a.cluster, a.client, a.cards, a.outputs

	dp := node + "-pci-0000-00-1f-3-hdmi-3" // the Samsung's DP output, pcm 7
	waitForDriverSlice(t, ctx, cluster, audio.DriverName, func(s *resourceapi.ResourceSlice) bool {
		return hasDevice(s, dp) && !deviceTainted(s, dp)
	})
	var nodeName string
	for _, o := range outputs {
		if o.Output == dp {
			nodeName = o.Name
		}
	}

	// One claim on two drivers: the monitor's output, and one of the
	// node's sound cards, which liken's own driver publishes.
	claim := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "desk-status"},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{
			{Name: "speakers", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "audio-sink",
				Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
					Expression: `has(device.attributes["audio.liken.sh"].monitorName) && device.attributes["audio.liken.sh"].monitorName == "U28E590"`}}}}},
			{Name: "card", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: harness.SoundCardClass}},
		}}},
	}
	allocated := createWithPod(t, ctx, cluster, claim, "player-status")
	var card resourceapi.DeviceRequestAllocationResult
	for _, r := range allocated.Status.Allocation.Devices.Results {
		if r.Driver == harness.LikenDriver {
			card = r
		}
	}
	if card.Device == "" {
		t.Fatalf("no liken.sh device allocated: %+v", allocated.Status.Allocation.Devices.Results)
	}
	// liken's driver's own entry, written under its own field manager as
	// that driver would.
	_, err := client.ResourceV1().ResourceClaims("default").ApplyStatus(ctx,
		resourceapply.ResourceClaim(claim.Name, "default").WithStatus(resourceapply.ResourceClaimStatus().WithDevices(
			resourceapply.AllocatedDeviceStatus().WithDriver(card.Driver).WithPool(card.Pool).WithDevice(card.Device).
				WithData(runtime.RawExtension{Raw: []byte(`{"card":"hda"}`)}).
				WithConditions(metav1apply.Condition().WithType("Ready").WithStatus(metav1.ConditionTrue).
					WithReason("Bound").WithMessage("bound").WithLastTransitionTime(metav1.Now())))),
		metav1.ApplyOptions{FieldManager: harness.LikenDriver, Force: true})
	must(t, err)
	othersIntact := func(c *resourceapi.ResourceClaim) bool {
		e := deviceStatus(c, card.Driver, card.Device)
		return e != nil && statusData(e)["card"] == "hda" && readyIs(e, metav1.ConditionTrue, "Bound")
	}

	kl := kubelet.New(client, a.dra.RegistrarDir)
	t.Cleanup(func() { kl.Close() })
	plugin, err := kl.Discover(ctx, audio.DriverName)
	must(t, err)
	prepareOK(t, ctx, plugin, allocated)

	got, err := cluster.WaitForClaim(ctx, "default", claim.Name, "the output's entry, Ready", func(c *resourceapi.ResourceClaim) bool {
		return readyIs(deviceStatus(c, audio.DriverName, dp), metav1.ConditionTrue, dra.ReasonReady)
	})
	must(t, err)
	e := deviceStatus(got, audio.DriverName, dp)
	data := statusData(e)
	want := map[string]any{"sink": dp, "nodeName": nodeName, "connectionType": alsa.ConnDisplayPort, "monitorName": "U28E590"}
	for k, v := range want {
		if data[k] != v {
			t.Errorf("status data %s = %v, want %v (data %v)", k, data[k], v, data)
		}
	}
	// Outputs are shared devices: the entry names the claim's share.
	share := got.Status.Allocation.Devices.Results[0].ShareID
	if e.Pool != node || e.ShareID == nil || share == nil || *e.ShareID != string(*share) {
		t.Errorf("entry pool %q share %v, want pool %q and the allocation's share %v", e.Pool, e.ShareID, node, share)
	}
	if !othersIntact(got) {
		t.Errorf("liken.sh's entry after the output's was written: %+v", got.Status.Devices)
	}
	t.Logf("the output's entry: %s", e.Data.Raw)

	// The monitor is unplugged: the entry follows, with the reason and
	// the words the pod's health shows.
	rec, err := cards.Recorded(0)
	must(t, err)
	must(t, rec.SetELD(7, nil))
	got, err = cluster.WaitForClaim(ctx, "default", claim.Name, "the output's entry, not Ready", func(c *resourceapi.ResourceClaim) bool {
		return readyIs(deviceStatus(c, audio.DriverName, dp), metav1.ConditionFalse, "Disconnected")
	})
	must(t, err)
	cond := apimeta.FindStatusCondition(deviceStatus(got, audio.DriverName, dp).Conditions, dra.ConditionReady)
	if cond.Message != audio.ProblemNoMonitor {
		t.Errorf("Ready message %q, want %q", cond.Message, audio.ProblemNoMonitor)
	}
	if !othersIntact(got) {
		t.Errorf("liken.sh's entry after the output's changed: %+v", got.Status.Devices)
	}

	// Unprepare removes the output's entry, and only it.
	uresp, err := plugin.Unprepare(ctx, allocated)
	must(t, err)
	if e := uresp.Claims[string(allocated.UID)].GetError(); e != "" {
		t.Fatalf("unprepare: %s", e)
	}
	got, err = cluster.WaitForClaim(ctx, "default", claim.Name, "no entry of the audio driver", func(c *resourceapi.ResourceClaim) bool {
		for _, d := range c.Status.Devices {
			if d.Driver == audio.DriverName {
				return false
			}
		}
		return true
	})
	must(t, err)
	if !othersIntact(got) {
		t.Errorf("liken.sh's entry after the output's was removed: %+v", got.Status.Devices)
	}
}
