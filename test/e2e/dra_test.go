// SPDX-License-Identifier: Apache-2.0

// Package e2e proves the DRA chain against a real control plane: a driver
// on the shared core publishes a slice, the real kube-scheduler allocates a
// claim from it, a fake kubelet prepares the claim over the driver's gRPC
// socket, and the CDI spec it yields passes the CDI library's validation.
package e2e

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2/ktesting"
	drapbv1 "k8s.io/kubelet/pkg/apis/dra/v1"
	"tags.cncf.io/container-device-interface/pkg/cdi"
	"tags.cncf.io/container-device-interface/pkg/parser"

	"github.com/liken-sh/operators/internal/dra"
	"github.com/liken-sh/operators/test/e2e/harness"
	"github.com/liken-sh/operators/test/e2e/kubelet"
	"github.com/liken-sh/operators/test/e2e/testdriver"
)

const node = "node-1"

var pads = []testdriver.Pad{
	{Name: "pad-blue", Color: "blue", Event: 7},
	{Name: "pad-red", Color: "red", Event: 9},
}

// driverNode is the control plane with the test driver running on its
// node.
type driverNode struct {
	ctx     context.Context
	cluster *harness.Cluster
	opts    dra.Options // the driver's, to start it again with
	// driver is the running driver; the test's end stops the one this
	// holds then.
	driver *testdriver.Driver
}

// startDriverNode starts the control plane with a Node named node, the
// test driver's DeviceClass and the default service account, and the
// test driver on that node publishing pads (its kubelet and CDI
// directories in a scratch directory, a 200 ms settle window).
func startDriverNode(t *testing.T) *driverNode {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	cluster, err := harness.Start(ctx, harness.Options{Logf: t.Logf})
	must(t, err)
	t.Cleanup(cluster.Stop)
	must(t, ignore(cluster.AddNode(ctx, node)))
	must(t, cluster.ApplyDeviceClass(ctx, testdriver.DeviceClass()))
	must(t, ignore(cluster.WaitForServiceAccount(ctx, "default", "default")))
	dir := t.TempDir()
	n := &driverNode{ctx: ctx, cluster: cluster, opts: dra.Options{
		NodeName: node, KubeClient: cluster.Client(),
		RegistrarDir: filepath.Join(dir, "plugins_registry"), PluginDir: filepath.Join(dir, "plugins", testdriver.Name),
		CDIDir: filepath.Join(dir, "cdi"), SettleQuiet: 200 * time.Millisecond,
	}}
	n.driver, err = testdriver.Start(ctx, n.opts, pads)
	must(t, err)
	t.Cleanup(func() { n.driver.Stop() })
	return n
}

func TestDriverChain(t *testing.T) {
	n := startDriverNode(t)
	ctx, cluster, client, opts := n.ctx, n.cluster, n.cluster.Client(), n.opts

	// 1. The driver publishes its pool, owned by the Node.
	slice := waitForSlice(t, ctx, cluster, func(s *resourceapi.ResourceSlice) bool { return len(s.Spec.Devices) == 2 })
	if slice.Spec.Pool.Name != node || slice.Spec.NodeName == nil || *slice.Spec.NodeName != node {
		t.Fatalf("slice pool %q node %v, want both %q", slice.Spec.Pool.Name, slice.Spec.NodeName, node)
	}
	if len(slice.OwnerReferences) != 1 || slice.OwnerReferences[0].Kind != "Node" || slice.OwnerReferences[0].Name != node {
		t.Fatalf("slice owner %+v, want the Node", slice.OwnerReferences)
	}

	// 2. The real scheduler allocates the blue pad by a CEL selector.
	blue := create(t, ctx, cluster, testdriver.ClaimForColor("default", "blue", "blue", `{"led":"off"}`), "player-blue")
	if got := blue.Status.Allocation.Devices.Results[0].Device; got != "pad-blue" {
		t.Fatalf("scheduler allocated %s, want pad-blue", got)
	}

	// 3. The fake kubelet finds the driver and prepares the claim.
	kl := kubelet.New(client, opts.RegistrarDir)
	t.Cleanup(func() { kl.Close() })
	plugin, err := kl.Discover(ctx, testdriver.Name)
	if err != nil {
		t.Fatal(err)
	}
	first := prepareOK(t, ctx, plugin, blue)
	specPath := filepath.Join(opts.CDIDir, testdriver.Name+"-"+string(blue.UID)+".json")
	checkSpec(t, specPath, first.CdiDeviceIds[0], "/dev/input/event7", "LIKEN_E2E_LED=off")

	// 4. A NoSchedule taint keeps a second claim off the red pad.
	gone := slices.Clone(pads)
	gone[1].Gone = true
	if err := n.driver.SetPads(gone); err != nil {
		t.Fatal(err)
	}
	waitForSlice(t, ctx, cluster, func(s *resourceapi.ResourceSlice) bool {
		return slices.ContainsFunc(s.Spec.Devices, func(d resourceapi.Device) bool { return len(d.Taints) == 1 })
	})
	red := testdriver.ClaimForColor("default", "red", "red", "")
	if _, err := client.ResourceV1().ResourceClaims("default").Create(ctx, red, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Pods("default").Create(ctx, testdriver.PodWithClaim("default", "player-red", node, "red"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cluster.WaitForPodUnschedulable(ctx, "default", "player-red"); err != nil {
		t.Fatal(err)
	}

	// 5. Bad input is answered per claim: an unknown UID beside a good
	// claim fails alone, with an error that names it.
	resp, err := plugin.PrepareRefs(ctx, kubelet.Ref(blue), kubelet.ClaimRef{Namespace: "default", Name: "blue", UID: "00000000-dead-beef-0000-000000000000"})
	if err != nil {
		t.Fatal(err)
	}
	if e := resp.Claims[string(blue.UID)].Error; e != "" {
		t.Fatalf("good claim failed beside a bad one: %s", e)
	}
	if e := resp.Claims["00000000-dead-beef-0000-000000000000"].Error; !strings.Contains(e, "default/blue") {
		t.Fatalf("unknown UID answered %q, want an error naming the claim", e)
	}

	// 6. Kill and restart the driver; the kubelet's repeated calls still
	// answer correctly, and a wiped CDI directory is rebuilt.
	n.driver.Stop()
	if err := os.RemoveAll(opts.CDIDir); err != nil {
		t.Fatal(err)
	}
	n.driver, err = testdriver.Start(ctx, opts, gone)
	if err != nil {
		t.Fatal(err)
	}
	plugin.Close()
	if plugin, err = kl.Discover(ctx, testdriver.Name); err != nil {
		t.Fatal(err)
	}
	again := prepareOK(t, ctx, plugin, blue)
	if again.CdiDeviceIds[0] != first.CdiDeviceIds[0] || again.DeviceName != first.DeviceName {
		t.Fatalf("after restart prepare answered %v, before %v", again, first)
	}
	checkSpec(t, specPath, first.CdiDeviceIds[0], "/dev/input/event7", "LIKEN_E2E_LED=off")

	// 7. Unprepare removes the spec, and repeating it is still success.
	for range 2 {
		uresp, err := plugin.Unprepare(ctx, blue)
		if err != nil {
			t.Fatal(err)
		}
		if e := uresp.Claims[string(blue.UID)].Error; e != "" {
			t.Fatalf("unprepare: %s", e)
		}
	}
	if _, err := os.Stat(specPath); !os.IsNotExist(err) {
		t.Fatalf("spec still present after unprepare: %v", err)
	}
}

// create makes the claim and a pod that uses it, and returns the claim once
// the scheduler allocated it.
func create(t *testing.T, ctx context.Context, c *harness.Cluster, claim *resourceapi.ResourceClaim, pod string) *resourceapi.ResourceClaim {
	t.Helper()
	client := c.Client()
	if _, err := client.ResourceV1().ResourceClaims(claim.Namespace).Create(ctx, claim, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Pods(claim.Namespace).Create(ctx, testdriver.PodWithClaim(claim.Namespace, pod, node, claim.Name), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.WaitForPodScheduled(ctx, claim.Namespace, pod); err != nil {
		t.Fatal(err)
	}
	allocated, err := c.WaitForClaimAllocated(ctx, claim.Namespace, claim.Name)
	if err != nil {
		t.Fatal(err)
	}
	return allocated
}

func waitForSlice(t *testing.T, ctx context.Context, c *harness.Cluster, ok func(*resourceapi.ResourceSlice) bool) *resourceapi.ResourceSlice {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		list, err := c.Client().ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{FieldSelector: "spec.driver=" + testdriver.Name})
		if err != nil {
			t.Fatal(err)
		}
		for i := range list.Items {
			if ok(&list.Items[i]) {
				return &list.Items[i]
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("no ResourceSlice of %s in the expected state", testdriver.Name)
	return nil
}

func prepareOK(t testing.TB, ctx context.Context, p *kubelet.Plugin, claim *resourceapi.ResourceClaim) *drapbv1.Device {
	t.Helper()
	resp, err := p.Prepare(ctx, claim)
	if err != nil {
		t.Fatal(err)
	}
	res := resp.Claims[string(claim.UID)]
	if res.Error != "" || len(res.Devices) != 1 {
		t.Fatalf("prepare %s: error %q, %d devices", claim.Name, res.Error, len(res.Devices))
	}
	return res.Devices[0]
}

// checkSpec validates the spec file with the CDI library and checks that
// the qualified device carries the device node and variable the driver set.
func checkSpec(t *testing.T, path, id, deviceNode, env string) {
	t.Helper()
	spec, err := cdi.ReadSpec(path, 0)
	if err != nil {
		t.Fatalf("CDI spec %s: %v", path, err)
	}
	_, _, name, err := parser.ParseQualifiedName(id)
	if err != nil {
		t.Fatal(err)
	}
	dev := spec.GetDevice(name)
	if dev == nil {
		t.Fatalf("spec %s has no device %s", path, name)
	}
	if len(dev.ContainerEdits.DeviceNodes) != 1 || dev.ContainerEdits.DeviceNodes[0].Path != deviceNode {
		t.Fatalf("device nodes %+v, want %s", dev.ContainerEdits.DeviceNodes, deviceNode)
	}
	if !slices.Contains(dev.ContainerEdits.Env, env) {
		t.Fatalf("env %v lacks %s", dev.ContainerEdits.Env, env)
	}
}
