// SPDX-License-Identifier: Apache-2.0

package harness_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/liken-sh/operators/test/e2e/harness"
)

// start runs a full control plane for the test and stops it afterwards.
func start(t *testing.T, opts harness.Options) *harness.Cluster {
	t.Helper()
	opts.Logf = t.Logf
	c, err := harness.Start(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		begin := time.Now()
		c.Stop()
		t.Logf("stopped in %s", time.Since(begin).Round(time.Millisecond))
	})
	return c
}

// TestSchedulerAllocatesLikenDevices proves the simulated node and its
// liken.sh devices are what the real scheduler needs: the two operators'
// claims allocate the right device, and a claim nothing matches parks its
// pod as unschedulable.
func TestSchedulerAllocatesLikenDevices(t *testing.T) {
	c := start(t, harness.Options{})
	ctx := t.Context()
	client := c.Client()

	node, err := c.AddNode(ctx, "node-1")
	if err != nil {
		t.Fatal(err)
	}
	if len(node.Spec.Taints) != 0 {
		t.Fatalf("new node has taints %v", node.Spec.Taints)
	}
	if cpu := node.Status.Allocatable[corev1.ResourceCPU]; cpu.String() != "4" {
		t.Fatalf("allocatable cpu = %s, want 4", cpu.String())
	}
	if err := c.PublishLikenDevices(ctx, "node-1"); err != nil {
		t.Fatal(err)
	}
	if err := c.ApplyLikenDeviceClasses(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.WaitForServiceAccount(ctx, "default", "default"); err != nil {
		t.Fatal(err)
	}

	claims := []*resourceapi.ResourceClaim{
		claim("adapter", harness.BluetoothAdapterClass, resourceapi.DeviceAllocationModeExactCount),
		claim("sound", harness.SoundCardClass, resourceapi.DeviceAllocationModeAll),
	}
	for _, rc := range claims {
		if _, err := client.ResourceV1().ResourceClaims("default").Create(ctx, rc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	created := time.Now()
	if _, err := client.CoreV1().Pods("default").Create(ctx, pod("operators", "adapter", "sound"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p, err := c.WaitForPodScheduled(ctx, "default", "operators")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("pod bound %s after creation", time.Since(created).Round(time.Millisecond))
	if p.Spec.NodeName != "node-1" {
		t.Errorf("pod bound to %q, want node-1", p.Spec.NodeName)
	}
	for name, want := range map[string]string{"adapter": harness.BluetoothAdapterDevice, "sound": harness.SoundControllerDevice} {
		rc, err := c.WaitForClaimAllocated(ctx, "default", name)
		if err != nil {
			t.Fatal(err)
		}
		results := rc.Status.Allocation.Devices.Results
		if len(results) != 1 {
			t.Fatalf("claim %s allocated %d devices, want 1: %+v", name, len(results), results)
		}
		r := results[0]
		if r.Driver != harness.LikenDriver || r.Pool != "node-1" || r.Device != want || r.Request != "req" {
			t.Errorf("claim %s allocated %s/%s/%s for request %s, want %s/node-1/%s for req", name, r.Driver, r.Pool, r.Device, r.Request, harness.LikenDriver, want)
		}
		if len(rc.Status.ReservedFor) != 1 || rc.Status.ReservedFor[0].Name != "operators" {
			t.Errorf("claim %s reserved for %+v, want the pod", name, rc.Status.ReservedFor)
		}
	}

	t.Run("nothing matches", func(t *testing.T) {
		if err := c.ApplyDeviceClass(ctx, &resourceapi.DeviceClass{
			ObjectMeta: metav1.ObjectMeta{Name: "no-such-hardware"},
			Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{
				CEL: &resourceapi.CELDeviceSelector{Expression: `device.driver == "nothing.liken.sh"`},
			}}},
		}); err != nil {
			t.Fatal(err)
		}
		if _, err := client.ResourceV1().ResourceClaims("default").Create(ctx, claim("nothing", "no-such-hardware", resourceapi.DeviceAllocationModeExactCount), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := client.CoreV1().Pods("default").Create(ctx, pod("parked", "nothing"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		p, err := c.WaitForPodUnschedulable(ctx, "default", "parked")
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("unschedulable: %s", harness.PodCondition(p, corev1.PodScheduled).Message)
		rc, err := client.ResourceV1().ResourceClaims("default").Get(ctx, "nothing", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if rc.Status.Allocation != nil {
			t.Errorf("claim for a class nothing matches was allocated: %+v", rc.Status.Allocation)
		}
	})
}

// TestTwoClustersSideBySide proves that clusters do not share ports or
// state, and that Stop leaves nothing listening.
func TestTwoClustersSideBySide(t *testing.T) {
	opts := harness.Options{WithoutScheduler: true, WithoutControllerManager: true}
	a, b := start(t, opts), start(t, opts)
	if a.Host() == b.Host() {
		t.Fatalf("both clusters at %s", a.Host())
	}
	ctx := t.Context()
	if _, err := a.AddNode(ctx, "only-in-a"); err != nil {
		t.Fatal(err)
	}
	nodes, err := b.Client().CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes.Items) != 0 {
		t.Errorf("cluster b sees nodes %v", nodes.Items)
	}
	// Without the controller manager the ServiceAccount admission plugin
	// is off, so pods go in with no "default" ServiceAccount.
	if _, err := b.Client().CoreV1().Pods("default").Create(ctx, pod("no-sa"), metav1.CreateOptions{}); err != nil {
		t.Errorf("pod without ServiceAccount refused: %v", err)
	}

	b.Stop()
	short, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if _, err := b.Client().CoreV1().Nodes().List(short, metav1.ListOptions{}); err == nil {
		t.Error("cluster b still answers after Stop")
	} else if !strings.Contains(err.Error(), "refused") {
		t.Logf("after Stop: %v", err)
	}
}

func claim(name, class string, mode resourceapi.DeviceAllocationMode) *resourceapi.ResourceClaim {
	return &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{
			Requests: []resourceapi.DeviceRequest{{
				Name:    "req",
				Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: class, AllocationMode: mode},
			}},
		}},
	}
}

// pod makes a pod whose one container uses every named claim. The image is
// never pulled: there is no kubelet.
func pod(name string, claims ...string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "main", Image: "registry.invalid/none"}},
		},
	}
	for _, c := range claims {
		p.Spec.ResourceClaims = append(p.Spec.ResourceClaims, corev1.PodResourceClaim{Name: c, ResourceClaimName: &c})
		p.Spec.Containers[0].Resources.Claims = append(p.Spec.Containers[0].Resources.Claims, corev1.ResourceClaim{Name: c})
	}
	return p
}
