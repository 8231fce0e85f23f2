// SPDX-License-Identifier: Apache-2.0

package harness

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
)

// AddNode creates a Node the real scheduler will bind pods to, standing in
// for what a kubelet registers: capacity and allocatable of 4 CPUs, 8Gi of
// memory and 110 pods, and a Ready condition, written through the status
// subresource because the API server ignores status on create. The node
// carries no taints (the API server runs without TaintNodesByCondition) and
// nothing heartbeats it, which is fine because node-lifecycle is off.
// It returns the Node as stored after the status update.
func (c *Cluster) AddNode(ctx context.Context, name string) (*corev1.Node, error) {
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: name,
			Labels: map[string]string{
				"kubernetes.io/hostname": name,
				"kubernetes.io/os":       "linux",
				"kubernetes.io/arch":     "amd64",
			},
		},
	}
	_, err := c.client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("harness: create node %s: %w", name, err)
	}
	resources := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("4"),
		corev1.ResourceMemory: resource.MustParse("8Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	// Something in the control plane (a controller stamping the new Node)
	// may update it between the create and the status write: re-read and
	// write again on a conflict.
	var updated *corev1.Node
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := c.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		now := metav1.Now()
		cur.Status = corev1.NodeStatus{
			Capacity:    resources,
			Allocatable: resources,
			Phase:       corev1.NodeRunning,
			Conditions: []corev1.NodeCondition{{
				Type:               corev1.NodeReady,
				Status:             corev1.ConditionTrue,
				Reason:             "KubeletReady",
				Message:            "simulated by the liken e2e harness",
				LastHeartbeatTime:  now,
				LastTransitionTime: now,
			}},
			Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: "127.0.0.1"},
				{Type: corev1.NodeHostName, Address: name},
			},
		}
		updated, err = c.client.CoreV1().Nodes().UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("harness: status of node %s: %w", name, err)
	}
	return updated, nil
}

// WaitForServiceAccount waits until the ServiceAccount namespace/name exists
// and returns it. The controller manager creates "default" in every
// namespace shortly after the namespace appears, and the ServiceAccount
// admission plugin refuses pods until it has. Without the controller
// manager, a "default" ServiceAccount never appears.
func (c *Cluster) WaitForServiceAccount(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error) {
	var sa *corev1.ServiceAccount
	err := c.poll(ctx, fmt.Sprintf("serviceaccount %s/%s", namespace, name), func(ctx context.Context) (bool, string, error) {
		got, err := c.client.CoreV1().ServiceAccounts(namespace).Get(ctx, name, getOpts)
		if err != nil {
			return false, err.Error(), nil
		}
		sa = got
		return true, "", nil
	})
	return sa, err
}
