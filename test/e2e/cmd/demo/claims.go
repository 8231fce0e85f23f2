// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"fmt"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/liken-sh/operators/internal/dra"
	"github.com/liken-sh/operators/test/e2e/harness"
	"github.com/liken-sh/operators/test/e2e/kubelet"
)

// allocateAndPrepare creates the claim and a pod using it, waits for the
// real scheduler, prepares the claim through the driver's socket as the
// kubelet would, and prints the result and the CDI spec.
func allocateAndPrepare(ctx context.Context, c *harness.Cluster, claim *resourceapi.ResourceClaim, pod, nodeName, driver string, opts dra.Options) error {
	allocated, err := allocate(ctx, c, claim, pod, nodeName)
	if err != nil {
		return err
	}
	r := allocated.Status.Allocation.Devices.Results[0]
	fmt.Printf("  allocated by kube-scheduler: driver %s, pool %s, device %s; pod %s/%s bound to %s\n", r.Driver, r.Pool, r.Device, claim.Namespace, pod, nodeName)
	ids, endpoint, err := prepare(ctx, c, allocated, driver, opts.RegistrarDir)
	if err != nil {
		return err
	}
	fmt.Printf("  prepared by the fake kubelet over %s: CDI device %s\n", endpoint, ids[0])
	return printSpec(filepath.Join(opts.CDIDir, driver+"-"+string(allocated.UID)+".json"))
}

// allocate creates claim and a pod on nodeName whose one container holds
// it (the pod's claim is named after the claim's first request), and
// returns the claim once the real kube-scheduler bound the pod and
// allocated the claim.
func allocate(ctx context.Context, c *harness.Cluster, claim *resourceapi.ResourceClaim, pod, nodeName string) (*resourceapi.ResourceClaim, error) {
	client := c.Client()
	if _, err := client.ResourceV1().ResourceClaims(claim.Namespace).Create(ctx, claim, metav1.CreateOptions{}); err != nil {
		return nil, err
	}
	req := claim.Spec.Devices.Requests[0].Name
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: claim.Namespace, Name: pod},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{"kubernetes.io/hostname": nodeName},
			Containers: []corev1.Container{{Name: "app", Image: "registry.invalid/app:1",
				Resources: corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: req}}}}},
			ResourceClaims: []corev1.PodResourceClaim{{Name: req, ResourceClaimName: &claim.Name}},
		},
	}
	if _, err := client.CoreV1().Pods(claim.Namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		return nil, err
	}
	if _, err := c.WaitForPodScheduled(ctx, claim.Namespace, pod); err != nil {
		return nil, err
	}
	return c.WaitForClaimAllocated(ctx, claim.Namespace, claim.Name)
}

// prepare prepares the allocated claim through driver's socket,
// registered in registrarDir, as the kubelet does before it starts the
// pod, and returns the CDI device IDs of every device and the socket it
// was prepared over. A claim the driver could not prepare is an error
// carrying the driver's reason.
func prepare(ctx context.Context, c *harness.Cluster, claim *resourceapi.ResourceClaim, driver, registrarDir string) (ids []string, endpoint string, err error) {
	kl := kubelet.New(c.Client(), registrarDir)
	defer kl.Close()
	plugin, err := kl.Discover(ctx, driver)
	if err != nil {
		return nil, "", err
	}
	resp, err := plugin.Prepare(ctx, claim)
	if err != nil {
		return nil, "", err
	}
	res := resp.Claims[string(claim.UID)]
	if res.Error != "" {
		return nil, "", fmt.Errorf("prepare of claim %s/%s: %s", claim.Namespace, claim.Name, res.Error)
	}
	for _, d := range res.Devices {
		ids = append(ids, d.CdiDeviceIds...)
	}
	if len(ids) == 0 {
		return nil, "", fmt.Errorf("prepare of claim %s/%s gave no CDI device", claim.Namespace, claim.Name)
	}
	return ids, plugin.Endpoint(), nil
}

// unprepare unprepares claims through driver's socket, registered in
// registrarDir, as the kubelet does once the last pod using them has
// stopped; a claim the driver could not unprepare is an error naming it.
func unprepare(ctx context.Context, c *harness.Cluster, driver, registrarDir string, claims ...*resourceapi.ResourceClaim) error {
	kl := kubelet.New(c.Client(), registrarDir)
	defer kl.Close()
	plugin, err := kl.Discover(ctx, driver)
	if err != nil {
		return err
	}
	resp, err := plugin.Unprepare(ctx, claims...)
	if err != nil {
		return err
	}
	for _, rc := range claims {
		if r := resp.Claims[string(rc.UID)]; r != nil && r.Error != "" {
			return fmt.Errorf("unprepare of claim %s/%s: %s", rc.Namespace, rc.Name, r.Error)
		}
	}
	return nil
}

// release ends what allocate made once the demo is done with it: the
// claim is unprepared (the kubelet's part when the pod stops), and the
// pod (grace period 0) and the claim are deleted, which frees the
// claim's share of its devices.
func release(ctx context.Context, c *harness.Cluster, driver, registrarDir string, claim *resourceapi.ResourceClaim, pod string) error {
	if err := unprepare(ctx, c, driver, registrarDir, claim); err != nil {
		return err
	}
	zero := int64(0)
	if err := c.Client().CoreV1().Pods(claim.Namespace).Delete(ctx, pod, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		return err
	}
	return c.Client().ResourceV1().ResourceClaims(claim.Namespace).Delete(ctx, claim.Name, metav1.DeleteOptions{})
}
