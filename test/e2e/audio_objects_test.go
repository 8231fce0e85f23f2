// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"fmt"
	"github.com/liken-sh/operators/test/poll"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2/ktesting"

	audiov1 "github.com/liken-sh/operators/api/audio/v1alpha1"
	"github.com/liken-sh/operators/internal/audio"
	"github.com/liken-sh/operators/internal/audio/objects"
	"github.com/liken-sh/operators/internal/dra"
	"github.com/liken-sh/operators/internal/metricsserver"
	"github.com/liken-sh/operators/internal/pipewire"
	"github.com/liken-sh/operators/test/e2e/harness"
	"github.com/liken-sh/operators/test/e2e/kubelet"
	"github.com/liken-sh/operators/test/pwtest"
)

// asAudioOperator is a REST config that acts as the audio operator's
// ServiceAccount with a token bound to a pod on node, so the test runs
// with exactly the rules in deploy/audio.
func asAudioOperator(c *harness.Cluster, node string) *rest.Config {
	cfg := c.RESTConfig()
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:liken-system:audio-operator",
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:liken-system", "system:authenticated"},
		Extra:    map[string][]string{"authentication.kubernetes.io/node-name": {node}},
	}
	return cfg
}

// kubectl runs the control plane's kubectl against c, failing the test
// when it fails.
func kubectl(t *testing.T, ctx context.Context, c *harness.Cluster, args ...string) string {
	t.Helper()
	out, err := c.Kubectl(ctx, args...)
	must(t, err)
	return out
}

// TestAudioSinksAndSources runs declare and the operator, as the operator's
// ServiceAccount under RBAC, against recorded cards, real PipeWire and
// WirePlumber and the real control plane, and steers the endpoints
// through their Sink objects.
func TestAudioSinksAndSources(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	cluster, err := harness.Start(ctx, harness.Options{Logf: t.Logf})
	must(t, err)
	t.Cleanup(cluster.Stop)
	must(t, cluster.AddLikenNode(ctx, node))
	must(t, cluster.ApplyDeviceClassesFile(ctx, "deploy/audio/deviceclasses.yaml"))
	must(t, cluster.ApplyCRDs(ctx, "deploy/audio/crds"))
	for _, f := range []string{"namespace.yaml", "serviceaccount.yaml", "rbac.yaml", "admissionpolicy.yaml"} {
		kubectl(t, ctx, cluster, "apply", "-f", filepath.Join("deploy/audio", f))
	}

	rc := asAudioOperator(cluster, node)
	kube, err := kubernetes.NewForConfig(rc)
	must(t, err)
	dyn, err := dynamic.NewForConfig(rc)
	must(t, err)
	admin, err := dynamic.NewForConfig(cluster.RESTConfig())
	must(t, err)
	sinks := admin.Resource(audiov1.SinksResource)

	jack := node + "-pci-0000-00-1f-3-jack-out" // the XPS's analog output
	dp := node + "-pci-0000-00-1f-3-hdmi-3"     // the Samsung's DP output
	bare := node + "-pci-0000-00-1f-3-hdmi-1"   // an HDMI port with no monitor
	mic := node + "-pci-0000-00-1f-3-microphone-capture"

	// A person set the analog output's layout before the pod started:
	// declare reads it, as the operator's ServiceAccount.
	pre := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": audiov1.GroupVersion.String(), "kind": "Sink", "metadata": map[string]any{"name": jack},
		"spec": map[string]any{"layout": []any{"FL", "FR", "RL", "RR", "FC", "LFE"}},
	}}
	_, err = sinks.Create(ctx, pre, metav1.CreateOptions{})
	must(t, err)

	dir := t.TempDir()
	hw, cards := recordedXPS(t, dir)
	devSnd := hw.DevSnd
	res, err := audio.Declare(audio.DeclareConfig{Hardware: hw, Node: node,
		PipeWireDir: filepath.Join(dir, "declared"), WirePlumberDir: filepath.Join(dir, "wp"), ALSAPath: "null", Rate: 48000,
		SpecLayouts: func(names []string) (map[string][]string, error) {
			return objects.ReadLayouts(ctx, dyn, names, 3*time.Second)
		}})
	must(t, err)
	if len(res.Problems) != 0 {
		t.Fatalf("declare problems: %v", res.Problems)
	}
	outputs, err := pipewire.ReadDeclaration(res.Declaration)
	must(t, err)
	byOutput := map[string]pipewire.Output{}
	for _, o := range outputs {
		byOutput[o.Output] = o
	}
	if got := byOutput[jack].Positions; !slices.Equal(got, []string{"FL", "FR", "RL", "RR", "FC", "LFE"}) {
		t.Fatalf("declare did not take the Sink's layout: %v", got)
	}
	if o, ok := byOutput[mic]; !ok || o.Direction != pipewire.Capture {
		t.Fatalf("the microphone is not declared as a source: %+v", o)
	}
	pw := pwtest.New(t, pwtest.Options{Outputs: outputs})
	t.Cleanup(pw.FollowDeclaration(ctx, func(err error) { t.Errorf("restarting PipeWire: %v", err) }))

	// The operator's registry, served as the operator's main serves it.
	reg := prometheus.NewRegistry()
	metricsserver.BuildInfo(reg, "audio-operator", "e2e")
	lis, err := metricsserver.Listen("127.0.0.1:0")
	must(t, err)
	go func() { _ = metricsserver.Serve(ctx, lis, reg) }()
	draOpts := dra.Options{
		RegistrarDir: filepath.Join(dir, "plugins_registry"), PluginDir: filepath.Join(dir, "plugins", audio.DriverName),
		CDIDir: filepath.Join(dir, "cdi"), SettleQuiet: 300 * time.Millisecond,
	}
	opCtx, stopOp := context.WithCancel(ctx)
	opDone := make(chan error, 1)
	go func() {
		opDone <- audio.Run(opCtx, audio.Config{Node: node, KubeClient: kube, Objects: dyn, Hardware: hw,
			Remote: pw.Remote(), PipeWireDir: pw.PipeWireConfD, DRA: draOpts, Registerer: reg, Backstop: 2 * time.Second})
	}()
	t.Cleanup(func() { stopOp(); <-opDone })

	// One Sink per playback PCM and one Source per capture PCM, each
	// with this node in its status.
	var nSinks, nSources int
	for _, o := range outputs {
		if o.Direction == pipewire.Capture {
			nSources++
		} else {
			nSinks++
		}
	}
	poll.WaitFor(t, ctx, "every Sink and Source with its status", 30*time.Second, func() (bool, string) {
		s, err := sinks.List(ctx, metav1.ListOptions{FieldSelector: "status.node=" + node})
		if err != nil {
			return false, err.Error()
		}
		so, err := admin.Resource(audiov1.SourcesResource).List(ctx, metav1.ListOptions{FieldSelector: "status.node=" + node})
		if err != nil {
			return false, err.Error()
		}
		return len(s.Items) == nSinks && len(so.Items) == nSources, ""
	})

	getSink := func(name string) *audiov1.Sink {
		t.Helper()
		u, err := sinks.Get(ctx, name, metav1.GetOptions{})
		must(t, err)
		var s audiov1.Sink
		must(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &s))
		return &s
	}
	waitSink := func(what, name string, ok func(*audiov1.Sink) bool) *audiov1.Sink {
		t.Helper()
		var s *audiov1.Sink
		poll.WaitFor(t, ctx, what, 30*time.Second, func() (bool, string) {
			s = getSink(name)
			return ok(s), ""
		})
		return s
	}
	s := waitSink("the DP Sink ready", dp, func(s *audiov1.Sink) bool {
		return meta.IsStatusConditionTrue(s.Status.Conditions, audiov1.ConditionReady)
	})
	st := s.Status
	if st.Monitor == nil || st.Monitor.Name != "U28E590" || st.ConnectionType != "displayport" || st.Card == nil ||
		st.PCM == nil || st.PCM.Device != 7 || st.Location != "0000:00:1f.3" || st.LayoutSource != audiov1.LayoutFromELD ||
		st.NodeName != byOutput[dp].Name || !meta.IsStatusConditionTrue(st.Conditions, audiov1.ConditionConnected) {
		t.Fatalf("DP Sink status: %+v", st)
	}
	if _, ok := st.Capabilities["IEC958 Playback Switch"]; !ok || len(st.Capabilities) != 1 {
		t.Errorf("DP Sink capabilities %v, want its slot's IEC958 switch alone", st.Capabilities)
	}
	b := getSink(bare).Status
	if c := meta.FindStatusCondition(b.Conditions, audiov1.ConditionConnected); c == nil || c.Status != metav1.ConditionFalse {
		t.Errorf("monitorless HDMI Sink Connected: %+v", c)
	}
	j := waitSink("the analog Sink's layout applied", jack, func(s *audiov1.Sink) bool {
		return meta.IsStatusConditionTrue(s.Status.Conditions, audiov1.ConditionLayoutApplied)
	}).Status
	if j.LayoutSource != audiov1.LayoutFromSpec || !slices.Equal(j.Layout, []string{"FL", "FR", "RL", "RR", "FC", "LFE"}) {
		t.Errorf("analog Sink layout %v from %s", j.Layout, j.LayoutSource)
	}
	// The SOF card's master volume (the recorded state holds no TLV, so
	// no dB range; the VM tier reads real ones).
	const masterName = "PGA1.0 1 Master Playback Volume"
	if c, ok := j.Capabilities[masterName]; !ok || c.Type != "integer" || c.Max == nil {
		t.Fatalf("analog Sink capabilities lack %s: %+v", masterName, j.Capabilities)
	}

	// A claim prepared on the DP output shows on its Sink, and in
	// audio_endpoint_claimed below.
	claim := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "desk"},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
			Name: "speakers", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "audio-sink",
				Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
					Expression: fmt.Sprintf(`device.attributes["audio.liken.sh"].sink == %q`, dp)}}}},
		}}}},
	}
	allocated := createWithPod(t, ctx, cluster, claim, "player-desk")
	kl := kubelet.New(cluster.Client(), draOpts.RegistrarDir)
	t.Cleanup(func() { kl.Close() })
	plugin, err := kl.Discover(ctx, audio.DriverName)
	must(t, err)
	prepareOK(t, ctx, plugin, allocated)
	waitSink("the DP Sink's claim", dp, func(s *audiov1.Sink) bool {
		c := s.Status.Claim
		return c != nil && c.Namespace == "default" && c.Name == "desk"
	})

	// Volume and mute apply to the real node at once, even under a claim.
	patchSpec := func(name, patch string) {
		t.Helper()
		_, err := sinks.Patch(ctx, name, types.MergePatchType, []byte(`{"spec":`+patch+`}`), metav1.PatchOptions{})
		must(t, err)
	}
	// PipeWire 1.4.2 shows a write to a node only once that node has run
	// (pipewire.Observed.Stale), so the DP node plays a moment first.
	must(t, pw.Play(ctx, byOutput[dp].Name, pwtest.Tone(440, 0.1, 48000, 2, 300*time.Millisecond), 48000, 2))
	began := time.Now()
	patchSpec(dp, `{"volume":40,"mute":true}`)
	poll.WaitFor(t, ctx, "the DP node at 40% and muted in pw-dump", 30*time.Second, func() (bool, string) {
		g, err := pw.Remote().Dump(ctx)
		if err != nil {
			return false, err.Error()
		}
		n, ok := g.NodeByName(byOutput[dp].Name)
		if !ok || n.Volume == nil {
			return false, "no volume"
		}
		obs := n.Observed()
		return obs.Volume != nil && *obs.Volume == 40 && obs.Mute != nil && *obs.Mute, fmt.Sprintf("%+v", n.Volume)
	})
	t.Logf("spec.volume and spec.mute reached PipeWire in %s", time.Since(began).Round(time.Millisecond))
	waitSink("observed volume in status", dp, func(s *audiov1.Sink) bool {
		o := s.Status.Observed
		return o != nil && o.Volume != nil && *o.Volume == 40 && o.Mute != nil && *o.Mute
	})

	// A control through the control interface; an unknown name is
	// reported with an Event and changes nothing else.
	rec, err := cards.Recorded(0)
	must(t, err)
	master := j.Capabilities[masterName]
	want := *master.Min + (*master.Max-*master.Min)/2
	patchSpec(jack, `{"controls":{"`+masterName+`":`+itoa(want)+`,"No Such Control":"on"}}`)
	waitSink("the analog Sink's master volume observed", jack, func(s *audiov1.Sink) bool {
		return s.Status.Observed != nil && s.Status.Observed.Controls[masterName] == itoa(want)
	})
	// The write went through the control interface: the card holds it.
	snap := rec.Snapshot()
	found := false
	for _, c := range snap.Controls {
		if c.Name == masterName {
			found = true
			if len(c.Values) == 0 || !slices.Equal(c.Values, slices.Repeat([]int64{want}, len(c.Values))) {
				t.Errorf("the recorded card holds %v for %s, want %d on every channel", c.Values, masterName, want)
			}
		}
	}
	if !found {
		t.Errorf("the recorded card has no %s", masterName)
	}
	poll.WaitFor(t, ctx, "an UnknownControl Event in default", 30*time.Second, func() (bool, string) {
		evs, err := cluster.Client().CoreV1().Events("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, e := range evs.Items {
			if e.InvolvedObject.Name == jack && e.Reason == "UnknownControl" && e.Type == corev1.EventTypeWarning {
				return true, ""
			}
		}
		return false, ""
	})

	// spec.codec means nothing to a wired output: it is ignored, and
	// said so, until it is removed.
	patchSpec(jack, `{"codec":"aac"}`)
	c := waitSink("SpecApplied CodecNotSupported on the analog Sink", jack, func(s *audiov1.Sink) bool {
		c := meta.FindStatusCondition(s.Status.Conditions, audiov1.ConditionSpecApplied)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == audiov1.ReasonCodecNotSupported
	})
	if m := meta.FindStatusCondition(c.Status.Conditions, audiov1.ConditionSpecApplied).Message; !strings.Contains(m, `spec.codec "aac" is ignored`) ||
		!strings.Contains(m, "only to a Bluetooth speaker") || !strings.Contains(m, "wired analog output") {
		t.Errorf("SpecApplied message %q: want it to name spec.codec, why it is ignored and what the Sink is", m)
	}
	poll.WaitFor(t, ctx, "a CodecNotSupported Event in default", 30*time.Second, func() (bool, string) {
		evs, err := cluster.Client().CoreV1().Events("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		return slices.ContainsFunc(evs.Items, func(e corev1.Event) bool {
			return e.InvolvedObject.Name == jack && e.Reason == audiov1.ReasonCodecNotSupported && e.Type == corev1.EventTypeWarning
		}), ""
	})
	// The operator writes a status only when it differs from the stored
	// one, so a condition every pass builds alike is written once: after
	// the 2 s backstop pass it is as it was, to the message.
	before := *meta.FindStatusCondition(c.Status.Conditions, audiov1.ConditionSpecApplied)
	time.Sleep(3 * time.Second)
	if after := meta.FindStatusCondition(getSink(jack).Status.Conditions, audiov1.ConditionSpecApplied); after == nil || *after != before {
		t.Errorf("SpecApplied changed at rest: %+v, then %+v", before, after)
	}
	patchSpec(jack, `{"codec":null}`)
	waitSink("SpecApplied gone once spec.codec is removed", jack, func(s *audiov1.Sink) bool {
		return meta.FindStatusCondition(s.Status.Conditions, audiov1.ConditionSpecApplied) == nil
	})

	// Without the admission policy the schema lets through a control
	// value past int32, which the Go types cannot hold: the Sink is not
	// dropped for it. The rest of its spec applies (a volume change
	// reaches the status), and the field is named in SpecApplied and a
	// Warning Event until it is fixed.
	must(t, cluster.Client().AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Delete(ctx, "audio-endpoint-controls", metav1.DeleteOptions{}))
	poll.WaitFor(t, ctx, "a control value past int32 accepted without the policy", 30*time.Second, func() (bool, string) {
		_, err := sinks.Patch(ctx, dp, types.MergePatchType, []byte(`{"spec":{"volume":55,"controls":{"PCM Playback Volume":2147483648}}}`), metav1.PatchOptions{})
		return err == nil, fmt.Sprint(err)
	})
	bad := `spec.controls["PCM Playback Volume"]`
	var undecodable audiov1.SinkStatus
	poll.WaitFor(t, ctx, "SpecApplied InvalidSpec and the new volume on the DP Sink", 30*time.Second, func() (bool, string) {
		u, err := sinks.Get(ctx, dp, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		var only struct {
			Status audiov1.SinkStatus `json:"status"`
		}
		must(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &only))
		undecodable = only.Status
		c := meta.FindStatusCondition(undecodable.Conditions, audiov1.ConditionSpecApplied)
		o := undecodable.Observed
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == audiov1.ReasonInvalidSpec &&
			o != nil && o.Volume != nil && *o.Volume == 55, fmt.Sprintf("%+v %+v", c, o)
	})
	if m := meta.FindStatusCondition(undecodable.Conditions, audiov1.ConditionSpecApplied).Message; !strings.Contains(m, bad) || !strings.Contains(m, "2147483648") {
		t.Errorf("SpecApplied message %q: want it to name %s and its value", m, bad)
	}
	poll.WaitFor(t, ctx, "an InvalidSpec Event naming the field", 30*time.Second, func() (bool, string) {
		evs, err := cluster.Client().CoreV1().Events("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		return slices.ContainsFunc(evs.Items, func(e corev1.Event) bool {
			return e.InvolvedObject.Name == dp && e.Reason == audiov1.ReasonInvalidSpec && e.Type == corev1.EventTypeWarning && strings.Contains(e.Message, bad)
		}), ""
	})
	// The other Sinks are kept in step meanwhile.
	if c := meta.FindStatusCondition(getSink(jack).Status.Conditions, audiov1.ConditionSpecApplied); c != nil {
		t.Errorf("the analog Sink got %+v from another Sink's bad field", c)
	}
	patchSpec(dp, `{"controls":null}`)
	waitSink("SpecApplied gone once the control is removed", dp, func(s *audiov1.Sink) bool {
		return meta.FindStatusCondition(s.Status.Conditions, audiov1.ConditionSpecApplied) == nil
	})
	kubectl(t, ctx, cluster, "apply", "-f", "deploy/audio/admissionpolicy.yaml")

	// A layout change while a stream plays waits; when it stops, the
	// declaration is rewritten and PipeWire restarts with it.
	playCtx, stopPlay := context.WithCancel(ctx)
	played := make(chan error, 1)
	go func() {
		played <- pw.Play(playCtx, byOutput[dp].Name, pwtest.Tone(440, 0.1, 48000, 2, 60*time.Second), 48000, 2)
	}()
	poll.WaitFor(t, ctx, "the stream linked", 30*time.Second, func() (bool, string) {
		g, err := pw.Remote().Dump(ctx)
		if err != nil {
			return false, err.Error()
		}
		n, ok := g.NodeByName(byOutput[dp].Name)
		return ok && g.Linked(n.ID), ""
	})
	patchSpec(dp, `{"layout":["FL","FR","RL","RR","FC","LFE"]}`)
	waitSink("LayoutApplied AwaitingIdle", dp, func(s *audiov1.Sink) bool {
		c := meta.FindStatusCondition(s.Status.Conditions, audiov1.ConditionLayoutApplied)
		return c != nil && c.Reason == audiov1.ReasonAwaitingIdle
	})
	if now, err := pipewire.ReadDeclaration(pw.DeclarationPath()); err != nil || !slices.Equal(declaredPositions(now, dp), byOutput[dp].Positions) {
		t.Fatalf("declaration rewritten while a stream played: %v %v", declaredPositions(now, dp), err)
	}
	stopPlay()
	<-played
	poll.WaitFor(t, ctx, "the declaration rewritten with the new layout", 30*time.Second, func() (bool, string) {
		now, err := pipewire.ReadDeclaration(pw.DeclarationPath())
		if err == nil && slices.Equal(declaredPositions(now, dp), []string{"FL", "FR", "RL", "RR", "FC", "LFE"}) {
			return true, ""
		}
		var links []string
		if g, err := pw.Remote().Dump(ctx); err == nil {
			for _, l := range g.Links {
				out, _ := g.Node(l.OutputNode)
				in, _ := g.Node(l.InputNode)
				links = append(links, out.Name+"->"+in.Name)
			}
		}
		return false, fmt.Sprintf("links %v", links)
	})
	// PipeWire restarts on the newer declaration: FollowDeclaration does
	// what the pod's pipewire sidecar does (proven in internal/audio/modes).
	poll.WaitFor(t, ctx, "the DP node with six channel positions", 30*time.Second, func() (bool, string) {
		g, err := pw.Remote().Dump(ctx)
		if err != nil {
			return false, err.Error()
		}
		n, ok := g.NodeByName(byOutput[dp].Name)
		pos := n.Props["audio.position"]
		return ok && strings.Contains(pos, "RL") && strings.Contains(pos, "LFE"), pos
	})
	waitSink("LayoutApplied Applied with the Spec layout", dp, func(s *audiov1.Sink) bool {
		return meta.IsStatusConditionTrue(s.Status.Conditions, audiov1.ConditionLayoutApplied) &&
			s.Status.LayoutSource == audiov1.LayoutFromSpec
	})
	poll.WaitFor(t, ctx, "a LayoutChanged Event", 30*time.Second, func() (bool, string) {
		evs, err := cluster.Client().CoreV1().Events("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		return slices.ContainsFunc(evs.Items, func(e corev1.Event) bool {
			return e.InvolvedObject.Name == dp && e.Reason == "LayoutChanged"
		}), ""
	})

	// kubectl get sinks shows what a person wants to see.
	out := kubectl(t, ctx, cluster, "get", "sinks")
	for _, col := range []string{"NODE", "CONNECTION", "VOLUME", "MUTE", "CLAIM", "CONNECTED", "READY", "LAYOUT"} {
		if !strings.Contains(strings.SplitN(out, "\n", 2)[0], col) {
			t.Errorf("kubectl get sinks lacks %s:\n%s", col, out)
		}
	}
	if !strings.Contains(out, dp) || !strings.Contains(out, "displayport") {
		t.Errorf("kubectl get sinks does not show the DP Sink:\n%s", out)
	}
	t.Logf("kubectl get sinks:\n%s", out)

	// The headset is unplugged (its card leaves /dev/snd): its Sink and
	// Source stay, and say the endpoint is gone.
	razer := node + "-usb-1532-0526-00000000-usb-audio"
	nodes, err := filepath.Glob(filepath.Join(devSnd, "*C1*"))
	must(t, err)
	if len(nodes) == 0 {
		t.Fatal("no /dev/snd nodes of card 1")
	}
	for _, n := range nodes {
		must(t, os.Remove(n))
	}
	gone := waitSink("the unplugged headset's Sink marked gone", razer, func(s *audiov1.Sink) bool {
		c := meta.FindStatusCondition(s.Status.Conditions, audiov1.ConditionConnected)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == audio.ReasonGone
	})
	if gone.Status.Location == "" || gone.Status.ConnectionType != "usb" || meta.IsStatusConditionTrue(gone.Status.Conditions, audiov1.ConditionReady) {
		t.Errorf("the gone headset's Sink lost what was last seen, or is still Ready: %+v", gone.Status)
	}
	if _, err := admin.Resource(audiov1.SourcesResource).Get(ctx, razer+audio.CaptureSuffix, metav1.GetOptions{}); err != nil {
		t.Errorf("the gone headset's Source: %v", err)
	}

	// The metrics, scraped over HTTP, say what the objects say once the
	// operator has seen the graph after the headset went (on a loaded
	// machine PipeWire's answer may follow the objects by a pass).
	var scrape map[string]*dto.MetricFamily
	metrics := []struct {
		name, label, value string
		want               float64
	}{
		{"liken_build_info", "component", "audio-operator", 1},
		{"audio_endpoint_connected", "endpoint", dp, 1},
		{"audio_endpoint_connected", "endpoint", bare, 0},
		{"audio_endpoint_ready", "endpoint", dp, 1},
		{"audio_endpoint_ready", "endpoint", mic, 1},
		{"audio_endpoint_claimed", "endpoint", dp, 1},
		{"audio_endpoint_claimed", "endpoint", jack, 0},
		{"audio_endpoint_connected", "endpoint", razer, 0},
		{"audio_observation_valid", "source", "pipewire", 1},
	}
	poll.WaitFor(t, ctx, "the metrics saying what the objects say", 30*time.Second, func() (bool, string) {
		scrape = scrapeMetrics(t, "http://"+lis.Addr().String()+"/metrics")
		var wrong []string
		for _, m := range metrics {
			if got, ok := metricValue(scrape, m.name, m.label, m.value); !ok || got != m.want {
				wrong = append(wrong, fmt.Sprintf("%s{%s=%q} = %v (found %v), want %v", m.name, m.label, m.value, got, ok, m.want))
			}
		}
		return len(wrong) == 0, strings.Join(wrong, "; ")
	})
	if f := scrape["audio_reconcile_duration_seconds"]; f == nil || len(f.GetMetric()) == 0 || f.GetMetric()[0].GetHistogram().GetSampleCount() == 0 {
		t.Errorf("audio_reconcile_duration_seconds has no observations: %v", f)
	}

	// A Sink a person makes under a name of this node's form that no
	// output has is marked NotServed by this node's operator, through
	// the admission policy.
	handmade := node + "-pci-0000-00-1f-3-hdmi-9"
	_, err = sinks.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": audiov1.GroupVersion.String(), "kind": "Sink", "metadata": map[string]any{"name": handmade},
		"spec": map[string]any{"volume": int64(40)}}}, metav1.CreateOptions{})
	must(t, err)
	unserved := waitSink("the hand-made Sink marked NotServed", handmade, func(s *audiov1.Sink) bool {
		c := meta.FindStatusCondition(s.Status.Conditions, audiov1.ConditionReady)
		return c != nil && c.Reason == audiov1.ReasonNotServed
	})
	if c := meta.FindStatusCondition(unserved.Status.Conditions, audiov1.ConditionConnected); unserved.Status.Node != node ||
		c == nil || c.Status != metav1.ConditionFalse || c.Reason != audiov1.ReasonNotServed {
		t.Errorf("the hand-made Sink's status %+v, want node %s and Connected False NotServed", unserved.Status, node)
	}

	// The DP monitor is unplugged: the Sink says no monitor answers, and
	// keeps the port's connection type and the layout PipeWire's node
	// was declared with.
	plugged := getSink(dp).Status
	must(t, rec.SetELD(7, nil))
	unplugged := waitSink("the DP Sink Connected False NoMonitor", dp, func(s *audiov1.Sink) bool {
		c := meta.FindStatusCondition(s.Status.Conditions, audiov1.ConditionConnected)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == audio.ReasonNoMonitor
	}).Status
	if unplugged.ConnectionType != "displayport" || unplugged.Monitor != nil || !slices.Equal(unplugged.Layout, plugged.Layout) ||
		unplugged.LayoutSource != plugged.LayoutSource {
		t.Errorf("the unplugged DP Sink's status %+v, want connectionType displayport, no monitor and layout %v (%s) kept",
			unplugged, plugged.Layout, plugged.LayoutSource)
	}
}

// scrapeMetrics GETs a Prometheus text endpoint and parses it.
func scrapeMetrics(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	must(t, err)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	must(t, err)
	return families
}

// metricValue reads the gauge or counter name{label=value} from a scrape.
func metricValue(families map[string]*dto.MetricFamily, name, label, value string) (float64, bool) {
	if f := families[name]; f != nil {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					if g := m.GetGauge(); g != nil {
						return g.GetValue(), true
					}
					return m.GetCounter().GetValue(), true
				}
			}
		}
	}
	return 0, false
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// declaredPositions is the positions declared for the output named name.
func declaredPositions(outs []pipewire.Output, name string) []string {
	for _, o := range outs {
		if o.Output == name {
			return o.Positions
		}
	}
	return nil
}
