// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/liken-sh/operators/internal/audio"
	"github.com/liken-sh/operators/internal/dra"
	"github.com/liken-sh/operators/test/e2e/harness"
	"github.com/liken-sh/operators/test/e2e/kubelet"
)

// outputResource is the extended resource name deploy/audio gives the
// audio-sink DeviceClass.
const outputResource = "audio.liken.sh/output"

// TestAudioExtendedResource: a pod that asks for
// `audio.liken.sh/output: 1` in resources.limits, and names no claim,
// is scheduled by the real scheduler, which makes a claim of the
// audio-sink class for it (KEP-5004), allocates it one of the node's
// outputs and records the claim in the pod's
// status.extendedResourceClaimStatus. That claim prepares like any
// other, and its status names the output it got.
func TestAudioExtendedResource(t *testing.T) {
	a := startAudioNode(t, audioNodeOptions{})
	ctx, cluster, client := a.ctx, a.cluster, a.client

	class, err := client.ResourceV1().DeviceClasses().Get(ctx, "audio-sink", metav1.GetOptions{})
	must(t, err)
	if class.Spec.ExtendedResourceName == nil || *class.Spec.ExtendedResourceName != outputResource {
		t.Fatalf("the API server keeps audio-sink's extendedResourceName as %v, want %s", class.Spec.ExtendedResourceName, outputResource)
	}
	dp := node + "-pci-0000-00-1f-3-hdmi-3"
	waitForDriverSlice(t, ctx, cluster, audio.DriverName, func(s *resourceapi.ResourceSlice) bool {
		return hasDevice(s, dp) && !deviceTainted(s, dp)
	})

	one := resource.MustParse("1")
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "chart-player"},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{"kubernetes.io/hostname": node},
			Containers: []corev1.Container{{
				Name: "player", Image: "registry.invalid/player:1",
				Resources: corev1.ResourceRequirements{
					Limits: corev1.ResourceList{outputResource: one},
				},
			}},
		},
	}
	_, err = client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	must(t, err)
	scheduled, err := cluster.WaitForPodScheduled(ctx, "default", pod.Name)
	must(t, err)
	if scheduled.Spec.NodeName != node {
		t.Fatalf("pod bound to %q, want %q", scheduled.Spec.NodeName, node)
	}
	// The scheduler writes the mapping at binding; read it back until it
	// is there.
	var st *corev1.PodExtendedResourceClaimStatus
	for deadline := time.Now().Add(harness.DefaultWaitTimeout); st == nil; time.Sleep(100 * time.Millisecond) {
		p, err := client.CoreV1().Pods("default").Get(ctx, pod.Name, metav1.GetOptions{})
		must(t, err)
		st = p.Status.ExtendedResourceClaimStatus
		if st == nil && time.Now().After(deadline) {
			t.Fatalf("the pod has no extendedResourceClaimStatus after %s", harness.DefaultWaitTimeout)
		}
	}
	if len(st.RequestMappings) != 1 || st.RequestMappings[0].ContainerName != "player" || st.RequestMappings[0].ResourceName != outputResource {
		t.Fatalf("extendedResourceClaimStatus %+v, want one mapping of the player's %s", st, outputResource)
	}
	claim, err := cluster.WaitForClaimAllocated(ctx, "default", st.ResourceClaimName)
	must(t, err)
	if claim.Annotations[resourceapi.ExtendedResourceClaimAnnotation] != "true" {
		t.Errorf("claim %s has annotations %v, want the scheduler's extended-resource mark", claim.Name, claim.Annotations)
	}
	if len(claim.Spec.Devices.Requests) != 1 || claim.Spec.Devices.Requests[0].Exactly == nil ||
		claim.Spec.Devices.Requests[0].Exactly.DeviceClassName != "audio-sink" {
		t.Fatalf("the scheduler's claim asks for %+v, want one device of class audio-sink", claim.Spec.Devices.Requests)
	}
	results := claim.Status.Allocation.Devices.Results
	if len(results) != 1 || results[0].Driver != audio.DriverName || results[0].Pool != node {
		t.Fatalf("the scheduler's claim got %+v, want one output of %s on %s", results, audio.DriverName, node)
	}
	got := results[0].Device
	t.Logf("a pod with only %s: 1 got claim %s, allocated %s", outputResource, claim.Name, got)

	kl := kubelet.New(client, a.dra.RegistrarDir)
	t.Cleanup(func() { kl.Close() })
	plugin, err := kl.Discover(ctx, audio.DriverName)
	must(t, err)
	prepareOK(t, ctx, plugin, claim)
	_, err = cluster.WaitForClaim(ctx, "default", claim.Name, "the output's entry", func(c *resourceapi.ResourceClaim) bool {
		e := deviceStatus(c, audio.DriverName, got)
		return e != nil && statusData(e)["sink"] == got && readyIs(e, metav1.ConditionTrue, dra.ReasonReady)
	})
	must(t, err)
}
