// SPDX-License-Identifier: Apache-2.0

package dra

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2"
	drapbv1 "k8s.io/kubelet/pkg/apis/dra/v1"
)

// BenchmarkPrepareGRPC measures one claim's NodePrepareResources through the
// driver's real gRPC socket: claim lookup, config decoding, two checkpoint
// writes and the CDI spec write, each with its fsync. The target is a p99
// under 20 ms; it reports p50 and p99 in milliseconds.
func BenchmarkPrepareGRPC(b *testing.B) {
	klog.SetLogger(klog.Background().V(10)) // keep per-call logging out of the figure
	ctx := context.Background()
	dir := b.TempDir()
	client := fake.NewClientset()
	prepare := func(ctx context.Context, req DeviceRequest[testParams]) (ContainerEdits, error) {
		return ContainerEdits{Env: []string{"PIPEWIRE_NODE=" + req.Result.Device}}, nil
	}
	d, err := Start(ctx, Options{
		DriverName: testDriver, NodeName: "node-1", KubeClient: client, CDIClass: "dev",
		RegistrarDir: filepath.Join(dir, "registry"), PluginDir: filepath.Join(dir, "plugin"), CDIDir: filepath.Join(dir, "cdi"),
	}, prepare)
	if err != nil {
		b.Fatal(err)
	}
	defer d.Stop()
	conn, err := grpc.NewClient("unix://"+filepath.Join(dir, "plugin", "dra.sock"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	kubelet := drapbv1.NewDRAPluginClient(conn)

	var samples []time.Duration
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		uid := types.UID(fmt.Sprintf("uid-%d", i))
		c := claim(string(uid), fmt.Sprintf("c-%d", i), []resourceapi.DeviceRequestAllocationResult{alloc("r", testDriver, fmt.Sprintf("dev-%d", i))})
		if _, err := client.ResourceV1().ResourceClaims("default").Create(ctx, c, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		ref := &drapbv1.Claim{Namespace: "default", Name: c.Name, Uid: string(uid)}
		b.StartTimer()
		start := time.Now()
		resp, err := kubelet.NodePrepareResources(ctx, &drapbv1.NodePrepareResourcesRequest{Claims: []*drapbv1.Claim{ref}})
		samples = append(samples, time.Since(start))
		b.StopTimer()
		if err != nil || resp.Claims[string(uid)].Error != "" {
			b.Fatalf("prepare: %v %v", err, resp)
		}
		if _, err := kubelet.NodeUnprepareResources(ctx, &drapbv1.NodeUnprepareResourcesRequest{Claims: []*drapbv1.Claim{ref}}); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.StopTimer()
	slices.Sort(samples)
	pct := func(p float64) float64 {
		return float64(samples[min(len(samples)-1, int(p*float64(len(samples))))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
}

// BenchmarkSliceWritesEventStorm sends 1,000 device-set changes over 10 s
// (one every 10 ms, never a quiet gap) through the default settle window and
// counts slice writes. The bound is one write per settle window: one per
// SettleCap during the storm plus the final settled state.
func BenchmarkSliceWritesEventStorm(b *testing.B) {
	for range b.N {
		p, rec := startPublisher(b, DefaultSettleQuiet, DefaultSettleCap)
		start := time.Now()
		for i := range 1000 {
			p.set(devicesN(8, fmt.Sprint(i)))
			time.Sleep(time.Until(start.Add(time.Duration(i+1) * 10 * time.Millisecond)))
		}
		storm := time.Since(start)
		time.Sleep(DefaultSettleQuiet + 500*time.Millisecond)
		writes := rec.count()
		bound := int(storm/DefaultSettleCap) + 1
		b.ReportMetric(float64(writes), "writes")
		b.ReportMetric(float64(bound), "bound")
		if writes > bound {
			b.Fatalf("%d writes for a %v storm, bound %d", writes, storm, bound)
		}
	}
}
