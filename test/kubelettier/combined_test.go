// SPDX-License-Identifier: Apache-2.0

//go:build kubelettier

package kubelettier

import (
	"context"
	"encoding/binary"
	"fmt"
	"strconv"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/liken-sh/operators/internal/audio"
	"github.com/liken-sh/operators/internal/audio/gate"
	"github.com/liken-sh/operators/test/pwtest"
)

// combinedTone is the tone the two-output consumer plays: apart from the
// other consumers' tones and their harmonics.
const combinedTone = 550

// jackSink selects the laptop's analog output (the headphone jack),
// the "surround pair" beside the monitor.
const jackSink = `device.attributes["audio.liken.sh"].sink.endsWith("-jack-out")`

// twoOutputs: a claim with two requests, "tv" (the monitor's output) and
// "surround" (the analog jack, its channels taken as the rear pair), is
// allocated both by the real scheduler, and containerd gives one consumer
// container the claim's socket with PIPEWIRE_NODE naming the claim's
// combined sink and one LIKEN_AUDIO_NODE_<REQUEST> per request naming
// each output. The consumer plays one tone to PIPEWIRE_NODE, and a
// capture of each output through audio-api holds it (the tone is in all
// four channels, front and rear pairs). The pod and claim
// are gone afterwards.
func twoOutputs(t *testing.T, ctx context.Context) {
	request := func(name, cel string) resourceapi.DeviceRequest {
		return resourceapi.DeviceRequest{Name: name, Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "audio-sink",
			Selectors:   []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: cel}}},
			Tolerations: []resourceapi.DeviceToleration{{Operator: resourceapi.DeviceTolerationOpExists}}}}
	}
	claim := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "tv-and-surround", Namespace: "default"},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{
			Requests: []resourceapi.DeviceRequest{request("tv", monitorSink), request("surround", jackSink)},
			Config: []resourceapi.DeviceClaimConfiguration{{Requests: []string{"surround"}, DeviceConfiguration: resourceapi.DeviceConfiguration{
				Opaque: &resourceapi.OpaqueDeviceConfiguration{Driver: audio.DriverName, Parameters: runtime.RawExtension{Raw: []byte(`{"position":"rear"}`)}}}}},
		}},
	}
	pod := consumerPod("tv", "tone", "tv-and-surround", false)
	pod.Spec.Containers[0].Args = []string{"tone", strconv.Itoa(combinedTone), "4"}
	r, allocated, _, took := startConsumer(t, ctx, claim, pod)
	t.Logf("FIGURE two outputs in one claim: pod created → running in %s", took.Round(time.Millisecond))
	if n := len(allocated.Status.Allocation.Devices.Results); n != 2 {
		t.Fatalf("the claim was allocated %d devices, want 2: %+v", n, allocated.Status.Allocation.Devices.Results)
	}
	if want := gate.CombinedNodeName(string(allocated.UID)); r.Env["PIPEWIRE_NODE"] != want {
		t.Errorf("PIPEWIRE_NODE = %q, want the claim's combined sink %q", r.Env["PIPEWIRE_NODE"], want)
	}
	nodes := map[string]string{} // request: its output's node.name
	for _, req := range []string{"tv", "surround"} {
		v := audio.EnvNodePrefix + audio.EnvSuffix(req)
		if nodes[req] = r.Env[v]; nodes[req] == "" {
			t.Fatalf("no %s in the consumer's environment: %v", v, r.Env)
		}
	}
	if nodes["tv"] != speakerNode {
		t.Errorf("LIKEN_AUDIO_NODE_TV = %q, want the monitor's %q", nodes["tv"], speakerNode)
	}
	alice, err := cluster.UserKubeconfig("alice")
	must(t, err)
	for _, req := range []string{"tv", "surround"} {
		sink := sinkOfNode(t, ctx, nodes[req])
		var level float64
		poll(t, fmt.Sprintf("the %d Hz tone in a capture of %s (%s)", combinedTone, sink, req), 60*time.Second, func() (bool, string) {
			wav, stderr, err := capturePlugin(t, ctx, alice, sink, "-t", "0,1")
			if err != nil || len(wav) < 44 {
				return false, stderr
			}
			channels, rate := int(binary.LittleEndian.Uint16(wav[22:])), int(binary.LittleEndian.Uint32(wav[24:]))
			x := pwtest.Samples(wav[44:], max(channels, 1), 0)
			x = x[len(x)/4:]
			level = pwtest.Goertzel(x, float64(rate), combinedTone)
			return level > 0.05, "level " + strconv.FormatFloat(level, 'f', 3, 64)
		})
		t.Logf("a capture of %s (request %s) holds the combined sink's %d Hz tone at %.3f", sink, req, combinedTone, level)
	}

	deletePod(t, ctx, "default", "tv")
	must(t, cluster.Client().ResourceV1().ResourceClaims("default").Delete(ctx, "tv-and-surround", metav1.DeleteOptions{}))
	waitLinked(t, ctx, speakerNode, 30*time.Second)
}
