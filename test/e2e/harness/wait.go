// SPDX-License-Identifier: Apache-2.0

package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
)

// DefaultWaitTimeout bounds every WaitFor* helper; a context deadline
// that comes earlier applies instead.
const DefaultWaitTimeout = 60 * time.Second

// poll calls check every 100ms until it reports done, returns an error, or
// DefaultWaitTimeout or ctx ends. check's state string describes what it
// saw last, and goes into the timeout error so a failing test shows why.
func (c *Cluster) poll(ctx context.Context, what string, check func(context.Context) (done bool, state string, err error)) error {
	ctx, cancel := context.WithTimeout(ctx, DefaultWaitTimeout)
	defer cancel()
	var state string
	for {
		done, s, err := check(ctx)
		if err != nil {
			return fmt.Errorf("harness: waiting for %s: %w", what, err)
		}
		if done {
			return nil
		}
		state = s
		select {
		case <-ctx.Done():
			return fmt.Errorf("harness: waiting for %s: %w; last seen: %s", what, ctx.Err(), state)
		case <-time.After(pollInterval):
		}
	}
}

// WaitForPodScheduled waits until the pod has been bound to a node
// (spec.nodeName set) and returns it.
func (c *Cluster) WaitForPodScheduled(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	var pod *corev1.Pod
	err := c.poll(ctx, fmt.Sprintf("pod %s/%s to be scheduled", namespace, name), func(ctx context.Context) (bool, string, error) {
		p, err := c.client.CoreV1().Pods(namespace).Get(ctx, name, getOpts)
		if err != nil {
			return false, err.Error(), nil
		}
		pod = p
		return p.Spec.NodeName != "", podState(p), nil
	})
	return pod, err
}

// WaitForPodUnschedulable waits until the scheduler has given up on the pod
// for now (condition PodScheduled False, reason Unschedulable) and returns
// it; the condition's message says why.
func (c *Cluster) WaitForPodUnschedulable(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	var pod *corev1.Pod
	err := c.poll(ctx, fmt.Sprintf("pod %s/%s to be unschedulable", namespace, name), func(ctx context.Context) (bool, string, error) {
		p, err := c.client.CoreV1().Pods(namespace).Get(ctx, name, getOpts)
		if err != nil {
			return false, err.Error(), nil
		}
		pod = p
		if p.Spec.NodeName != "" {
			return false, "", fmt.Errorf("pod was bound to node %s", p.Spec.NodeName)
		}
		cond := PodCondition(p, corev1.PodScheduled)
		done := cond != nil && cond.Status == corev1.ConditionFalse && cond.Reason == corev1.PodReasonUnschedulable
		return done, podState(p), nil
	})
	return pod, err
}

// WaitForClaimAllocated waits until the ResourceClaim has an allocation
// (status.allocation set) and returns it.
func (c *Cluster) WaitForClaimAllocated(ctx context.Context, namespace, name string) (*resourceapi.ResourceClaim, error) {
	var claim *resourceapi.ResourceClaim
	err := c.poll(ctx, fmt.Sprintf("resourceclaim %s/%s to be allocated", namespace, name), func(ctx context.Context) (bool, string, error) {
		rc, err := c.client.ResourceV1().ResourceClaims(namespace).Get(ctx, name, getOpts)
		if err != nil {
			return false, err.Error(), nil
		}
		claim = rc
		return rc.Status.Allocation != nil, "not allocated", nil
	})
	return claim, err
}

// WaitForClaim waits until ok holds of the ResourceClaim and returns it;
// what says what is awaited, for the timeout error, which shows the
// claim's status.devices as last seen.
func (c *Cluster) WaitForClaim(ctx context.Context, namespace, name, what string, ok func(*resourceapi.ResourceClaim) bool) (*resourceapi.ResourceClaim, error) {
	var claim *resourceapi.ResourceClaim
	err := c.poll(ctx, fmt.Sprintf("resourceclaim %s/%s: %s", namespace, name, what), func(ctx context.Context) (bool, string, error) {
		rc, err := c.client.ResourceV1().ResourceClaims(namespace).Get(ctx, name, getOpts)
		if err != nil {
			return false, err.Error(), nil
		}
		claim = rc
		devices, _ := json.Marshal(rc.Status.Devices)
		return ok(rc), "status.devices " + string(devices), nil
	})
	return claim, err
}

// PodCondition returns the pod's condition of type t, or nil.
func PodCondition(pod *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == t {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// podState summarises a pod for timeout errors.
func podState(p *corev1.Pod) string {
	parts := []string{"phase=" + string(p.Status.Phase), "node=" + p.Spec.NodeName}
	for _, c := range p.Status.Conditions {
		parts = append(parts, fmt.Sprintf("%s=%s(%s: %s)", c.Type, c.Status, c.Reason, c.Message))
	}
	return strings.Join(parts, " ")
}
