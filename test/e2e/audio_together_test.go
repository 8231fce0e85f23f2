// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	oci "github.com/opencontainers/runtime-spec/specs-go"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/liken-sh/operators/internal/audio"
	"github.com/liken-sh/operators/internal/audio/gate"
	"github.com/liken-sh/operators/internal/pipewire"
	"github.com/liken-sh/operators/test/cditest"
	"github.com/liken-sh/operators/test/e2e/harness"
	"github.com/liken-sh/operators/test/e2e/kubelet"
	"github.com/liken-sh/operators/test/e2e/testdriver"
	"github.com/liken-sh/operators/test/poll"
	"github.com/liken-sh/operators/test/pwtest"
)

// The XPS outputs the tests of several outputs use: the Samsung's DP
// output and the laptop's analog output.
const (
	xpsDP   = node + "-pci-0000-00-1f-3-hdmi-3"
	xpsJack = node + "-pci-0000-00-1f-3-jack-out"
)

// outputRequest is a request named name for the output device.
func outputRequest(name, device string) resourceapi.DeviceRequest {
	return resourceapi.DeviceRequest{Name: name, Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "audio-sink",
		Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
			Expression: fmt.Sprintf(`device.attributes["audio.liken.sh"].sink == %q`, device)}}}}}
}

// createPodWithClaims creates the claims and a pod whose one container
// holds every one of them (the pod's claim names are the claims'
// names), and returns the claims once the scheduler allocated them.
func createPodWithClaims(t *testing.T, ctx context.Context, c *harness.Cluster, pod string, claims ...*resourceapi.ResourceClaim) []*resourceapi.ResourceClaim {
	t.Helper()
	client := c.Client()
	p := testdriver.PodWithClaim("default", pod, node, claims[0].Name)
	p.Spec.ResourceClaims, p.Spec.Containers[0].Resources.Claims = nil, nil
	for _, claim := range claims {
		_, err := client.ResourceV1().ResourceClaims(claim.Namespace).Create(ctx, claim, metav1.CreateOptions{})
		must(t, err)
		name := claim.Name
		p.Spec.ResourceClaims = append(p.Spec.ResourceClaims, corev1.PodResourceClaim{Name: name, ResourceClaimName: &name})
		p.Spec.Containers[0].Resources.Claims = append(p.Spec.Containers[0].Resources.Claims, corev1.ResourceClaim{Name: name})
	}
	_, err := client.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{})
	must(t, err)
	_, err = c.WaitForPodScheduled(ctx, "default", pod)
	must(t, err)
	var out []*resourceapi.ResourceClaim
	for _, claim := range claims {
		allocated, err := c.WaitForClaimAllocated(ctx, claim.Namespace, claim.Name)
		must(t, err)
		out = append(out, allocated)
	}
	return out
}

// injected is the container a runtime makes from the CDI devices of a
// prepared claim (cditest.Inject).
func injected(t *testing.T, dir string, devices []string) *oci.Spec {
	t.Helper()
	spec, err := cditest.Inject(dir, devices)
	must(t, err)
	return spec
}

// Two audio claims in one container fail to prepare, each naming the
// other, and leave no CDI spec: the runtime would keep one claim's
// PIPEWIRE_REMOTE and PIPEWIRE_NODE of two. The operator reads the pod
// with its own RBAC. One claim with a request per output prepares, and
// the container the CDI library makes of its two devices has one
// PIPEWIRE_REMOTE, one PIPEWIRE_NODE, the claim's socket mounted at a
// path of the claim's own, and a variable per request naming that
// request's output.
func TestAudioTwoClaimsOneContainer(t *testing.T) {
	a := startAudioNode(t, audioNodeOptions{AsOperator: true})
	ctx, cluster, client, draOpts := a.ctx, a.cluster, a.client, a.dra
	nodeOf := dpAndJackPublished(t, a)
	kl := kubelet.New(client, draOpts.RegistrarDir)
	t.Cleanup(func() { kl.Close() })
	plugin, err := kl.Discover(ctx, audio.DriverName)
	must(t, err)
	claimOf := func(name string, reqs ...resourceapi.DeviceRequest) *resourceapi.ResourceClaim {
		return &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
			Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: reqs}}}
	}

	two := createPodWithClaims(t, ctx, cluster, "two-claims",
		claimOf("tv", outputRequest("tv", xpsDP)), claimOf("surround", outputRequest("surround", xpsJack)))
	for i, c := range two {
		other := two[1-i].Name
		resp, err := plugin.Prepare(ctx, c)
		must(t, err)
		msg := resp.Claims[string(c.UID)].Error
		if !strings.Contains(msg, "container player of pod default/two-claims holds two audio claims") || !strings.Contains(msg, other) || !strings.Contains(msg, "one request each") {
			t.Errorf("prepare %s beside %s: error %q, want one naming both claims and what to do", c.Name, other, msg)
		} else {
			t.Logf("prepare %s: %s", c.Name, msg)
		}
		if _, err := os.Stat(filepath.Join(draOpts.CDIDir, audio.DriverName+"-"+string(c.UID)+".json")); !os.IsNotExist(err) {
			t.Errorf("claim %s has a CDI spec after its prepare failed (%v)", c.Name, err)
		}
	}

	one := createPodWithClaims(t, ctx, cluster, "one-claim",
		claimOf("home-theatre", outputRequest("tv", xpsDP), outputRequest("surround", xpsJack)))[0]
	resp, err := plugin.Prepare(ctx, one)
	must(t, err)
	res := resp.Claims[string(one.UID)]
	if res.Error != "" || len(res.Devices) != 2 {
		t.Fatalf("prepare %s: error %q, %d devices", one.Name, res.Error, len(res.Devices))
	}
	var ids []string
	for _, d := range res.Devices {
		ids = append(ids, d.CdiDeviceIds...)
	}
	spec := injected(t, draOpts.CDIDir, ids)
	uid := string(one.UID)
	for key, want := range map[string]string{
		"PIPEWIRE_REMOTE":                filepath.Join(audio.ContainerDir(uid), gate.SocketName),
		audio.EnvNodePrefix + "TV":       nodeOf[xpsDP],
		audio.EnvNodePrefix + "SURROUND": nodeOf[xpsJack],
	} {
		if got, n := cditest.Env(spec.Process.Env, key); got != want || n != 1 {
			t.Errorf("%s = %q, set %d times; want %q once", key, got, n, want)
		}
	}
	if _, n := cditest.Env(spec.Process.Env, "PIPEWIRE_NODE"); n != 1 {
		t.Errorf("PIPEWIRE_NODE set %d times in %v", n, spec.Process.Env)
	}
	if len(spec.Mounts) != 1 || spec.Mounts[0].Destination != audio.ContainerDir(uid) || spec.Mounts[0].Source != gate.SocketDir(a.pw.RuntimeDir, uid) {
		t.Errorf("mounts %+v, want the claim's socket directory at %s alone", spec.Mounts, audio.ContainerDir(uid))
	}
	t.Logf("the container of claim %s: env %v", one.Name, slices.DeleteFunc(slices.Clone(spec.Process.Env), func(e string) bool { return !strings.Contains(e, "PIPEWIRE") && !strings.HasPrefix(e, "LIKEN") }))
}

// A claim with a request per output, the surround pair's taking the rear
// channels, prepares into a combined sink that PIPEWIRE_NODE names. One
// four-channel stream played to it through the claim's socket sounds on
// both outputs: the TV (DP) has the front tone alone and the analog
// output the rear tone alone. The analog output states 40 ms more delay
// (its ALSA node's latency offset, as an HDMI receiver's ELD audio sync
// delay or a Bluetooth speaker's transport makes one): one recorder
// linked to both outputs' monitors finds the tone leaving the analog
// output's monitor that much earlier, so after each output's stated
// delay the two sound within 5 ms. Each per-request variable reaches its
// own output. Unprepare ends the combined sink.
func TestAudioCombinedSink(t *testing.T) {
	a := startAudioNode(t, audioNodeOptions{})
	ctx, cluster, client, pw, draOpts := a.ctx, a.cluster, a.client, a.pw, a.dra
	nodeOf := dpAndJackPublished(t, a)
	// The analog output states a delay of 40 ms.
	const stated = 40 * time.Millisecond
	must(t, pw.SetLatencyOffset(ctx, nodeOf[xpsJack], stated))

	kl := kubelet.New(client, draOpts.RegistrarDir)
	t.Cleanup(func() { kl.Close() })
	plugin, err := kl.Discover(ctx, audio.DriverName)
	must(t, err)
	claim := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "tv-and-surround"},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{
			Requests: []resourceapi.DeviceRequest{outputRequest("tv", xpsDP), outputRequest("surround", xpsJack)},
			Config: []resourceapi.DeviceClaimConfiguration{{Requests: []string{"surround"}, DeviceConfiguration: resourceapi.DeviceConfiguration{
				Opaque: &resourceapi.OpaqueDeviceConfiguration{Driver: audio.DriverName, Parameters: runtime.RawExtension{Raw: []byte(`{"position":"rear"}`)}}}}},
		}}}
	claim = createPodWithClaims(t, ctx, cluster, "home-theatre", claim)[0]
	resp, err := plugin.Prepare(ctx, claim)
	must(t, err)
	res := resp.Claims[string(claim.UID)]
	if res.Error != "" || len(res.Devices) != 2 {
		t.Fatalf("prepare: error %q, %d devices", res.Error, len(res.Devices))
	}
	var ids []string
	for _, d := range res.Devices {
		ids = append(ids, d.CdiDeviceIds...)
	}
	env := injected(t, draOpts.CDIDir, ids).Process.Env
	uid := string(claim.UID)
	combined, _ := cditest.Env(env, "PIPEWIRE_NODE")
	if combined != gate.CombinedNodeName(uid) {
		t.Fatalf("PIPEWIRE_NODE = %q, want the combined sink %s", combined, gate.CombinedNodeName(uid))
	}
	tv, _ := cditest.Env(env, audio.EnvNodePrefix+"TV")
	surround, _ := cditest.Env(env, audio.EnvNodePrefix+"SURROUND")
	if tv != nodeOf[xpsDP] || surround != nodeOf[xpsJack] {
		t.Fatalf("per-request variables: TV %q, SURROUND %q", tv, surround)
	}

	t.Cleanup(func() {
		if t.Failed() {
			logs, _ := filepath.Glob(filepath.Join(pw.RuntimeDir, gate.CombineDir, "*"))
			for _, l := range logs {
				b, _ := os.ReadFile(l)
				t.Logf("--- %s\n%s", l, b)
			}
			claims, _ := gate.Claims(pw.RuntimeDir)
			t.Logf("claim files: %+v", claims)
		}
	})
	// Through the claim's socket, the combined sink is there to play to.
	poll.Until(t, "the combined sink seen through the claim's socket", 60*time.Second, func() bool {
		dump := pw.Command(ctx, "pw-dump", "-N")
		dump.Env = append(dump.Env, "PIPEWIRE_REMOTE="+gate.SocketPath(pw.RuntimeDir, uid))
		out, err := dump.Output()
		return err == nil && strings.Contains(string(out), combined)
	})

	// One recorder linked to both outputs' monitors: the DP's front left
	// on its channel 0, the analog's first channel on its channel 1.
	const rate = 48000
	rec, err := pw.RecordMonitors(ctx, "joint-recorder", rate, nodeOf[xpsDP], nodeOf[xpsJack])
	must(t, err)
	t.Cleanup(func() { _, _ = rec.Stop() })

	// One stream to the combined sink: half a second of silence, then
	// 523 Hz at the front and 1319 Hz at the rear.
	const frontHz, rearHz = 523.0, 1319.0
	player := pw.Command(ctx, "pw-play", "--raw", "--format", "s16", "--rate", strconv.Itoa(rate), "--channels", "4", "--channel-map", pwtest.FrontRearMap, "-")
	player.Env = append(player.Env, "PIPEWIRE_REMOTE="+gate.SocketPath(pw.RuntimeDir, uid), "PIPEWIRE_NODE="+combined)
	player.Stdin = bytes.NewReader(pwtest.FrontRear(frontHz, rearHz, 0.3, rate, 500*time.Millisecond, 2*time.Second))
	out, err := player.CombinedOutput()
	if err != nil {
		t.Fatalf("pw-play to the combined sink: %v: %s", err, out)
	}
	poll.Until(t, "a second of the tone recorded after the player", 30*time.Second, func() bool { return rec.Recorded() > 4*rate*2*2 })
	data, err := rec.Stop()
	must(t, err)
	dp, jack := pwtest.Samples(data, 2, 0), pwtest.Samples(data, 2, 1)
	tDP, tJack := pwtest.Onset(dp, 0.05), pwtest.Onset(jack, 0.05)
	if tDP < 0 || tJack < 0 {
		t.Fatalf("the tone reached the DP output at frame %d, the analog output at %d (-1: never)", tDP, tJack)
	}
	win := func(x []float64, at int) []float64 { return x[at+rate/10 : min(len(x), at+rate/10+rate/2)] }
	if f, r := pwtest.PeakTone(win(dp, tDP), rate, frontHz, rate/10), pwtest.PeakTone(win(dp, tDP), rate, rearHz, rate/10); f < 0.2 || r > 0.02 {
		t.Errorf("the DP output (front) has the front tone at %.3f and the rear at %.3f, want about 0.3 and none", f, r)
	}
	if f, r := pwtest.PeakTone(win(jack, tJack), rate, frontHz, rate/10), pwtest.PeakTone(win(jack, tJack), rate, rearHz, rate/10); r < 0.2 || f > 0.02 {
		t.Errorf("the analog output (rear) has the rear tone at %.3f and the front at %.3f, want about 0.3 and none", r, f)
	}
	apart := time.Duration(tDP-tJack)*time.Second/rate - stated
	t.Logf("FIGURE combined sink alignment: the tone left the DP monitor %s after the analog's, whose stated delay is %s more: %s apart as heard (target ≤ 5ms)",
		time.Duration(tDP-tJack)*time.Second/rate, stated, apart)
	if apart < -5*time.Millisecond || apart > 5*time.Millisecond {
		t.Errorf("after each output's stated delay the outputs sound %s apart, want within 5 ms", apart)
	}

	// Unprepare ends the combined sink.
	if _, err := plugin.Unprepare(ctx, claim); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the combined sink gone after unprepare", 60*time.Second, func() bool {
		g, err := pw.Remote().Dump(ctx)
		return err == nil && !slices.ContainsFunc(g.Nodes, func(n pipewire.Node) bool { return n.Name == combined })
	})
}

// dpAndJackPublished waits until the audio driver publishes the DP output
// and the jack output untainted, and returns each output's node.name by
// its name.
func dpAndJackPublished(t *testing.T, a *audioNode) map[string]string {
	t.Helper()
	nodeOf := map[string]string{}
	for _, o := range a.outputs {
		nodeOf[o.Output] = o.Name
	}
	waitForDriverSlice(t, a.ctx, a.cluster, audio.DriverName, func(s *resourceapi.ResourceSlice) bool {
		n := 0
		for _, d := range s.Spec.Devices {
			if (d.Name == xpsDP || d.Name == xpsJack) && !deviceTainted(s, d.Name) {
				n++
			}
		}
		return n == 2
	})
	return nodeOf
}
