// SPDX-License-Identifier: Apache-2.0

package audio

import (
	"context"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Together checks that no container of the pods claim is reserved for
// holds another claim of this driver beside it; nil when none does.
type Together func(ctx context.Context, claim *resourceapi.ResourceClaim) error

// ContainersAlone returns the Together of the cluster client reaches.
//
// Two audio claims in one container cannot both be delivered: each sets
// PIPEWIRE_REMOTE to its own socket and PIPEWIRE_NODE to its own node,
// and CDI keeps the value of whichever device the runtime applies last
// (a variable set twice is replaced, tags.cncf.io/container-device-
// interface pkg/cdi ContainerEdits.Apply), so a player would reach one of
// them, silently. The kubelet prepares one claim at a time and tells a
// driver nothing of the pod, so the check reads it: each pod in the
// claim's status.reservedFor, the containers (init containers too) that
// name the claim in resources.claims, or that hold it through an
// extended resource (status.extendedResourceClaimStatus), and every
// other claim those containers name. A container with another claim
// allocated a device of this driver fails the prepare, with both claims
// named and what to do instead (one claim with a request per output,
// whose outputs are played together). Since the scheduler allocates
// every claim of a pod before it binds the pod, both claims' prepares
// fail. A pod or claim that is gone is skipped (the kubelet does not
// start a deleted pod); any other API error fails the prepare, so the
// kubelet retries it.
func ContainersAlone(client kubernetes.Interface) Together {
	return func(ctx context.Context, claim *resourceapi.ResourceClaim) error {
		for _, ref := range claim.Status.ReservedFor {
			if ref.APIGroup != "" || ref.Resource != "pods" {
				continue
			}
			pod, err := client.CoreV1().Pods(claim.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) || err == nil && pod.UID != ref.UID {
				continue
			}
			if err != nil {
				return fmt.Errorf("reading pod %s/%s, which the claim is reserved for, to check that no container of it holds another audio claim: %w", claim.Namespace, ref.Name, err)
			}
			if err := checkPod(ctx, client, claim, pod); err != nil {
				return err
			}
		}
		return nil
	}
}

// checkPod is ContainersAlone for one pod.
func checkPod(ctx context.Context, client kubernetes.Interface, claim *resourceapi.ResourceClaim, pod *corev1.Pod) error {
	names := podClaimNames(pod)
	holders := map[string][]string{} // container: the claims (ResourceClaim names) it holds
	for _, c := range slices.Concat(pod.Spec.InitContainers, pod.Spec.Containers) {
		for _, rc := range c.Resources.Claims {
			if n := names[rc.Name]; n != "" && !slices.Contains(holders[c.Name], n) {
				holders[c.Name] = append(holders[c.Name], n)
			}
		}
	}
	if ext := pod.Status.ExtendedResourceClaimStatus; ext != nil {
		for _, m := range ext.RequestMappings {
			if !slices.Contains(holders[m.ContainerName], ext.ResourceClaimName) {
				holders[m.ContainerName] = append(holders[m.ContainerName], ext.ResourceClaimName)
			}
		}
	}
	audio := map[string]bool{claim.Name: true} // ResourceClaim name: allocated a device of this driver
	for _, container := range slices.Sorted(maps.Keys(holders)) {
		held := holders[container]
		if !slices.Contains(held, claim.Name) {
			continue
		}
		for _, other := range held {
			is, known := audio[other]
			if !known {
				c, err := client.ResourceV1().ResourceClaims(claim.Namespace).Get(ctx, other, metav1.GetOptions{})
				if apierrors.IsNotFound(err) {
					continue
				}
				if err != nil {
					return fmt.Errorf("reading claim %s/%s, which container %s of pod %s holds beside this one: %w", claim.Namespace, other, container, pod.Name, err)
				}
				is = allocatedHere(c)
				audio[other] = is
			}
			if is && other != claim.Name {
				return fmt.Errorf("container %s of pod %s/%s holds two audio claims, %s and %s: a container gets one PipeWire socket and one PIPEWIRE_NODE, and of two the runtime keeps one, silently; "+
					"put the outputs in one claim, one request each (it then plays to all of them through one combined sink, and names each in %s<REQUEST>), or give each claim a container of its own",
					container, pod.Namespace, pod.Name, claim.Name, other, EnvNodePrefix)
			}
		}
	}
	return nil
}

// podClaimNames maps each of pod's claim names (spec.resourceClaims) to
// the ResourceClaim it stands for: its resourceClaimName, or the claim
// generated from its template (status.resourceClaimStatuses), "" while
// none is generated.
func podClaimNames(pod *corev1.Pod) map[string]string {
	out := map[string]string{}
	for _, rc := range pod.Spec.ResourceClaims {
		if rc.ResourceClaimName != nil {
			out[rc.Name] = *rc.ResourceClaimName
		}
	}
	for _, st := range pod.Status.ResourceClaimStatuses {
		if _, set := out[st.Name]; !set && st.ResourceClaimName != nil {
			out[st.Name] = *st.ResourceClaimName
		}
	}
	return out
}

// allocatedHere reports whether c's allocation holds a device of this
// driver.
func allocatedHere(c *resourceapi.ResourceClaim) bool {
	if c.Status.Allocation == nil {
		return false
	}
	return slices.ContainsFunc(c.Status.Allocation.Devices.Results, func(r resourceapi.DeviceRequestAllocationResult) bool {
		return r.Driver == DriverName
	})
}
