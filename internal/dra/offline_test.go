// SPDX-License-Identifier: Apache-2.0

package dra

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/testing/protocmp"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"
	drapbv1 "k8s.io/kubelet/pkg/apis/dra/v1"
	cdispec "tags.cncf.io/container-device-interface/specs-go"
)

// TestPreparedClaimsAnswerWhileTheAPIServerIsDown: the kubelet repeats
// NodePrepareResources for claims it already prepared (after its own
// restart), and the driver answers them from its checkpoint although every
// API call fails, rebuilding a spec a reboot wiped; a claim it never
// prepared fails alone, and works once the API server answers again.
func TestPreparedClaimsAnswerWhileTheAPIServerIsDown(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	dir := t.TempDir()
	held := claim("held", "held", []resourceapi.DeviceRequestAllocationResult{alloc("r", testDriver, "one"), alloc("s/large", testDriver, "two")})
	fresh := claim("fresh", "fresh", []resourceapi.DeviceRequestAllocationResult{alloc("r", testDriver, "three")})
	client := fake.NewClientset(held, fresh)
	var down atomic.Bool
	client.PrependReactor("*", "*", func(k8stesting.Action) (bool, runtime.Object, error) {
		if down.Load() {
			return true, nil, errors.New("dial tcp 127.0.0.1:6443: connect: connection refused")
		}
		return false, nil, nil
	})
	prepare := func(_ context.Context, req DeviceRequest[testParams]) (ContainerEdits, error) {
		return ContainerEdits{DeviceNodes: []*cdispec.DeviceNode{{Path: "/dev/input/" + req.Result.Device}}}, nil
	}
	opts := Options{
		DriverName: testDriver, NodeName: "node-1", KubeClient: client, CDIClass: "dev",
		RegistrarDir: filepath.Join(dir, "registry"), PluginDir: filepath.Join(dir, "plugin"), CDIDir: filepath.Join(dir, "cdi"),
	}
	d, err := Start(ctx, opts, prepare)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Stop()
	conn, err := grpc.NewClient("unix://"+filepath.Join(dir, "plugin", "dra.sock"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	kubelet := drapbv1.NewDRAPluginClient(conn)
	ref := func(c *resourceapi.ResourceClaim) *drapbv1.Claim {
		return &drapbv1.Claim{Namespace: c.Namespace, Name: c.Name, Uid: string(c.UID)}
	}

	first, err := kubelet.NodePrepareResources(ctx, &drapbv1.NodePrepareResourcesRequest{Claims: []*drapbv1.Claim{ref(held)}})
	if err != nil || first.Claims["held"].Error != "" {
		t.Fatalf("prepare with the API server up: %v %v", err, first)
	}

	down.Store(true)
	spec := filepath.Join(opts.CDIDir, testDriver+"-held.json")
	if err := os.Remove(spec); err != nil { // a reboot wiped the tmpfs
		t.Fatal(err)
	}
	again, err := kubelet.NodePrepareResources(ctx, &drapbv1.NodePrepareResourcesRequest{Claims: []*drapbv1.Claim{ref(held), ref(fresh)}})
	if err != nil {
		t.Fatalf("repeated prepare with the API server down: %v", err)
	}
	if diff := cmp.Diff(first.Claims["held"], again.Claims["held"], protocmp.Transform()); diff != "" {
		t.Errorf("the prepared claim was answered differently with the API server down (-up +down):\n%s", diff)
	}
	if got := again.Claims["held"].Devices[1].RequestNames; !cmp.Equal(got, []string{"s"}) {
		t.Errorf("a subrequest's device answers requests %q, want the top-level name [s]", got)
	}
	if _, err := os.Stat(spec); err != nil {
		t.Errorf("the wiped spec was not rebuilt: %v", err)
	}
	if again.Claims["fresh"] == nil || again.Claims["fresh"].Error == "" {
		t.Errorf("a claim never prepared was answered %v with the API server down, want its own error", again.Claims["fresh"])
	}

	down.Store(false)
	late, err := kubelet.NodePrepareResources(ctx, &drapbv1.NodePrepareResourcesRequest{Claims: []*drapbv1.Claim{ref(fresh)}})
	if err != nil || late.Claims["fresh"].Error != "" {
		t.Fatalf("prepare once the API server is back: %v %v", err, late)
	}
}
