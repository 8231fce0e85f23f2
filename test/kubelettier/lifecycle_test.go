// SPDX-License-Identifier: Apache-2.0

//go:build kubelettier

package kubelettier

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/liken-sh/operators/internal/audio"
	"github.com/liken-sh/operators/internal/bluetooth"
	"github.com/liken-sh/operators/internal/inventory"
	"github.com/liken-sh/operators/test/bluezsim"
)

// speakerNode is the PipeWire node the speaker consumer plays to, set by
// audioConsumer.
var speakerNode string

// restarts returns every container's restart count of a pod.
func restarts(p *corev1.Pod) map[string]int32 {
	out := map[string]int32{}
	for _, c := range append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		out[c.Name] = c.RestartCount
	}
	return out
}

func getPod(t testing.TB, ctx context.Context, namespace, name string) *corev1.Pod {
	t.Helper()
	p, err := cluster.Client().CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
	must(t, err)
	return p
}

// consumerSpecs names the CDI spec files of the consumers' claims in the
// default namespace: <driver>-<claim UID>.json, as the driver core names
// them.
func consumerSpecs(t testing.TB, ctx context.Context, claims map[string]string) []string {
	t.Helper()
	var out []string
	for claim, driver := range claims {
		c, err := cluster.Client().ResourceV1().ResourceClaims("default").Get(ctx, claim, metav1.GetOptions{})
		must(t, err)
		f := fmt.Sprintf("%s-%s.json", driver, c.UID)
		if _, err := os.Stat("/var/run/cdi/" + f); err != nil {
			t.Fatalf("claim %s is not prepared: %v", claim, err)
		}
		out = append(out, f)
	}
	return out
}

// running are the consumers that run through the lifecycle steps, with
// the driver of each one's claim.
var running = map[string]string{"speaker": audio.DriverName, "gamepad2": bluetooth.DriverName}

// watchSpecs polls /var/run/cdi every 50 ms until stop is called and
// reports each spec of want that went missing, with when it was first
// and last seen missing.
func watchSpecs(want []string) (stop func() []string) {
	done := make(chan struct{})
	type gap struct{ first, last time.Time }
	gaps := map[string]*gap{}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			for _, f := range want {
				if _, err := os.Stat("/var/run/cdi/" + f); err != nil {
					now := time.Now()
					if g := gaps[f]; g != nil {
						g.last = now
					} else {
						gaps[f] = &gap{now, now}
					}
				}
			}
			select {
			case <-done:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	})
	return func() []string {
		close(done)
		wg.Wait()
		var out []string
		for f, g := range gaps {
			out = append(out, fmt.Sprintf("%s missing from %s to %s", f, g.first.Format("15:04:05.000"), g.last.Format("15:04:05.000")))
		}
		return out
	}
}

// gamepadConsumer connects the gamepad and starts a consumer of it named
// name.
func gamepadConsumer(t *testing.T, ctx context.Context, name string) {
	sim, err := bluezsim.Attach("unix:path="+busSocket, "")
	must(t, err)
	defer sim.Stop()
	// Connected already (a running consumer) or not (a fresh bluetoothd).
	_ = sim.Connect(AdapterName, padAddress)
	// A consumer that waits for its controller to come back: a bluetooth
	// pod replaced drops the link until the controller reconnects, and
	// the disconnected taint (NoExecute) would otherwise evict it.
	claim := directMode(claimFor(name, "bluetooth-input", ""))
	claim.Spec.Devices.Requests[0].Exactly.Tolerations = []resourceapi.DeviceToleration{{
		Key: bluetooth.TaintDisconnected, Operator: resourceapi.DeviceTolerationOpExists, Effect: resourceapi.DeviceTaintEffectNoExecute,
	}}
	r, _, _, _ := startConsumer(t, ctx, claim, consumerPod(name, "report", name, false))
	if r.Dev[padEventNode] == "" {
		t.Fatalf("consumer %s has no %s", name, padEventNode)
	}
}

// pipewireKill kills the PipeWire daemon in the audio pod: only the
// pipewire container restarts, and the consumer's stream flows again.
func pipewireKill(t *testing.T, ctx context.Context) {
	p := waitDaemonPod(t, ctx, "audio-operator", time.Minute, "", podReady)
	before := restarts(p)
	consumerBefore := restarts(getPod(t, ctx, "default", "speaker"))
	daemon := containerPid(t, p, "pipewire", "pipewire")
	killed := time.Now()
	must(t, syscall.Kill(daemon, syscall.SIGKILL))
	waitRestarted(t, ctx, p, "pipewire", before["pipewire"], 2*time.Minute, containerReady)
	if n := restarts(getPod(t, ctx, ns, p.Name))["pipewire"]; n != before["pipewire"]+1 {
		t.Fatalf("the pipewire container restarted %d times for one kill", n-before["pipewire"])
	}
	took := waitLinked(t, ctx, speakerNode, time.Minute)
	t.Logf("FIGURE PipeWire killed → consumer's stream linked again in %s (of which waiting for the graph %s)", time.Since(killed).Round(time.Millisecond), took.Round(time.Millisecond))
	after := restarts(getPod(t, ctx, ns, p.Name))
	for _, name := range []string{"wireplumber", "operator", "capture"} {
		if after[name] != before[name] {
			t.Errorf("%s restarted (%d → %d); only pipewire should have", name, before[name], after[name])
		}
	}
	if c := restarts(getPod(t, ctx, "default", "speaker")); c["consumer"] != consumerBefore["consumer"] {
		t.Errorf("the consumer restarted")
	}
}

// kubeletRestart restarts the kubelet with both consumers running: both
// plugins register again (new claims of both drivers are prepared), and
// the running consumers keep their devices.
func kubeletRestart(t *testing.T, ctx context.Context) {
	gamepadConsumer(t, ctx, "gamepad2")
	gaps := watchSpecs(consumerSpecs(t, ctx, running))
	before := map[string]map[string]int32{
		"speaker":  restarts(getPod(t, ctx, "default", "speaker")),
		"gamepad2": restarts(getPod(t, ctx, "default", "gamepad2")),
	}
	theNode.StopKubelet()
	began := time.Now()
	slicesBack := watchSlices(ctx, began, inventory.DriverName, audio.DriverName, bluetooth.DriverName)
	must(t, theNode.StartKubelet(ctx))
	// A new claim of each driver is prepared only by a registered plugin.
	r, _, p2, _ := startConsumer(t, ctx, claimFor("speaker2", "audio-sink", "!("+monitorSink+")"), consumerPod("speaker2", "report", "speaker2", false))
	for _, c := range p2.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			t.Logf("speaker2 scheduled %s after the kubelet's restart (%s)", c.LastTransitionTime.Sub(began).Round(time.Second), c.Message)
		}
	}
	if events, err := cluster.Client().CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=speaker2"}); err == nil {
		for _, e := range events.Items {
			t.Logf("speaker2 event: %s %s: %s", e.Reason, e.Type, e.Message)
		}
	}
	for _, line := range slicesBack() {
		t.Logf("FIGURE kubelet restart: %s", line)
	}
	if r.Env["PIPEWIRE_NODE"] == "" || r.Env["PIPEWIRE_NODE"] == speakerNode {
		t.Errorf("the second speaker got PIPEWIRE_NODE %q", r.Env["PIPEWIRE_NODE"])
	}
	t.Logf("FIGURE kubelet restart → a new audio consumer running in %s", time.Since(began).Round(time.Millisecond))
	// The gamepad is held by gamepad2; a claim of the media bus is the
	// Bluetooth driver's other device.
	deletePod(t, ctx, "default", "speaker2")
	must(t, cluster.Client().ResourceV1().ResourceClaims("default").Delete(ctx, "speaker2", metav1.DeleteOptions{}))
	for _, name := range []string{"speaker", "gamepad2"} {
		p := getPod(t, ctx, "default", name)
		if p.Status.Phase != corev1.PodRunning || restarts(p)["consumer"] != before[name]["consumer"] {
			t.Errorf("consumer %s after the kubelet restart: %s", name, describe(p))
		}
	}
	if g := gaps(); len(g) > 0 {
		t.Errorf("prepared claims' CDI specs went missing across the kubelet restart: %v", g)
	}
	waitLinked(t, ctx, speakerNode, 30*time.Second)
	for _, driver := range []string{bluetooth.DriverName, audio.DriverName} {
		if registrations(t, driver) == 0 {
			t.Errorf("the restarted kubelet has not registered %s again (%s)", driver, theNode.KubeletLog())
		}
	}
}

// watchSlices polls every 100 ms, from began until the returned function
// is called, whether each driver has a ResourceSlice on the node, and
// reports for each when its slices went (the kubelet removes the node's
// slices when it starts) and when they were back, relative to began.
func watchSlices(ctx context.Context, began time.Time, drivers ...string) func() []string {
	ctx, cancel := context.WithCancel(ctx)
	type span struct{ gone, back time.Duration }
	spans := map[string]*span{}
	var wg sync.WaitGroup
	wg.Go(func() {
		for ctx.Err() == nil {
			list, err := cluster.Client().ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
			if err == nil {
				have := map[string]bool{}
				for _, sl := range list.Items {
					if sl.Spec.NodeName != nil && *sl.Spec.NodeName == theNode.Name() {
						have[sl.Spec.Driver] = true
					}
				}
				now := time.Since(began)
				for _, d := range drivers {
					sp := spans[d]
					switch {
					case !have[d] && sp == nil:
						spans[d] = &span{gone: now}
					case have[d] && sp != nil && sp.back == 0:
						sp.back = now
					}
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	})
	return func() []string {
		cancel()
		wg.Wait()
		var out []string
		for _, d := range drivers {
			switch sp := spans[d]; {
			case sp == nil:
				out = append(out, d+": slices never went")
			case sp.back == 0:
				out = append(out, fmt.Sprintf("%s: slices gone at +%s, not back yet", d, sp.gone.Round(100*time.Millisecond)))
			default:
				out = append(out, fmt.Sprintf("%s: slices gone at +%s, back at +%s", d, sp.gone.Round(100*time.Millisecond), sp.back.Round(100*time.Millisecond)))
			}
		}
		return out
	}
}

// operatorReplaced deletes each operator's pod with a consumer running:
// the DaemonSet's new pod takes over the prepared claims without
// unpreparing them.
func operatorReplaced(t *testing.T, ctx context.Context) {
	for _, app := range []string{"audio-operator", "bluetooth-operator"} {
		ready := podReady
		old := waitDaemonPod(t, ctx, app, time.Minute, "", ready)
		gaps := watchSpecs(consumerSpecs(t, ctx, running))
		began := time.Now()
		must(t, cluster.Client().CoreV1().Pods(ns).Delete(ctx, old.Name, metav1.DeleteOptions{}))
		waitDaemonPod(t, ctx, app, 3*time.Minute, string(old.UID), ready)
		t.Logf("FIGURE %s pod deleted → replacement ready in %s", app, time.Since(began).Round(time.Millisecond))
		if app == "bluetooth-operator" {
			reconnectPad(t, ctx)
		}
		if g := gaps(); len(g) > 0 {
			t.Errorf("%s replaced: prepared claims' CDI specs went missing: %v", app, g)
		}
	}
	waitLinked(t, ctx, speakerNode, time.Minute)
}

// rollingUpdate moves each DaemonSet to a new tag of its images: the
// update completes with maxSurge 0 (never two pods at once) while the
// consumers' claims stay prepared.
func rollingUpdate(t *testing.T, ctx context.Context) {
	images := map[string][]string{
		"bluetooth-operator": {
			"bondfetch=" + BondfetchRef, "bluetoothd=" + BluezSimRef, "operator=ghcr.io/liken-sh/bluetooth-operator:latest",
		},
		"audio-operator": {
			"declare=ghcr.io/liken-sh/audio-operator:latest", "pipewire=ghcr.io/liken-sh/audio-operator:latest",
			"wireplumber=ghcr.io/liken-sh/audio-operator:latest", "operator=ghcr.io/liken-sh/audio-operator:latest",
			"capture=ghcr.io/liken-sh/audio-operator:latest",
		},
	}
	for _, ds := range []string{"bluetooth-operator", "audio-operator"} {
		ready := podReady
		old := waitDaemonPod(t, ctx, ds, time.Minute, "", ready)
		var set []string
		for _, ci := range images[ds] {
			name, ref, _ := strings.Cut(ci, "=")
			repo, _, _ := strings.Cut(ref, ":")
			newRef := repo + ":rollout"
			if _, err := theNode.Ctr(ctx, "images", "tag", "--force", ref, newRef); err != nil {
				t.Fatal(err)
			}
			set = append(set, name+"="+newRef)
		}
		gaps := watchSpecs(consumerSpecs(t, ctx, running))
		began := time.Now()
		kubectl(t, ctx, append([]string{"-n", ns, "set", "image", "daemonset/" + ds}, set...)...)
		var most int
		poll(t, ds+" rolled out", 4*time.Minute, func() (bool, string) {
			list, err := cluster.Client().CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + ds})
			if err != nil {
				return false, err.Error()
			}
			var live int
			var states []string
			var done bool
			for i := range list.Items {
				p := &list.Items[i]
				states = append(states, describe(p))
				if p.Status.Phase == corev1.PodRunning {
					live++
				}
				if p.UID != old.UID && p.DeletionTimestamp == nil && ready(p) && strings.HasSuffix(p.Spec.Containers[0].Image, ":rollout") {
					done = true
				}
			}
			most = max(most, live)
			return done && len(list.Items) == 1, strings.Join(states, "; ")
		})
		t.Logf("FIGURE %s rolling update to new tags: %s", ds, time.Since(began).Round(time.Millisecond))
		if ds == "bluetooth-operator" {
			reconnectPad(t, ctx)
		}
		if most > 1 {
			t.Errorf("%s: %d pods ran at once during the update (maxSurge 0)", ds, most)
		}
		if g := gaps(); len(g) > 0 {
			t.Errorf("%s update: prepared claims' CDI specs went missing: %v", ds, g)
		}
	}
	for _, name := range []string{"speaker", "gamepad2"} {
		if p := getPod(t, ctx, "default", name); p.Status.Phase != corev1.PodRunning {
			t.Errorf("consumer %s after the updates: %s", name, describe(p))
		}
	}
	waitLinked(t, ctx, speakerNode, time.Minute)
}

// unprepareOnDelete deletes the remaining consumers: each claim's CDI spec
// goes.
func unprepareOnDelete(t *testing.T, ctx context.Context) {
	for _, c := range []struct{ pod, driver string }{{"speaker", audio.DriverName}, {"gamepad2", bluetooth.DriverName}} {
		claim, err := cluster.Client().ResourceV1().ResourceClaims("default").Get(ctx, c.pod, metav1.GetOptions{})
		must(t, err)
		spec := fmt.Sprintf("%s-%s.json", c.driver, claim.UID)
		if _, err := os.Stat("/var/run/cdi/" + spec); err != nil {
			t.Errorf("%s's CDI spec before the delete: %v (have %v)", c.pod, err, cdiSpecs(t, c.driver))
		}
		deletePod(t, ctx, "default", c.pod)
		waitSpecRemoved(t, c.pod, c.driver, spec)
	}
}

// waitSpecRemoved waits until the CDI spec file spec of driver, the claim
// of pod, is gone from /var/run/cdi: the driver unprepared the claim.
func waitSpecRemoved(t testing.TB, pod, driver, spec string) {
	t.Helper()
	poll(t, pod+"'s CDI spec removed", 30*time.Second, func() (bool, string) {
		_, err := os.Stat("/var/run/cdi/" + spec)
		return os.IsNotExist(err), fmt.Sprint(cdiSpecs(t, driver))
	})
}

// reconnectPad connects the gamepad again once a new bluetooth pod's
// simulator owns org.bluez, as a controller reconnects to a restarted
// bluetoothd, and waits until it is published untainted.
func reconnectPad(t testing.TB, ctx context.Context) {
	t.Helper()
	sim, err := bluezsim.Attach("unix:path="+busSocket, "")
	must(t, err)
	defer sim.Stop()
	must(t, sim.WaitBlueZ(ctx, time.Minute))
	poll(t, "the gamepad reconnected", 30*time.Second, func() (bool, string) {
		if err := sim.Connect(AdapterName, padAddress); err != nil {
			return false, err.Error()
		}
		return true, ""
	})
}
