// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/liken-sh/operators/internal/audio"
	"github.com/liken-sh/operators/internal/audio/gate"
	"github.com/liken-sh/operators/internal/pipewire"
	"github.com/liken-sh/operators/test/capturetest"
	"github.com/liken-sh/operators/test/e2e/kubelet"
	"github.com/liken-sh/operators/test/poll"
	"github.com/liken-sh/operators/test/pwtest"
)

// claimTool runs a PipeWire tool as the consumer of a prepared claim
// would: through the claim's socket only, its stderr kept. exited is
// closed when it ends.
func claimTool(t *testing.T, ctx context.Context, pw *pwtest.Daemons, uid string, stdin io.Reader, args ...string) (cmd *exec.Cmd, stderr *pwtest.LockedBuffer, exited <-chan struct{}) {
	t.Helper()
	cmd = pw.Command(ctx, args[0], args[1:]...)
	cmd.Env = append(cmd.Env, "PIPEWIRE_REMOTE="+gate.SocketPath(pw.RuntimeDir, uid))
	stderr = &pwtest.LockedBuffer{}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, io.Discard, stderr
	must(t, cmd.Start())
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-done })
	return cmd, stderr, done
}

// claimStreams reads the graph once and returns, by claim UID, the node
// id of a stream that a client of the claim's socket made and that is
// linked, and the graph it read. A claim with several such streams has
// one of them.
func claimStreams(t *testing.T, ctx context.Context, pw *pwtest.Daemons) (map[string]uint32, *pipewire.Graph) {
	t.Helper()
	objs, err := pw.RawDump(ctx)
	must(t, err)
	clients := map[string]string{} // client id: claim UID
	for _, o := range objs {
		if access, ok := o.InfoProps()["pipewire.access"].(string); ok && o.Type == "PipeWire:Interface:Client" {
			if uid, ok := strings.CutPrefix(access, gate.AccessPrefix); ok {
				clients[fmt.Sprint(o.ID)] = uid
			}
		}
	}
	g, err := pw.Remote().Dump(ctx)
	must(t, err)
	streams := map[string]uint32{}
	for _, n := range g.Nodes {
		if uid, ok := clients[n.Props["client.id"]]; ok && len(g.LinksOf(n.ID)) > 0 {
			streams[uid] = n.ID
		}
	}
	return streams, g
}

// checkClaimView runs pw-dump through claim uid's socket, as the claim's
// consumer would, and fails the test when it does not show the claimed
// node named nodeName, or shows anything but that node and the claim's
// own stream own: another node (other, another claim's stream, above
// all), a client or a link. (A client of the socket sees the claimed
// nodes and what it made itself, so pw-dump shows the claimed node
// alone.)
func checkClaimView(t *testing.T, ctx context.Context, pw *pwtest.Daemons, whose, uid string, own uint32, nodeName string, other uint32) {
	t.Helper()
	dump := pw.Command(ctx, "pw-dump", "-N")
	dump.Env = append(dump.Env, "PIPEWIRE_REMOTE="+gate.SocketPath(pw.RuntimeDir, uid))
	out, err := dump.Output()
	must(t, err)
	var seen []pwtest.RawObject
	must(t, json.Unmarshal(out, &seen))
	claimed := false
	for _, o := range seen {
		if o.ID == other || o.Type == "PipeWire:Interface:Client" || o.Type == "PipeWire:Interface:Link" ||
			o.Type == "PipeWire:Interface:Node" && o.ID != own && o.InfoProps()["node.name"] != nodeName {
			t.Errorf("%s socket shows %d %s", whose, o.ID, o.Type)
		}
		claimed = claimed || o.Type == "PipeWire:Interface:Node" && o.InfoProps()["node.name"] == nodeName
	}
	if !claimed {
		t.Errorf("%s socket does not show the claimed node %s", whose, nodeName)
	}
}

// Two claims share one output through the real scheduler (DRA consumable
// capacity) and each is prepared into its own socket. Each plays a tone
// of its own, and a capture of the sink through audio-api holds both.
// Through the first claim's socket there is no trace of the second's
// stream, recording the sink's monitor is refused, and a stream past its
// share (one stream, asked in its claim) is refused with the reason on
// the player's stderr. A claim for all of the output's streams waits
// while the shares are held, and a share waits while it holds them.
func TestAudioSharedOutput(t *testing.T) {
	a := startAudioNode(t, audioNodeOptions{})
	ctx, cluster, client, pw, draOpts := a.ctx, a.cluster, a.client, a.pw, a.dra
	dp := node + "-pci-0000-00-1f-3-hdmi-3" // the Samsung's DP output
	var nodeName string
	for _, o := range a.outputs {
		if o.Output == dp {
			nodeName = o.Name
		}
	}
	waitForDriverSlice(t, ctx, cluster, audio.DriverName, func(s *resourceapi.ResourceSlice) bool {
		for _, d := range s.Spec.Devices {
			if d.Name == dp {
				c, ok := d.Capacity[audio.CapacityStreams]
				return !deviceTainted(s, dp) && d.AllowMultipleAllocations != nil && *d.AllowMultipleAllocations && ok && c.Value.Value() == audio.MaxStreams
			}
		}
		return false
	})

	claimOf := func(name string, streams int) *resourceapi.ResourceClaim {
		req := &resourceapi.ExactDeviceRequest{DeviceClassName: "audio-sink",
			Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
				Expression: fmt.Sprintf(`device.attributes["audio.liken.sh"].sink == %q`, dp)}}}}
		if streams > 0 {
			req.Capacity = &resourceapi.CapacityRequirements{Requests: map[resourceapi.QualifiedName]resource.Quantity{
				audio.CapacityStreams: resource.MustParse(strconv.Itoa(streams)),
			}}
		}
		return &resourceapi.ResourceClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
			Spec:       resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{Name: "speakers", Exactly: req}}}},
		}
	}
	kl := kubelet.New(client, draOpts.RegistrarDir)
	t.Cleanup(func() { kl.Close() })
	plugin, err := kl.Discover(ctx, audio.DriverName)
	must(t, err)

	// The music takes two streams, the announcements the default share.
	music := createWithPod(t, ctx, cluster, claimOf("music", 2), "music")
	announce := createWithPod(t, ctx, cluster, claimOf("announce", 0), "announce")
	for c, want := range map[*resourceapi.ResourceClaim]int64{music: 2, announce: audio.DefaultStreams} {
		r := c.Status.Allocation.Devices.Results[0]
		if consumed := r.ConsumedCapacity[audio.CapacityStreams]; r.Device != dp || r.ShareID == nil || consumed.Value() != want {
			t.Fatalf("claim %s: allocated %+v, want a share of %s consuming %d streams", c.Name, r, dp, want)
		}
		prepareOK(t, ctx, plugin, c)
	}
	if *music.Status.Allocation.Devices.Results[0].ShareID == *announce.Status.Allocation.Devices.Results[0].ShareID {
		t.Error("the two claims got the same share")
	}
	claims, _ := gate.Claims(pw.RuntimeDir)
	if m, an := claims[string(music.UID)], claims[string(announce.UID)]; m.Streams != 2 || an.Streams != audio.DefaultStreams {
		t.Errorf("claim files: music %+v, announce %+v", m, an)
	}

	// Two tones, one through each claim's socket.
	const rate, lowHz, highHz = 48000, 523.0, 1319.0
	play := func(uid string, hz float64) (*exec.Cmd, *pwtest.LockedBuffer, <-chan struct{}) {
		return claimTool(t, ctx, pw, uid, pwtest.Looping(pwtest.Tone(hz, 0.3, rate, 2, time.Second)),
			"pw-play", "--target", nodeName, "--raw", "--format", "s16", "--rate", strconv.Itoa(rate), "--channels", "2", "-")
	}
	play(string(music.UID), lowHz)
	play(string(announce.UID), highHz)
	var streamOf map[string]uint32 // claim UID: its stream's node id
	poll.Until(t, "both claims' streams linked to the output", 60*time.Second, func() bool {
		streamOf, _ = claimStreams(t, ctx, pw)
		return len(streamOf) == 2
	})

	// audio-api's capture of the output holds both tones.
	must(t, cluster.ApplyCRDs(ctx, "deploy/audio/crds"))
	dyn, err := dynamic.NewForConfig(cluster.RESTConfig())
	must(t, err)
	createEndpoint(t, ctx, dyn, "Sink", dp, node)
	st, err := capturetest.Start(ctx, capturetest.Options{Cluster: cluster, Remote: pw.Remote(), Node: node})
	must(t, err)
	t.Cleanup(st.Stop)
	listener := serviceAccountToken(t, ctx, cluster, "default", "listener", "audio-api")
	bindViewer(t, ctx, cluster, "default", "listener")
	resp := get(t, ctx, st.Client(nil), "https://"+st.APIAddress+"/v1/audio/sinks/"+dp+"/audio.wav?t=0,1.5", listener)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("capture of the shared output: %d %v: %s", resp.StatusCode, err, body[:min(len(body), 400)])
	}
	x := pwtest.Samples(wavPCM(t, "capture", body, rate, 2), 2, 0)
	x = x[len(x)/4:]
	for _, hz := range []float64{lowHz, highHz} {
		// Each tone plays at 0.3; mixed, each keeps its amplitude.
		if amp := pwtest.PeakTone(x, rate, hz, rate/10); amp < 0.2 {
			t.Errorf("the capture holds the %.0f Hz tone at %.3f, want about 0.3", hz, amp)
		} else {
			t.Logf("the capture holds the %.0f Hz tone at %.3f", hz, amp)
		}
	}

	// Through the music's socket: the output and its own stream, no
	// trace of the announcements' stream, client or links.
	checkClaimView(t, ctx, pw, "the music's", string(music.UID), streamOf[string(music.UID)], nodeName, streamOf[string(announce.UID)])

	// Recording the output's monitor through the music's socket is
	// refused; its second stream plays, and a third, past its share of
	// two, is refused: each refusal with its reason on the tool's stderr.
	playArgs := []string{"pw-play", "--target", nodeName, "--raw", "--format", "s16", "--rate", strconv.Itoa(rate), "--channels", "2", "-"}
	for _, c := range []struct {
		what, why string
		args      []string
	}{
		{"recording the monitor", gate.RefusedMonitor, []string{"pw-record", "-P", "stream.capture.sink=true", "--target", nodeName, "--raw", "-"}},
		{"a second stream", "", playArgs},
		{"a third stream", gate.RefusedShare, playArgs},
	} {
		cmd, stderr, exited := claimTool(t, ctx, pw, string(music.UID), pwtest.Looping(nil), c.args...)
		if c.why == "" {
			poll.Until(t, c.what+" linked", 60*time.Second, func() bool {
				_, _, ok, err := pw.LinkedStream(ctx, cmd.Process.Pid)
				must(t, err)
				return ok
			})
			continue
		}
		poll.Until(t, c.what+" refused", 60*time.Second, func() bool { return strings.Contains(stderr.String(), c.why) })
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			t.Errorf("%s through the music's socket still runs", c.what)
		}
		t.Logf("%s through the music's socket: %s", c.what, strings.TrimSpace(stderr.String()))
	}

	// A claim on all of the output's streams waits while shares are held.
	alone := claimOf("alone", audio.MaxStreams)
	_, err = client.ResourceV1().ResourceClaims("default").Create(ctx, alone, metav1.CreateOptions{})
	must(t, err)
	_, err = client.CoreV1().Pods("default").Create(ctx, podFor(alone, "alone"), metav1.CreateOptions{})
	must(t, err)
	if _, err := cluster.WaitForPodUnschedulable(ctx, "default", "alone"); err != nil {
		t.Fatalf("a claim on all of the output's streams while two claims share it: %v", err)
	}
	for _, c := range []*resourceapi.ResourceClaim{music, announce} {
		resp, err := plugin.Unprepare(ctx, c)
		must(t, err)
		if e := resp.Claims[string(c.UID)].GetError(); e != "" {
			t.Fatalf("unprepare %s: %s", c.Name, e)
		}
		must(t, client.CoreV1().Pods("default").Delete(ctx, c.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}))
		must(t, client.ResourceV1().ResourceClaims("default").Delete(ctx, c.Name, metav1.DeleteOptions{}))
	}
	got, err := cluster.WaitForClaimAllocated(ctx, "default", "alone")
	must(t, err)
	r := got.Status.Allocation.Devices.Results[0]
	if consumed := r.ConsumedCapacity[audio.CapacityStreams]; r.Device != dp || consumed.Value() != audio.MaxStreams {
		t.Errorf("the lone claim got %+v, want all of the output's streams", r)
	}
	prepareOK(t, ctx, plugin, got)
	if c, _ := gate.Claims(pw.RuntimeDir); c[string(got.UID)].Streams != audio.MaxStreams {
		t.Errorf("the lone claim's file: %+v", c[string(got.UID)])
	}
	// And a share waits while it holds the output.
	late := claimOf("late", 0)
	_, err = client.ResourceV1().ResourceClaims("default").Create(ctx, late, metav1.CreateOptions{})
	must(t, err)
	_, err = client.CoreV1().Pods("default").Create(ctx, podFor(late, "late"), metav1.CreateOptions{})
	must(t, err)
	if _, err := cluster.WaitForPodUnschedulable(ctx, "default", "late"); err != nil {
		t.Fatalf("a share while a claim holds all of the output's streams: %v", err)
	}
}

// On a control plane without consumable capacity (the feature gate off,
// as on 1.34 and 1.35 unless turned on) the API server drops the
// output's allowMultipleAllocations: the operator says so once (a log
// line and liken_dra_api_features_missing), the output is allocated to
// one claim at a time, and the claim that holds it gets all of its
// streams.
func TestAudioExclusiveWithoutConsumableCapacity(t *testing.T) {
	reg := prometheus.NewRegistry()
	a := startAudioNode(t, audioNodeOptions{FeatureGates: "DRAConsumableCapacity=false", Tune: func(c *audio.Config) { c.Registerer = reg }})
	ctx, cluster, client, pw := a.ctx, a.cluster, a.client, a.pw
	dp := node + "-pci-0000-00-1f-3-hdmi-3"
	waitForDriverSlice(t, ctx, cluster, audio.DriverName, func(s *resourceapi.ResourceSlice) bool {
		return hasDevice(s, dp) && !deviceTainted(s, dp)
	})
	poll.Until(t, "liken_dra_api_features_missing{feature=DRAConsumableCapacity} at 1", 60*time.Second, func() bool {
		fams, err := reg.Gather()
		must(t, err)
		for _, f := range fams {
			for _, m := range f.GetMetric() {
				for _, l := range m.GetLabel() {
					if f.GetName() == "liken_dra_api_features_missing" && l.GetName() == "feature" && l.GetValue() == "DRAConsumableCapacity" {
						return m.GetGauge().GetValue() == 1
					}
				}
			}
		}
		return false
	})
	slices, err := client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
	must(t, err)
	for _, s := range slices.Items {
		for _, d := range s.Spec.Devices {
			if d.AllowMultipleAllocations != nil {
				t.Errorf("device %s kept allowMultipleAllocations on an API server without the gate", d.Name)
			}
		}
	}

	claimOf := func(name string) *resourceapi.ResourceClaim {
		return &resourceapi.ResourceClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
			Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
				Name: "speakers", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "audio-sink",
					Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
						Expression: fmt.Sprintf(`device.attributes["audio.liken.sh"].sink == %q`, dp)}}}},
			}}}},
		}
	}
	first := createWithPod(t, ctx, cluster, claimOf("first"), "first")
	if r := first.Status.Allocation.Devices.Results[0]; r.Device != dp || r.ShareID != nil || len(r.ConsumedCapacity) != 0 {
		t.Fatalf("the first claim got %+v, want %s whole", r, dp)
	}
	kl := kubelet.New(client, a.dra.RegistrarDir)
	t.Cleanup(func() { kl.Close() })
	plugin, err := kl.Discover(ctx, audio.DriverName)
	must(t, err)
	prepareOK(t, ctx, plugin, first)
	if c, _ := gate.Claims(pw.RuntimeDir); c[string(first.UID)].Streams != audio.MaxStreams {
		t.Errorf("the exclusive claim's file: %+v, want all %d streams", c[string(first.UID)], audio.MaxStreams)
	}
	second := claimOf("second")
	_, err = client.ResourceV1().ResourceClaims("default").Create(ctx, second, metav1.CreateOptions{})
	must(t, err)
	_, err = client.CoreV1().Pods("default").Create(ctx, podFor(second, "second"), metav1.CreateOptions{})
	must(t, err)
	if _, err := cluster.WaitForPodUnschedulable(ctx, "default", "second"); err != nil {
		t.Fatalf("a second claim on an exclusive output: %v", err)
	}
}
