// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/liken-sh/operators/internal/audio"
	"github.com/liken-sh/operators/internal/pipewire"
	"github.com/liken-sh/operators/test/e2e/harness"
	"github.com/liken-sh/operators/test/e2e/kubelet"
	"github.com/liken-sh/operators/test/pwtest"
)

// receiverELD is the recorded Samsung U28E590's ELD with two descriptors
// more, as a receiver's lists them: AC-3 (6 channels, 32 to 48 kHz,
// 640 kb/s) and E-AC-3 (8 channels, 44.1 and 48 kHz).
func receiverELD(t *testing.T) []byte {
	t.Helper()
	root, err := harness.ModuleRoot()
	must(t, err)
	b, err := os.ReadFile(filepath.Join(root, "testdata/fixtures/eld/samsung-u28e590-dp-eld-ctl.bin"))
	must(t, err)
	mnl, sads := int(b[4]&0x1f), int(b[5]>>4)
	end := 20 + mnl + 3*sads
	out := append(slices.Clone(b[:end]), 0x15, 0x07, 0x50, 0x57, 0x06, 0x00)
	out[5] = byte(sads+2)<<4 | b[5]&0x0f
	for (len(out)-4)%4 != 0 {
		out = append(out, 0)
	}
	out[2] = byte((len(out) - 4) / 4)
	return out
}

// passthroughClaim asks for the output that takes AC-3, with streams of
// its capacity (0: the default share) and codec as its codec parameter.
func passthroughClaim(name, codec string, streams int) *resourceapi.ResourceClaim {
	req := &resourceapi.ExactDeviceRequest{DeviceClassName: "audio-sink",
		Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
			Expression: `has(device.attributes["audio.liken.sh"].codecs) && "ac3" in device.attributes["audio.liken.sh"].codecs.split(" ")`}}}}
	if streams > 0 {
		req.Capacity = &resourceapi.CapacityRequirements{Requests: map[resourceapi.QualifiedName]resource.Quantity{
			audio.CapacityStreams: *resource.NewQuantity(int64(streams), resource.DecimalSI)}}
	}
	return &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{
			Requests: []resourceapi.DeviceRequest{{Name: "tv", Exactly: req}},
			Config: []resourceapi.DeviceClaimConfiguration{{Requests: []string{"tv"}, DeviceConfiguration: resourceapi.DeviceConfiguration{
				Opaque: &resourceapi.OpaqueDeviceConfiguration{Driver: audio.DriverName, Parameters: runtime.RawExtension{Raw: []byte(`{"codec":"` + codec + `"}`)}}}}},
		}},
	}
}

// TestAudioPassthrough: the DP output's monitor turns into a receiver
// whose ELD lists AC-3 and E-AC-3. The output publishes them as its
// codecs, and a claim's CEL selects it by one. A claim asking for a
// format the ELD does not list, or for passthrough on a share, fails its
// prepare saying why; one holding the output whole gets its node to pass
// AC-3 through (real PipeWire, its Props and EnumFormat), until it is
// unprepared. The output's node is on an ALSA PCM named like ALSA's hdmi
// ones (pwtest.IEC958FileOutput), since PipeWire offers IEC 958 on no
// other; hw:<card>,<pcm> is not one (see docs/home-theatre.md).
func TestAudioPassthrough(t *testing.T) {
	dp := node + "-pci-0000-00-1f-3-hdmi-3"
	a := startAudioNode(t, audioNodeOptions{
		ALSAConfig: pwtest.IEC958FileConfig(filepath.Join(t.TempDir(), "alsa.raw")),
		Outputs: func(outputs []pipewire.Output) []pipewire.Output {
			for i, o := range outputs {
				if o.Output == dp {
					outputs[i].Path = pwtest.IEC958FileOutput(o.Card, o.Device, o.Name).Path
				}
			}
			return outputs
		},
	})
	ctx, cluster, client := a.ctx, a.cluster, a.client
	var nodeName string
	for _, o := range a.outputs {
		if o.Output == dp {
			nodeName = o.Name
		}
	}
	rec, err := a.cards.Recorded(0)
	must(t, err)
	must(t, rec.SetELD(7, receiverELD(t)))
	waitForDriverSlice(t, ctx, cluster, audio.DriverName, func(s *resourceapi.ResourceSlice) bool {
		for _, d := range s.Spec.Devices {
			if d.Name == dp {
				v := d.Attributes["codecs"].StringValue
				return v != nil && *v == "ac3 eac3" && len(d.Taints) == 0
			}
		}
		return false
	})
	kl := kubelet.New(client, a.dra.RegistrarDir)
	t.Cleanup(func() { kl.Close() })
	plugin, err := kl.Discover(ctx, audio.DriverName)
	must(t, err)
	codecsShown := func(want []string) pipewire.Node {
		t.Helper()
		var last pipewire.Node
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			g, err := a.pw.Remote().Dump(ctx)
			if err == nil {
				if n, ok := g.NodeByName(nodeName); ok {
					last = n
					if slices.Equal(slices.Sorted(slices.Values(n.IEC958Codecs)), want) &&
						slices.Equal(slices.Sorted(slices.Values(n.IEC958Offered)), want) {
						return n
					}
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("node %s: IEC 958 codecs %v, offered %v; want %v", nodeName, last.IEC958Codecs, last.IEC958Offered, want)
			}
		}
	}
	codecsShown([]string{"PCM"})

	// Refused, each with its reason: a format the ELD does not list, and
	// passthrough on the default share.
	for i, tc := range []struct {
		codec   string
		streams int
		want    []string
	}{
		{"dts", audio.MaxStreams, []string{`cannot pass codec "dts" through`, "its monitor's ELD lists ac3, eac3"}},
		{"ac3", 0, []string{"cannot be mixed", fmt.Sprintf("request all %d streams", audio.MaxStreams), "this one holds 4"}},
	} {
		bad := createWithPod(t, ctx, cluster, passthroughClaim(fmt.Sprintf("refused-%d", i), tc.codec, tc.streams), fmt.Sprintf("refused-%d", i))
		if got := bad.Status.Allocation.Devices.Results[0].Device; got != dp {
			t.Fatalf("the CEL for ac3 selected %s, want %s", got, dp)
		}
		resp, err := plugin.Prepare(ctx, bad)
		must(t, err)
		msg := resp.Claims[string(bad.UID)].GetError()
		if slices.ContainsFunc(tc.want, func(w string) bool { return !strings.Contains(msg, w) }) || len(msg) > 400 {
			t.Fatalf("claim %s: prepare error %q, want a short one saying %q", bad.Name, msg, tc.want)
		}
		t.Logf("claim %s refused: %s", bad.Name, msg)
		deleteRefused(t, ctx, client, bad.Name)
	}
	codecsShown([]string{"PCM"})

	// The whole output: prepare returns once the node passes AC-3.
	film := createWithPod(t, ctx, cluster, passthroughClaim("film", "ac3", audio.MaxStreams), "film")
	start := time.Now()
	prepareOK(t, ctx, plugin, film)
	t.Logf("passthrough claim prepared in %v", time.Since(start))
	n := codecsShown([]string{"AC3", "PCM"})
	if !strings.HasPrefix(n.Props[pipewire.PropALSAPath], "hdmi") {
		t.Fatalf("the node's ALSA path %q", n.Props[pipewire.PropALSAPath])
	}
	resp, err := plugin.Unprepare(ctx, film)
	must(t, err)
	if e := resp.Claims[string(film.UID)].GetError(); e != "" {
		t.Fatalf("unprepare: %s", e)
	}
	start = time.Now()
	codecsShown([]string{"PCM"})
	t.Logf("the node took PCM alone again %v after the unprepare", time.Since(start))
}
