// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/liken-sh/operators/internal/audio"
	"github.com/liken-sh/operators/internal/procmem"
	"github.com/liken-sh/operators/test/e2e/harness"
	"github.com/liken-sh/operators/test/e2e/kubelet"
)

// sharesPerOutput is how many claims share each output in
// BenchmarkAudioOperatorSharedRSS: the default share (audio.DefaultStreams
// streams) fills an output's audio.MaxStreams in four.
const sharesPerOutput = audio.MaxStreams / audio.DefaultStreams

// BenchmarkAudioOperatorSharedRSS runs the audio image's operator as
// BenchmarkAudioOperatorIdleRSS does, then fills every shareable output
// it publishes, inputs (Sources) included: sharesPerOutput claims on each, allocated by the real
// scheduler (a pod each) and prepared over the kubelet plugin's gRPC API,
// so the operator keeps a gate socket, a claim file and a prepared record
// for every share. Once the last is prepared and the operator has given
// back what the burst of prepares touched (procmem.ReleaseAfterBursts,
// waited for up to two minutes), it reads the container's memory (the
// operator and its `pw-dump -m` child) every 500 ms for 5 s.
// It reports the largest figures in MiB beside the number of shares, and
// fails when the container passes deploy/audio/operator.yaml's 128 MiB
// limit or the operator does not exit 0 on SIGTERM. The target is the
// idle one, 40 MiB for the container: shares are files and sockets, not
// memory.
func BenchmarkAudioOperatorSharedRSS(b *testing.B) {
	ctx := context.Background()
	cluster, err := harness.Start(ctx, harness.Options{})
	must(b, err)
	b.Cleanup(cluster.Stop)
	must(b, cluster.AddLikenNode(ctx, node))
	must(b, cluster.ApplyDeviceClassesFile(ctx, "deploy/audio/deviceclasses.yaml"))
	_, err = cluster.WaitForServiceAccount(ctx, "default", "default")
	must(b, err)
	w := startAudioWorldOn(b, ctx, cluster)
	var most memory
	var children, container int64
	var shares, outputs int
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		op := w.startOperator(b)
		slice := waitForDriverSlice(b, ctx, cluster, audio.DriverName, w.published)
		kl := kubelet.New(cluster.Client(), filepath.Join(w.dir, "kubelet", "plugins_registry"))
		plugin, err := kl.Discover(ctx, audio.DriverName)
		must(b, err)
		var claims []*resourceapi.ResourceClaim
		outputs = 0
		for _, d := range slice.Spec.Devices {
			class, kind := "audio-sink", "sink"
			if d.Attributes["source"].StringValue != nil {
				class, kind = "audio-source", "source"
			}
			if d.AllowMultipleAllocations == nil || !*d.AllowMultipleAllocations || d.Attributes[resourceapi.QualifiedName(kind)].StringValue == nil {
				continue
			}
			outputs++
			for n := range sharesPerOutput {
				name := fmt.Sprintf("share-%d-%d-%d", i, outputs, n)
				c := createWithPod(b, ctx, cluster, shareClaim(name, class, kind, d.Name), name)
				prepareOK(b, ctx, plugin, c)
				claims = append(claims, c)
			}
		}
		if outputs == 0 {
			b.Fatalf("the slice holds no shareable output: %+v", slice.Spec.Devices)
		}
		shares = len(claims)
		// At rest again: the pages the burst of prepares touched are
		// given back once it is over (procmem.ReleaseAfterBursts).
		burst, err := memoryOf(op.Pid())
		must(b, err)
		deadline := time.Now().Add(2 * time.Minute)
		for {
			m, err := memoryOf(op.Pid())
			must(b, err)
			if m.File < burst.File-procmem.DefaultBurstGrowth/2 || time.Now().After(deadline) {
				b.Logf("%d shares prepared: RssFile %d MiB right after, %d MiB at rest", shares, burst.File>>20, m.File>>20)
				break
			}
			time.Sleep(time.Second)
		}
		b.StartTimer()
		m, kids, both := sampleAudioContainer(b, op)
		most, children, container = most.max(m), max(children, kids), max(container, both)
		b.StopTimer()
		kl.Close()
		if err := op.stop(); err != nil {
			b.Fatalf("operator on SIGTERM: %v\n%s", err, op.Log())
		}
	}
	if container > audioManifestMemoryLimit {
		b.Fatalf("RSS %d bytes with %d shares prepared, above deploy/audio/operator.yaml's limit of %d", container, shares, audioManifestMemoryLimit)
	}
	mib := func(n int64) float64 { return float64(n) / (1 << 20) }
	b.ReportMetric(float64(outputs), "outputs")
	b.ReportMetric(float64(shares), "shares")
	b.ReportMetric(mib(most.RSS), "rss-max-MiB")
	b.ReportMetric(mib(most.Anon), "anon-max-MiB")
	b.ReportMetric(mib(most.File), "file-max-MiB")
	b.ReportMetric(mib(children), "children-rss-max-MiB")
	b.ReportMetric(mib(container), "container-rss-max-MiB")
	b.ReportMetric(0, "ns/op") // the iteration time is the waits' sum, not a figure
}

// shareClaim is a claim in default for the default share of the audio
// device named device, of DeviceClass class, whose attribute kind ("sink"
// or "source") is its name, tolerating its taints (an output with no
// monitor still takes a share).
func shareClaim(name, class, kind, device string) *resourceapi.ResourceClaim {
	return &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
			Name: "output",
			Exactly: &resourceapi.ExactDeviceRequest{
				DeviceClassName: class,
				Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
					Expression: fmt.Sprintf("device.attributes[%q].%s == %q", audio.DriverName, kind, device)}}},
				Tolerations: []resourceapi.DeviceToleration{{Operator: resourceapi.DeviceTolerationOpExists}},
			},
		}}}},
	}
}
