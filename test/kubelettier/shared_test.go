// SPDX-License-Identifier: Apache-2.0

//go:build kubelettier

package kubelettier

import (
	"context"
	"encoding/binary"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/liken-sh/operators/test/pwtest"
)

// sharedTone is the second consumer's tone: far from consumerTone and
// from its harmonics, so each is measured apart.
const sharedTone = 660

// sharedSink: a second claim on the monitor's sink, asking nothing
// special, is allocated the same device by the real scheduler as a
// second share (the first consumer keeps playing); containerd gives the
// second pod its own claim socket, and a capture of the sink through
// audio-api holds both pods' tones. The second pod and claim are gone
// afterwards, so the later steps find the tier as before.
func sharedSink(t *testing.T, ctx context.Context) {
	client := cluster.Client().ResourceV1().ResourceClaims("default")
	first, err := client.Get(ctx, "speaker", metav1.GetOptions{})
	must(t, err)
	pod := consumerPod("speaker-b", "tone", "speaker-b", false)
	pod.Spec.Containers[0].Args = []string{"tone", strconv.Itoa(sharedTone)}
	r, second, _, took := startConsumer(t, ctx, claimFor("speaker-b", "audio-sink", monitorSink), pod)
	t.Logf("FIGURE second share of one sink: pod with a claim created → running in %s", took.Round(time.Millisecond))
	a, b := first.Status.Allocation.Devices.Results[0], second.Status.Allocation.Devices.Results[0]
	if a.Device != b.Device || a.Pool != b.Pool {
		t.Fatalf("the second claim got %s/%s, want the first's %s/%s", b.Pool, b.Device, a.Pool, a.Device)
	}
	if a.ShareID == nil || b.ShareID == nil || *a.ShareID == *b.ShareID {
		t.Errorf("the two claims' share IDs: %v and %v, want two different ones", a.ShareID, b.ShareID)
	}
	if r.Env["PIPEWIRE_NODE"] != speakerNode {
		t.Errorf("the second consumer's PIPEWIRE_NODE is %q, want the first's %q", r.Env["PIPEWIRE_NODE"], speakerNode)
	}
	sink := sinkOfNode(t, ctx, speakerNode)
	alice, err := cluster.UserKubeconfig("alice")
	must(t, err)
	var levels [2]float64
	poll(t, "both tones in a capture of "+sink, 60*time.Second, func() (bool, string) {
		wav, stderr, err := capturePlugin(t, ctx, alice, sink, "-t", "0,1")
		if err != nil || len(wav) < 44 {
			return false, stderr
		}
		channels, rate := int(binary.LittleEndian.Uint16(wav[22:])), int(binary.LittleEndian.Uint32(wav[24:]))
		x := pwtest.Samples(wav[44:], max(channels, 1), 0)
		x = x[len(x)/4:]
		levels = [2]float64{
			pwtest.Goertzel(x, float64(rate), consumerTone),
			pwtest.Goertzel(x, float64(rate), sharedTone),
		}
		// Each plays at 8000/32768 of full scale, about 0.24.
		return levels[0] > 0.1 && levels[1] > 0.1, "levels at 440 and 660 Hz: " + strconv.FormatFloat(levels[0], 'f', 3, 64) + ", " + strconv.FormatFloat(levels[1], 'f', 3, 64)
	})
	t.Logf("a capture of %s holds both claims' tones: %d Hz at %.3f, %d Hz at %.3f", sink, consumerTone, levels[0], sharedTone, levels[1])

	deletePod(t, ctx, "default", "speaker-b")
	must(t, client.Delete(ctx, "speaker-b", metav1.DeleteOptions{}))
	waitLinked(t, ctx, speakerNode, 30*time.Second)
}
