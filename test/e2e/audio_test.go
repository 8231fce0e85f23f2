// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2/ktesting"
	drahealthv1 "k8s.io/kubelet/pkg/apis/dra-health/v1"
	"tags.cncf.io/container-device-interface/pkg/cdi"

	"github.com/liken-sh/operators/internal/alsa"
	"github.com/liken-sh/operators/internal/audio"
	"github.com/liken-sh/operators/internal/audio/gate"
	"github.com/liken-sh/operators/internal/dra"
	"github.com/liken-sh/operators/internal/pipewire"
	"github.com/liken-sh/operators/test/e2e/harness"
	"github.com/liken-sh/operators/test/e2e/kubelet"
	"github.com/liken-sh/operators/test/fakesys"
	"github.com/liken-sh/operators/test/pwtest"
)

// declaredXPS declares the recorded XPS 17's cards (recordedXPS) under
// dir as the audio pod's declare would, on ALSA's null device at
// 48 kHz, and returns the hardware, its control dumps and the outputs
// read back from the declaration PipeWire loads.
func declaredXPS(t testing.TB, dir string) (audio.Hardware, *alsa.DumpDir, []pipewire.Output) {
	t.Helper()
	hw, cards := recordedXPS(t, dir)
	res, err := audio.Declare(audio.DeclareConfig{Hardware: hw, Node: node,
		PipeWireDir: filepath.Join(dir, "declared"), WirePlumberDir: filepath.Join(dir, "wp"), ALSAPath: "null", Rate: 48000})
	must(t, err)
	outputs, err := pipewire.ReadDeclaration(res.Declaration)
	must(t, err)
	return hw, cards, outputs
}

// recordedXPS is the recorded Dell XPS 17's sound hardware as a node's.
func recordedXPS(t testing.TB, dir string) (audio.Hardware, *alsa.DumpDir) {
	t.Helper()
	root, err := harness.ModuleRoot()
	must(t, err)
	sc, err := fakesys.XPS17(root, dir)
	must(t, err)
	return audio.Hardware{DevSnd: sc.DevSnd, Sysfs: sc.Sysfs, Opener: sc.Cards}, sc.Cards
}

// audioNode is a simulated node of the audio tests: the control plane
// with the liken node and the audio DeviceClasses, the recorded XPS
// cards declared to real PipeWire and WirePlumber (ALSA's null device
// standing in for hw:<card>,<pcm>), and the operator running against
// them until the test ends. client is the cluster's admin client,
// whatever credentials the operator runs with.
type audioNode struct {
	ctx     context.Context
	cluster *harness.Cluster
	client  kubernetes.Interface
	cards   *alsa.DumpDir
	outputs []pipewire.Output
	pw      *pwtest.Daemons
	dra     dra.Options
}

// audioNodeOptions are what the audio tests change in startAudioNode's
// node; the zero value runs the operator with the cluster's admin
// credentials and the defaults of audio.Config.
type audioNodeOptions struct {
	// AsOperator installs the Sink CRDs and deploy/audio's namespace,
	// ServiceAccount, RBAC and admission policy, and runs the operator
	// as that ServiceAccount (asAudioOperator) with its Objects client,
	// as deploy/audio/operator.yaml runs it.
	AsOperator bool
	// Tune, when set, changes the operator's configuration just before
	// it starts (a Registerer to read metrics from, a shorter probe).
	Tune func(*audio.Config)
	// FeatureGates is the control plane's --feature-gates
	// (harness.Options.FeatureGates).
	FeatureGates string
	// Captures maps inputs (device names) to what each captures, over
	// and over, in place of the null device's silence
	// (pwtest.Options.Captures).
	Captures map[string][]byte
	// Outputs, when set, changes the declared outputs before PipeWire
	// loads them (an output on an ALSA PCM that ALSAConfig defines).
	Outputs func([]pipewire.Output) []pipewire.Output
	// ALSAConfig is PipeWire's alsa-lib configuration
	// (pwtest.Options.ALSAConfig).
	ALSAConfig string
}

func startAudioNode(t *testing.T, opts audioNodeOptions) *audioNode {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	cluster, err := harness.Start(ctx, harness.Options{Logf: t.Logf, FeatureGates: opts.FeatureGates})
	must(t, err)
	t.Cleanup(cluster.Stop)
	client := cluster.Client()
	must(t, cluster.AddLikenNode(ctx, node))
	must(t, cluster.ApplyDeviceClassesFile(ctx, "deploy/audio/deviceclasses.yaml"))
	_, err = cluster.WaitForServiceAccount(ctx, "default", "default")
	must(t, err)
	cfg := audio.Config{Node: node, KubeClient: client}
	if opts.AsOperator {
		must(t, cluster.ApplyCRDs(ctx, "deploy/audio/crds"))
		for _, f := range []string{"namespace.yaml", "serviceaccount.yaml", "rbac.yaml", "admissionpolicy.yaml"} {
			kubectl(t, ctx, cluster, "apply", "-f", filepath.Join("deploy/audio", f))
		}
		rc := asAudioOperator(cluster, node)
		cfg.KubeClient, err = kubernetes.NewForConfig(rc)
		must(t, err)
		cfg.Objects, err = dynamic.NewForConfig(rc)
		must(t, err)
	}

	dir := t.TempDir()
	hw, cards, outputs := declaredXPS(t, dir)
	if opts.Outputs != nil {
		outputs = opts.Outputs(outputs)
	}
	pwOpts := pwtest.Options{Outputs: outputs, ALSAConfig: opts.ALSAConfig}
	for device, pcm := range opts.Captures {
		i := slices.IndexFunc(outputs, func(o pipewire.Output) bool { return o.Output == device })
		if i < 0 {
			t.Fatalf("no declared input %s to feed", device)
		}
		if pwOpts.Captures == nil {
			pwOpts.Captures = map[string][]byte{}
		}
		pwOpts.Captures[outputs[i].Name] = pcm
	}
	pw := pwtest.New(t, pwOpts)
	draOpts := dra.Options{
		RegistrarDir: filepath.Join(dir, "plugins_registry"), PluginDir: filepath.Join(dir, "plugins", audio.DriverName),
		CDIDir: filepath.Join(dir, "cdi"), SettleQuiet: 300 * time.Millisecond,
	}
	cfg.Hardware, cfg.Remote, cfg.PipeWireDir, cfg.DRA = hw, pw.Remote(), pw.PipeWireConfD, draOpts
	if opts.Tune != nil {
		opts.Tune(&cfg)
	}
	opCtx, stopOp := context.WithCancel(ctx)
	opDone := make(chan error, 1)
	go func() { opDone <- audio.Run(opCtx, cfg) }()
	t.Cleanup(func() { stopOp(); <-opDone })
	return &audioNode{ctx: ctx, cluster: cluster, client: client, cards: cards, outputs: outputs, pw: pw, dra: draOpts}
}

// TestAudioOperator runs declare and the operator against recorded cards,
// real PipeWire and WirePlumber, and the real control plane.
func TestAudioOperator(t *testing.T) {
	a := startAudioNode(t, audioNodeOptions{})
	ctx, cluster, client, cards, outputs, pw, draOpts := a.ctx, a.cluster, a.client, a.cards, a.outputs, a.pw, a.dra

	dp := node + "-pci-0000-00-1f-3-hdmi-3" // the Samsung's DP output
	bare := node + "-pci-0000-00-1f-3-hdmi-1"
	slice := waitForDriverSlice(t, ctx, cluster, audio.DriverName, func(s *resourceapi.ResourceSlice) bool {
		return hasDevice(s, dp) && hasDevice(s, bare) && !deviceTainted(s, dp)
	})
	for _, d := range slice.Spec.Devices {
		if d.Name == bare && !slices.ContainsFunc(d.Taints, func(t resourceapi.DeviceTaint) bool { return t.Key == audio.TaintNoMonitor }) {
			t.Fatalf("monitorless HDMI output not tainted no-monitor: %v", d.Taints)
		}
		if d.Name == dp && d.Attributes["nodeName"].StringValue == nil {
			t.Fatal("DP output with a live node has no nodeName")
		}
	}

	// A consumer claim selecting the monitor's name gets the DP output and
	// a CDI spec with the runtime mount and both variables.
	claim := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "desk-monitor"},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
			Name: "speakers", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "audio-sink",
				Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
					Expression: `has(device.attributes["audio.liken.sh"].monitorName) && device.attributes["audio.liken.sh"].monitorName == "U28E590"`}}}},
		}}}},
	}
	allocated := createWithPod(t, ctx, cluster, claim, "player-desk")
	if got := allocated.Status.Allocation.Devices.Results[0].Device; got != dp {
		t.Fatalf("claim allocated %s, want %s", got, dp)
	}
	kl := kubelet.New(client, draOpts.RegistrarDir)
	t.Cleanup(func() { kl.Close() })
	plugin, err := kl.Discover(ctx, audio.DriverName)
	must(t, err)
	dev := prepareOK(t, ctx, plugin, allocated)
	spec, err := cdi.ReadSpec(filepath.Join(draOpts.CDIDir, audio.DriverName+"-"+string(allocated.UID)+".json"), 0)
	must(t, err)
	_, _, name, _ := cdiParts(dev.CdiDeviceIds[0])
	edits := spec.GetDevice(name).ContainerEdits
	var nodeName string
	for _, o := range outputs {
		if o.Output == dp {
			nodeName = o.Name
		}
	}
	if !slices.Contains(edits.Env, "PIPEWIRE_NODE="+nodeName) || !slices.Contains(edits.Env, "PIPEWIRE_REMOTE=/var/run/audio.liken.sh/"+string(allocated.UID)+"/pipewire-0") ||
		!slices.Contains(edits.Env, audio.EnvNodePrefix+"SPEAKERS="+nodeName) ||
		len(edits.Mounts) != 1 || edits.Mounts[0].HostPath != gate.SocketDir(pw.RuntimeDir, string(allocated.UID)) ||
		edits.Mounts[0].ContainerPath != audio.ContainerDir(string(allocated.UID)) {
		t.Fatalf("CDI edits %+v", edits)
	}
	// The consumer's mount holds the claim's socket alone, and through it
	// the claimed sink is the only node there is.
	entries, err := os.ReadDir(edits.Mounts[0].HostPath)
	must(t, err)
	if len(entries) != 1 || entries[0].Name() != "pipewire-0" {
		t.Fatalf("the consumer's mount holds %v", entries)
	}
	dumpCmd := pw.Command(ctx, "pw-dump", "-N")
	dumpCmd.Env = append(dumpCmd.Env, "PIPEWIRE_REMOTE="+filepath.Join(edits.Mounts[0].HostPath, "pipewire-0"))
	seen, err := dumpCmd.Output()
	must(t, err)
	if g, err := pipewire.ParseDump(seen); err != nil || len(g.Nodes) != 1 || g.Nodes[0].Name != nodeName {
		t.Fatalf("through the claim socket: %+v, %v", g, err)
	}
	// Unprepare closes the claim's socket.
	uresp, err := plugin.Unprepare(ctx, allocated)
	must(t, err)
	if e := uresp.Claims[string(allocated.UID)].GetError(); e != "" {
		t.Fatalf("unprepare: %s", e)
	}
	for {
		if _, err := os.Stat(edits.Mounts[0].HostPath); os.IsNotExist(err) {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the claim's socket directory outlived its unprepare")
		}
		time.Sleep(50 * time.Millisecond)
	}

	// The monitor is unplugged: the ELD goes, the output gains its taints,
	// and a new claim on it parks.
	rec, err := cards.Recorded(0)
	must(t, err)
	must(t, rec.SetELD(7, nil))
	waitForDriverSlice(t, ctx, cluster, audio.DriverName, func(s *resourceapi.ResourceSlice) bool {
		for _, d := range s.Spec.Devices {
			if d.Name == dp {
				return slices.ContainsFunc(d.Taints, func(t resourceapi.DeviceTaint) bool { return t.Key == audio.TaintNoMonitor })
			}
		}
		return false
	})
	again := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "desk-again"},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
			Name: "speakers", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "audio-sink",
				Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
					Expression: fmt.Sprintf(`device.attributes["audio.liken.sh"].sink == %q`, dp)}}}},
		}}}},
	}
	_, err = client.ResourceV1().ResourceClaims("default").Create(ctx, again, metav1.CreateOptions{})
	must(t, err)
	p := podFor(again, "player-again")
	_, err = client.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{})
	must(t, err)
	_, err = cluster.WaitForPodUnschedulable(ctx, "default", "player-again")
	must(t, err)

	// The kubelet's health stream (KEP-4680) says why, in the words a
	// pod's allocatedResourcesStatus shows, with the lease the core sets.
	health, msg, lease := waitDeviceHealth(t, ctx, plugin, dp, func(h drahealthv1.HealthStatus, msg string) bool {
		return h == drahealthv1.HealthStatus_UNHEALTHY && msg == audio.ProblemNoMonitor
	})
	t.Logf("the unplugged monitor's output on the health stream: %s %q, lease %d s", health, msg, lease)
	if lease <= 0 {
		t.Errorf("health lease %d s, want the driver's own", lease)
	}
}

// waitDeviceHealth follows the driver's health stream until device's
// health satisfies ok (a minute at most, three resends) and returns what
// the stream said last.
func waitDeviceHealth(t testing.TB, ctx context.Context, plugin *kubelet.Plugin, device string, ok func(drahealthv1.HealthStatus, string) bool) (drahealthv1.HealthStatus, string, int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	stream, err := plugin.WatchHealth(ctx)
	must(t, err)
	var last *drahealthv1.DeviceHealth
	for {
		r, err := stream.Recv()
		if err != nil {
			t.Fatalf("health stream: %v; last about %s: %v", err, device, last)
		}
		for _, d := range r.GetDevices() {
			if d.GetDevice().GetDeviceName() != device {
				continue
			}
			last = d
			if ok(d.GetHealth(), d.GetMessage()) {
				return d.GetHealth(), d.GetMessage(), d.GetHealthCheckTimeoutSeconds()
			}
		}
	}
}

func deviceTainted(s *resourceapi.ResourceSlice, name string) bool {
	for _, d := range s.Spec.Devices {
		if d.Name == name {
			return len(d.Taints) > 0
		}
	}
	return true
}
