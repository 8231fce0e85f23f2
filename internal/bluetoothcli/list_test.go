// SPDX-License-Identifier: Apache-2.0

package bluetoothcli

import (
	"bytes"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	btv1 "github.com/liken-sh/operators/api/bluetooth/v1alpha1"
)

// list names the claims whose allocation holds each device (a controller
// of bluetooth.liken.sh by pool and address, a speaker through the audio
// driver's slice attribute), shows an Adapter whose deletion the
// operator refuses as Terminating with the reason and its message, and
// spells every yes/no as True/False.
func TestListShowsHoldersAndTerminatingAdapters(t *testing.T) {
	const node, pad, speaker = "kitchen", "e4-17-d8-c5-67-6d", "00-11-22-33-44-55"
	alloc := func(ns, name string, results ...resourceapi.DeviceRequestAllocationResult) resourceapi.ResourceClaim {
		return resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Status: resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: results}}}}
	}
	res := func(driver, pool, device string) resourceapi.DeviceRequestAllocationResult {
		return resourceapi.DeviceRequestAllocationResult{Request: "r", Driver: driver, Pool: pool, Device: device}
	}
	addr := "00:11:22:33:44:55"
	n := node
	slices := []resourceapi.ResourceSlice{{Spec: resourceapi.ResourceSliceSpec{Driver: audioDriver, NodeName: &n, Pool: resourceapi.ResourcePool{Name: node},
		Devices: []resourceapi.Device{{Name: "speaker-0011", Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{addressAttribute: {StringValue: &addr}}}}}}}
	held := holders([]resourceapi.ResourceClaim{
		alloc("games", "pad", res(bluetoothDriver, node, pad)),
		alloc("games", "media", res(bluetoothDriver, node, "00-1a-7d-da-71-13-media")),
		alloc("music", "player", res(audioDriver, node, "speaker-0011")),
		alloc("other", "elsewhere", res(bluetoothDriver, "den", pad)),
	}, slices)

	now := metav1.Now()
	adapters := []btv1.Adapter{{
		ObjectMeta: metav1.ObjectMeta{Name: "00-1a-7d-da-71-13", DeletionTimestamp: &now},
		Status: btv1.AdapterStatus{Address: "00:1A:7D:DA:71:13", Node: node, Powered: true, Conditions: []metav1.Condition{{
			Type: btv1.ConditionPresent, Status: metav1.ConditionTrue, Reason: btv1.ReasonDeletionRefused, Message: "the radio is present on node kitchen"}}},
	}}
	peripherals := []btv1.Peripheral{
		{ObjectMeta: metav1.ObjectMeta{Name: pad}, Status: btv1.PeripheralStatus{Name: "8Bitdo", Address: "E4:17:D8:C5:67:6D", Adapter: "00-1a-7d-da-71-13", Node: node,
			Conditions: []metav1.Condition{{Type: btv1.ConditionConnected, Status: metav1.ConditionTrue, Reason: btv1.ReasonConnected}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: speaker}, Status: btv1.PeripheralStatus{Name: "Boom", Address: addr, Adapter: "00-1a-7d-da-71-13", Node: node,
			Conditions: []metav1.Condition{{Type: btv1.ConditionConnected, Status: metav1.ConditionFalse, Reason: btv1.ReasonAsleep}}}},
	}
	var out, errOut bytes.Buffer
	if err := printList(&out, &errOut, adapters, peripherals, held); err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}
	for _, l := range strings.Split(out.String(), "\n") {
		if f := strings.Fields(l); len(f) > 0 {
			rows[f[0]] = strings.Join(f, " ")
		}
	}
	for name, want := range map[string]string{
		"00-1a-7d-da-71-13": "00-1a-7d-da-71-13 00:1A:7D:DA:71:13 kitchen Terminating (DeletionRefused) True True 0 <none>",
		pad:                 pad + " 8Bitdo 00-1a-7d-da-71-13 kitchen True <none> games/pad",
		speaker:             speaker + " Boom 00-1a-7d-da-71-13 kitchen False (Asleep) <none> music/player",
	} {
		if rows[name] != want {
			t.Errorf("row %s:\n got %q\nwant %q", name, rows[name], want)
		}
	}
	if want := "Adapter 00-1a-7d-da-71-13 is Terminating: the radio is present on node kitchen\n"; errOut.String() != want {
		t.Errorf("stderr %q, want %q", errOut.String(), want)
	}
	for _, spelling := range []string{"yes", "no ", "true", "false"} {
		if strings.Contains(out.String(), spelling) {
			t.Errorf("the tables spell a boolean %q:\n%s", spelling, out.String())
		}
	}
}
