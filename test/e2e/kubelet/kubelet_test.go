// SPDX-License-Identifier: Apache-2.0

package kubelet_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	drapbv1 "k8s.io/kubelet/pkg/apis/dra/v1"

	"github.com/liken-sh/operators/test/e2e/harness"
	"github.com/liken-sh/operators/test/e2e/kubelet"
)

const (
	driver = "test.liken.sh"
	node   = "node-1"
	device = "dev-0"
)

// fixedPlugin is a DRA driver with one device: it prepares every claim as
// that device and records what it was asked.
type fixedPlugin struct {
	t          *testing.T
	mu         sync.Mutex
	prepared   []types.UID
	unprepared []types.UID
}

func (f *fixedPlugin) PrepareResourceClaims(_ context.Context, claims []*resourceapi.ResourceClaim) (map[types.UID]kubeletplugin.PrepareResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[types.UID]kubeletplugin.PrepareResult{}
	for _, c := range claims {
		f.prepared = append(f.prepared, c.UID)
		out[c.UID] = kubeletplugin.PrepareResult{Devices: []kubeletplugin.Device{{
			PoolName:     node,
			DeviceName:   device,
			CDIDeviceIDs: []string{driver + "/dev=" + string(c.UID)},
		}}}
	}
	return out, nil
}

func (f *fixedPlugin) UnprepareResourceClaims(_ context.Context, claims []kubeletplugin.NamespacedObject) (map[types.UID]error, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[types.UID]error{}
	for _, c := range claims {
		f.unprepared = append(f.unprepared, c.UID)
		out[c.UID] = nil
	}
	return out, nil
}

func (f *fixedPlugin) HandleError(_ context.Context, err error, msg string) {
	f.t.Errorf("driver background error: %s: %v", msg, err)
}

func (f *fixedPlugin) WatchHealthStatus(context.Context, chan<- kubeletplugin.DeviceHealthReport) error {
	return kubeletplugin.ErrHealthNotSupported
}

// dirs makes the kubelet's two directories in a fresh temp dir.
func dirs(t *testing.T) (registry, data string) {
	base := t.TempDir()
	registry, data = filepath.Join(base, "plugins_registry"), filepath.Join(base, "plugins", driver)
	for _, d := range []string{registry, data} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return registry, data
}

func startHelper(t *testing.T, ctx context.Context, c *harness.Cluster, plugin kubeletplugin.DRAPlugin, nodeUID types.UID, opts ...kubeletplugin.Option) *kubeletplugin.Helper {
	t.Helper()
	opts = append([]kubeletplugin.Option{
		kubeletplugin.KubeClient(c.Client()),
		kubeletplugin.NodeName(node),
		kubeletplugin.NodeUID(nodeUID),
	}, opts...)
	h, err := kubeletplugin.Start(ctx, plugin, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Stop)
	return h
}

func TestKubelet(t *testing.T) {
	c, err := harness.Start(t.Context(), harness.Options{Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	ctx := t.Context()
	n, err := c.AddNode(ctx, node)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("prepare round trip", func(t *testing.T) {
		registry, data := dirs(t)
		plugin := &fixedPlugin{t: t}
		h := startHelper(t, ctx, c, plugin, n.UID,
			kubeletplugin.DriverName(driver),
			kubeletplugin.RegistrarDirectoryPath(registry),
			kubeletplugin.PluginDataDirectoryPath(data))
		if err := h.PublishResources(ctx, resourceslice.DriverResources{Pools: map[string]resourceslice.Pool{
			node: {Slices: []resourceslice.Slice{{Devices: []resourceapi.Device{{Name: device}}}}},
		}}); err != nil {
			t.Fatal(err)
		}
		claim := allocate(t, ctx, c)

		k := kubelet.New(c.Client(), registry)
		defer k.Close()
		discoverCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		p, err := k.Discover(discoverCtx, driver)
		if err != nil {
			t.Fatal(err)
		}
		if st := h.RegistrationStatus(); st == nil || !st.PluginRegistered {
			t.Errorf("helper saw registration status %v, want registered", st)
		}
		if p.Endpoint() != filepath.Join(data, "dra.sock") {
			t.Errorf("endpoint %s, want dra.sock in %s", p.Endpoint(), data)
		}

		begin := time.Now()
		resp, err := p.Prepare(ctx, claim)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("NodePrepareResources took %s", time.Since(begin).Round(time.Microsecond))
		got := resp.Claims[string(claim.UID)]
		if got.Error != "" || len(got.Devices) != 1 {
			t.Fatalf("prepare result %v, want one device", got)
		}
		want := &drapbv1.Device{PoolName: node, DeviceName: device, CdiDeviceIds: []string{driver + "/dev=" + string(claim.UID)}}
		if d := got.Devices[0]; d.PoolName != want.PoolName || d.DeviceName != want.DeviceName || strings.Join(d.CdiDeviceIds, ",") != strings.Join(want.CdiDeviceIds, ",") {
			t.Errorf("prepared device %v, want %v", d, want)
		}

		// The helper checks the UID against the API server's claim. A
		// stale UID fails the whole call, not just that claim's entry, and
		// never reaches the driver.
		stale := kubelet.Ref(claim)
		stale.UID = "00000000-0000-0000-0000-000000000000"
		if resp, err := p.PrepareRefs(ctx, stale); err == nil {
			t.Errorf("prepare with an unknown UID succeeded: %v", resp)
		} else if !strings.Contains(err.Error(), "replaced") {
			t.Errorf("prepare with an unknown UID: %v, want the helper's \"got replaced\"", err)
		}

		uresp, err := p.Unprepare(ctx, claim)
		if err != nil {
			t.Fatal(err)
		}
		if e := uresp.Claims[string(claim.UID)].GetError(); e != "" {
			t.Errorf("unprepare: %s", e)
		}
		plugin.mu.Lock()
		defer plugin.mu.Unlock()
		if len(plugin.prepared) != 1 || plugin.prepared[0] != claim.UID || len(plugin.unprepared) != 1 || plugin.unprepared[0] != claim.UID {
			t.Errorf("driver prepared %v and unprepared %v, want %s once each", plugin.prepared, plugin.unprepared, claim.UID)
		}
	})

	t.Run("newest registration wins", func(t *testing.T) {
		registry, data := dirs(t)
		otherData := filepath.Join(filepath.Dir(data), "other.liken.sh")
		if err := os.MkdirAll(otherData, 0o755); err != nil {
			t.Fatal(err)
		}
		// Two instances of the driver during a rolling update, the newer
		// one last in name order so that only age can pick it, then
		// another driver's socket, newer than both.
		old := startHelper(t, ctx, c, &fixedPlugin{t: t}, n.UID, kubeletplugin.DriverName(driver),
			kubeletplugin.RegistrarDirectoryPath(registry), kubeletplugin.PluginDataDirectoryPath(data),
			kubeletplugin.RollingUpdate("pod-a"))
		time.Sleep(20 * time.Millisecond)
		startHelper(t, ctx, c, &fixedPlugin{t: t}, n.UID, kubeletplugin.DriverName(driver),
			kubeletplugin.RegistrarDirectoryPath(registry), kubeletplugin.PluginDataDirectoryPath(data),
			kubeletplugin.RollingUpdate("pod-b"))
		time.Sleep(20 * time.Millisecond)
		startHelper(t, ctx, c, &fixedPlugin{t: t}, n.UID, kubeletplugin.DriverName("other.liken.sh"),
			kubeletplugin.RegistrarDirectoryPath(registry), kubeletplugin.PluginDataDirectoryPath(otherData))

		k := kubelet.New(c.Client(), registry)
		defer k.Close()
		p, err := k.Discover(ctx, driver)
		if err != nil {
			t.Fatal(err)
		}
		if p.Endpoint() != filepath.Join(data, "dra-pod-b.sock") {
			t.Errorf("discovered %s, want the new pod's socket", p.Endpoint())
		}
		if st := old.RegistrationStatus(); st != nil {
			t.Errorf("old instance was told %v, want nothing", st)
		}
	})

	t.Run("no plugin", func(t *testing.T) {
		registry, _ := dirs(t)
		short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		if _, err := kubelet.New(c.Client(), registry).Discover(short, driver); err == nil {
			t.Error("Discover found a plugin in an empty directory")
		}
	})
}

// allocate has the real scheduler allocate the driver's device to a claim
// used by a pod on the node, as happens before a kubelet prepares a claim.
func allocate(t *testing.T, ctx context.Context, c *harness.Cluster) *resourceapi.ResourceClaim {
	t.Helper()
	if err := c.ApplyDeviceClass(ctx, &resourceapi.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: "test"},
		Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{
			CEL: &resourceapi.CELDeviceSelector{Expression: `device.driver == "` + driver + `"`},
		}}},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.WaitForServiceAccount(ctx, "default", "default"); err != nil {
		t.Fatal(err)
	}
	claim := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "dev", Namespace: "default"},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
			Name: "dev", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "test"},
		}}}},
	}
	if _, err := c.Client().ResourceV1().ResourceClaims("default").Create(ctx, claim, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	name := "dev"
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "user"},
		Spec: corev1.PodSpec{
			ResourceClaims: []corev1.PodResourceClaim{{Name: "dev", ResourceClaimName: &name}},
			Containers: []corev1.Container{{Name: "main", Image: "registry.invalid/none",
				Resources: corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: "dev"}}}}},
		},
	}
	if _, err := c.Client().CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	allocated, err := c.WaitForClaimAllocated(ctx, "default", "dev")
	if err != nil {
		t.Fatal(err)
	}
	return allocated
}
