// SPDX-License-Identifier: Apache-2.0

package pairing

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/liken-sh/operators/test/poll"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2/ktesting"

	"github.com/prometheus/client_golang/prometheus"

	btv1 "github.com/liken-sh/operators/api/bluetooth/v1alpha1"
	"github.com/liken-sh/operators/internal/bdaddr"
	"github.com/liken-sh/operators/internal/bluez"
	"github.com/liken-sh/operators/internal/dbusd"
	"github.com/liken-sh/operators/internal/dra"
	"github.com/liken-sh/operators/test/bluezsim"
	"github.com/liken-sh/operators/test/e2e/harness"
)

// One control plane with the CRDs (and the controller manager, whose
// garbage collector takes a bond Secret with its Peripheral) serves the
// package; tests keep apart by adapter address and namespace.
var shared = harness.Shared{
	Options: harness.Options{WithoutScheduler: true},
	Setup: func(ctx context.Context, c *harness.Cluster) error {
		return c.ApplyCRDs(ctx, "deploy/bluetooth/crds")
	},
}

func TestMain(m *testing.M) {
	code := m.Run()
	shared.Stop()
	os.Exit(code)
}

// clock is a settable Config.Now.
type clock struct {
	mu    sync.Mutex
	now   time.Time
	reads int // calls of Now: the operator reads the clock in every pass
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); c.reads++; return c.now }

// Reads is how many times Now has been called.
func (c *clock) Reads() int { c.mu.Lock(); defer c.mu.Unlock(); return c.reads }
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// rig is one operator's pairing side on a simulated bluetoothd: hci0 at
// adapter is the claimed radio, passes run on every wake, BlueZ signal
// and every 200 ms, and a slice write is taken to succeed at once.
type rig struct {
	t       *testing.T
	sim     *bluezsim.Sim
	adapter string // BlueZ spelling
	key     string // Adapter name
	ns      string
	dyn     dynamic.Interface
	kube    kubernetes.Interface
	clock   *clock

	// Set before start: the metrics registry, the sysfs root for
	// batteries, and the HID device path of each peer (BlueZ spelling).
	reg     *prometheus.Registry
	sysRoot string
	hidDev  map[string]string
	// bondsRoot is Config.BondsRoot: the simulator's storage tree, or
	// empty.
	bondsRoot string

	mu       sync.Mutex
	holders  map[string]dra.ClaimRef
	pageScan *bool
	// nodeAdapters is Input.NodeAdapters (nil: unknown).
	nodeAdapters []string
	last         Result
	stop         func()
}

func newRig(t *testing.T, adapter string) *rig {
	t.Helper()
	c := shared.Get(t)
	dyn, err := dynamic.NewForConfig(c.RESTConfig())
	must(t, err)
	addr := bdaddr.MustParse(adapter)
	r := &rig{t: t, adapter: adapter, key: addr.Key(), ns: "t-" + addr.Key()[12:14] + addr.Key()[15:17], dyn: dyn, kube: c.Client(),
		clock: &clock{now: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}, holders: map[string]dra.ClaimRef{}}
	_, err = r.kube.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: r.ns}}, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		must(t, err)
	}
	r.sim = bluezsim.New(t, bluezsim.Options{Policy: dbusd.PolicyOpen})
	_, err = r.sim.AddAdapter("hci0", adapter)
	must(t, err)
	return r
}

// start runs a controller until the test ends or stop is called.
// testKernelRelease is the kernel release the rig's controllers read,
// standing in for /proc/sys/kernel/osrelease.
const testKernelRelease = "6.1.0-liken-test"

func (r *rig) start() {
	r.t.Helper()
	_, ctx := ktesting.NewTestContext(r.t)
	ctx, cancel := context.WithCancel(ctx)
	client, err := bluez.Connect(ctx, bluez.Options{Address: r.sim.Address()})
	must(r.t, err)
	release := filepath.Join(r.t.TempDir(), "osrelease")
	must(r.t, os.WriteFile(release, []byte(testKernelRelease+"\n"), 0o644))
	cfg := Config{Node: "node-" + r.ns, Namespace: r.ns, Adapter: bdaddr.MustParse(r.adapter),
		Client: r.dyn, Kube: r.kube, Radio: client, Now: r.clock.Now, SysRoot: r.sysRoot, BondsRoot: r.bondsRoot,
		KernelReleasePath: release}
	if r.reg != nil {
		cfg.Registerer = r.reg
	}
	ctrl, err := New(cfg)
	must(r.t, err)
	ctrl.Start(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			objs, err := client.ManagedObjects(ctx)
			if err == nil {
				r.mu.Lock()
				holders := map[string]dra.ClaimRef{}
				for k, v := range r.holders {
					holders[k] = v
				}
				pageScan, nodeAdapters := r.pageScan, r.nodeAdapters
				r.mu.Unlock()
				res, _ := ctrl.Pass(ctx, Input{Objects: scopeTo(objs, r.adapter), Holders: holders,
					InputNodes: func(string) []string { return nil }, PageScan: pageScan,
					HIDDevPath: func(addr string) string { return r.hidDev[addr] }, NodeAdapters: nodeAdapters})
				if len(res.KeepOut) > 0 {
					ctrl.Retired(res.KeepOut)
				}
				r.mu.Lock()
				r.last = res
				r.mu.Unlock()
			}
			select {
			case <-ctx.Done():
				return
			case <-ctrl.Wake():
			case <-client.Changes():
			case <-tick.C:
			}
		}
	}()
	var once sync.Once
	r.stop = func() {
		once.Do(func() {
			cancel()
			<-done
			client.Close()
		})
	}
	r.t.Cleanup(r.stop)
}

// scopeTo keeps the adapter at address and its devices.
func scopeTo(objs bluez.Objects, address string) bluez.Objects {
	out := bluez.Objects{}
	var path string
	for _, a := range objs.Adapters {
		if a.Address == address {
			out.Adapters = append(out.Adapters, a)
			path = string(a.Path)
		}
	}
	for _, d := range objs.Devices {
		if string(d.Adapter) == path {
			out.Devices = append(out.Devices, d)
		}
	}
	return out
}

// eventually polls check for up to 30 s.
func eventually(t *testing.T, what string, check func() (bool, string)) {
	t.Helper()
	poll.WaitFor(t, context.Background(), what, 30*time.Second, check)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// create creates a PairingRequest in the rig's namespace.
func (r *rig) create(name string, spec btv1.PairingRequestSpec) {
	r.t.Helper()
	if spec.Adapter == "" {
		spec.Adapter = r.key
	}
	obj := &btv1.PairingRequest{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: r.ns}, Spec: spec}
	u, err := toUnstructured(obj, "PairingRequest")
	must(r.t, err)
	_, err = r.dyn.Resource(btv1.PairingRequestsResource).Namespace(r.ns).Create(r.t.Context(), u, metav1.CreateOptions{})
	must(r.t, err)
}

// patch merge-patches a request's spec.
func (r *rig) patch(name string, spec map[string]any) {
	r.t.Helper()
	data, _ := json.Marshal(map[string]any{"spec": spec})
	_, err := r.dyn.Resource(btv1.PairingRequestsResource).Namespace(r.ns).Patch(r.t.Context(), name, types.MergePatchType, data, metav1.PatchOptions{})
	must(r.t, err)
}

func (r *rig) request(name string) (*btv1.PairingRequest, error) {
	u, err := r.dyn.Resource(btv1.PairingRequestsResource).Namespace(r.ns).Get(r.t.Context(), name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	var out btv1.PairingRequest
	return &out, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &out)
}

// waitRequest waits until name's status satisfies ok.
func (r *rig) waitRequest(name, what string, ok func(*btv1.PairingRequest) bool) *btv1.PairingRequest {
	r.t.Helper()
	var got *btv1.PairingRequest
	eventually(r.t, fmt.Sprintf("request %s: %s", name, what), func() (bool, string) {
		var err error
		got, err = r.request(name)
		if err != nil {
			return false, err.Error()
		}
		data, _ := json.Marshal(got.Status)
		return ok(got), string(data)
	})
	return got
}

func getObj[T any](r *rig, gvr schema.GroupVersionResource, name string) (*T, error) {
	u, err := r.dyn.Resource(gvr).Get(r.t.Context(), name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	var out T
	return &out, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &out)
}

// peripheralCondition waits until the Peripheral named name has a
// condition of type typ that ok accepts, and returns it.
func (r *rig) peripheralCondition(t *testing.T, name, typ, what string, ok func(c metav1.Condition) bool) metav1.Condition {
	t.Helper()
	var c metav1.Condition
	eventually(t, what, func() (bool, string) {
		per, err := getObj[btv1.Peripheral](r, btv1.PeripheralsResource, name)
		if err != nil {
			return false, err.Error()
		}
		c = cond(per.Status.Conditions, typ)
		return ok(c), fmt.Sprintf("%+v", c)
	})
	return c
}
