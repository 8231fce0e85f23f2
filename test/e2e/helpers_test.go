// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"tags.cncf.io/container-device-interface/pkg/parser"

	"github.com/liken-sh/operators/internal/bdaddr"
	"github.com/liken-sh/operators/internal/bonds"
	"github.com/liken-sh/operators/test/e2e/harness"
	"github.com/liken-sh/operators/test/e2e/testdriver"
	"github.com/liken-sh/operators/test/poll"
)

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// ignore drops a value so that must can check the error of a two-result call.
func ignore[T any](_ T, err error) error { return err }

func mustAddr(t testing.TB, s string) bdaddr.Address {
	t.Helper()
	a, err := bdaddr.Parse(s)
	must(t, err)
	return a
}

func cdiParts(id string) (vendor, class, name string, err error) {
	return parser.ParseQualifiedName(id)
}

func hasDevice(s *resourceapi.ResourceSlice, name string) bool {
	for _, d := range s.Spec.Devices {
		if d.Name == name {
			return true
		}
	}
	return false
}

// waitForDriverSlice polls the driver's slices until one satisfies ok.
func waitForDriverSlice(t testing.TB, ctx context.Context, c *harness.Cluster, driver string, ok func(*resourceapi.ResourceSlice) bool) *resourceapi.ResourceSlice {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		list, err := c.Client().ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{FieldSelector: "spec.driver=" + driver})
		must(t, err)
		for i := range list.Items {
			if ok(&list.Items[i]) {
				return &list.Items[i]
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("no ResourceSlice of %s in the expected state", driver)
	return nil
}

// createWithPod makes the claim and a pod on the node that uses it, and
// returns the claim once the real scheduler allocated it.
func createWithPod(t testing.TB, ctx context.Context, c *harness.Cluster, claim *resourceapi.ResourceClaim, pod string) *resourceapi.ResourceClaim {
	t.Helper()
	client := c.Client()
	_, err := client.ResourceV1().ResourceClaims(claim.Namespace).Create(ctx, claim, metav1.CreateOptions{})
	must(t, err)
	p := podFor(claim, pod)
	_, err = client.CoreV1().Pods(claim.Namespace).Create(ctx, p, metav1.CreateOptions{})
	must(t, err)
	_, err = c.WaitForPodScheduled(ctx, claim.Namespace, pod)
	must(t, err)
	allocated, err := c.WaitForClaimAllocated(ctx, claim.Namespace, claim.Name)
	must(t, err)
	return allocated
}

// waitForBondSecret waits until the bond of device in the storage tree is
// in its Secret byte for byte.
func waitForBondSecret(t testing.TB, ctx context.Context, c *harness.Cluster, root, device string) {
	t.Helper()
	dev := mustAddr(t, device)
	adapter := mustAddr(t, adapterAddr)
	deadline := time.Now().Add(30 * time.Second)
	var last string
	for time.Now().Before(deadline) {
		tree, _, err := bonds.ReadTree(root, adapter)
		must(t, err)
		var want *bonds.Bond
		for i := range tree {
			if tree[i].Device == dev {
				want = &tree[i]
			}
		}
		s, err := c.Client().CoreV1().Secrets("liken-system").Get(ctx, bonds.SecretName(adapter, dev), metav1.GetOptions{})
		if err == nil && want != nil && bytes.Equal(s.Data[bonds.InfoKey(dev)], want.Info) && len(want.Info) > 0 {
			return
		}
		last = "secret: " + errString(err)
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("bond of %s never reached its Secret (%s)", device, last)
}

// waitForSecretEvent waits, at most 30 s, for an Event (events.k8s.io/v1)
// regarding the Secret name in liken-system with reason.
func waitForSecretEvent(t testing.TB, ctx context.Context, c *harness.Cluster, name, reason string) {
	t.Helper()
	poll.WaitFor(t, ctx, "Event "+reason+" on Secret "+name, 30*time.Second, func() (bool, string) {
		list, err := c.Client().EventsV1().Events("liken-system").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, e := range list.Items {
			if e.Regarding.Kind == "Secret" && e.Regarding.Name == name {
				if e.Reason == reason {
					return true, ""
				}
				seen = append(seen, e.Reason)
			}
		}
		return false, fmt.Sprintf("its Events: %v", seen)
	})
}

func errString(err error) string {
	if err == nil {
		return "present, bytes differ"
	}
	return err.Error()
}

// podFor is a pod on the node using claim's first request.
func podFor(claim *resourceapi.ResourceClaim, pod string) *corev1.Pod {
	p := testdriver.PodWithClaim(claim.Namespace, pod, node, claim.Name)
	req := claim.Spec.Devices.Requests[0].Name
	p.Spec.ResourceClaims[0].Name = req
	p.Spec.Containers[0].Resources.Claims[0].Name = req
	return p
}

// deleteRefused deletes the pod and the claim named name in default, a
// claim whose prepare was refused, and waits up to 30 s for the claim
// to be gone.
func deleteRefused(t testing.TB, ctx context.Context, client kubernetes.Interface, name string) {
	t.Helper()
	must(t, client.CoreV1().Pods("default").Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}))
	must(t, client.ResourceV1().ResourceClaims("default").Delete(ctx, name, metav1.DeleteOptions{}))
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if _, err := client.ResourceV1().ResourceClaims("default").Get(ctx, name, metav1.GetOptions{}); err != nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("claim %s outlived its deletion", name)
		}
	}
}
