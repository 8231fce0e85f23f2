// SPDX-License-Identifier: Apache-2.0

package audio

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2/ktesting"

	"github.com/liken-sh/operators/internal/alsa"
	"github.com/liken-sh/operators/internal/dra"
	"github.com/liken-sh/operators/internal/pipewire"
	"github.com/liken-sh/operators/test/poll"
	"github.com/liken-sh/operators/test/pwtest"
)

// An ELD that appears late, with no control event: the DP monitor's ELD
// is empty when the operator starts (published no-monitor), then the
// codec fills it in without notifying (alsa.Recorded.UpdateQuietly), and
// nothing else happens on the node: no control event, no graph change (the
// graph probe and the backstop are an hour away), no API object, which
// audio_passes_total shows. The operator's real loop against real
// PipeWire publishes the monitor all the same, from a pass the ELD poll
// woke; the time it took is logged beside its target, the settle
// window's cap.
func TestLateELDWithoutAnEvent(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	dir := t.TempDir()
	hw := xpsHardware(t)
	cards, _, err := hw.Cards()
	if err != nil {
		t.Fatal(err)
	}
	eps, _ := Endpoints("n", cards)
	const dpName = "n-pci-0000-00-1f-3-hdmi-3" // the Samsung's DP output
	i := slices.IndexFunc(eps, func(e Endpoint) bool { return e.Name == dpName })
	if i < 0 || !eps[i].PCM.ELD.Valid() {
		t.Fatalf("the recording has no DP output %s with a monitor", dpName)
	}
	dp := eps[i]
	rec, err := hw.Opener.(*alsa.DumpDir).Recorded(dp.PCM.Card())
	if err != nil {
		t.Fatal(err)
	}
	id := alsa.ELDElemID(dp.PCM.Device())
	ctl := rec.Open()
	block, err := ctl.Read(id)
	ctl.Close()
	if err != nil {
		t.Fatal(err)
	}
	// Declared with the monitor there, as at the pod's start; then the
	// monitor's ELD is gone before the operator reads the card.
	res, err := Declare(DeclareConfig{Hardware: hw, Node: "n", PipeWireDir: filepath.Join(dir, "pw"), WirePlumberDir: filepath.Join(dir, "wp"), ALSAPath: "null", Rate: 48000})
	if err != nil {
		t.Fatal(err)
	}
	outputs, err := pipewire.ReadDeclaration(res.Declaration)
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.UpdateQuietly(id, alsa.Value{Type: alsa.TypeBytes}); err != nil {
		t.Fatal(err)
	}
	pw := pwtest.New(t, pwtest.Options{Outputs: outputs})

	reg := prometheus.NewRegistry()
	client := fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", UID: "node-uid"}})
	opCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- Run(opCtx, Config{Node: "n", KubeClient: client, Hardware: hw, Remote: pw.Remote(), PipeWireDir: pw.PipeWireConfD,
			Backstop: time.Hour, GraphProbe: time.Hour, Registerer: reg,
			DRA: dra.Options{RegistrarDir: filepath.Join(dir, "reg"), PluginDir: filepath.Join(dir, "plugin"), CDIDir: filepath.Join(dir, "cdi"),
				SettleQuiet: 300 * time.Millisecond}})
	}()
	t.Cleanup(func() { stop(); <-done })

	published := func() (*resourceapi.Device, string) {
		list, err := client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err.Error()
		}
		for _, s := range list.Items {
			for _, d := range s.Spec.Devices {
				if d.Name == dpName {
					return &d, ""
				}
			}
		}
		return nil, "not published"
	}
	noMonitor := func(d *resourceapi.Device) bool {
		return slices.ContainsFunc(d.Taints, func(t resourceapi.DeviceTaint) bool { return t.Key == TaintNoMonitor })
	}
	poll.WaitFor(t, ctx, "the DP output published with no monitor", 60*time.Second, func() (bool, string) {
		d, why := published()
		return d != nil && noMonitor(d), why
	})
	// Let the start settle: PipeWire's and WirePlumber's first changes,
	// the claim gate's record. Settled is no new pass for 3 s, however
	// long the start takes on a slow host.
	before, since := passesByTrigger(t, reg), time.Now()
	poll.WaitFor(t, ctx, "the start settled (no pass for 3 s)", 2*time.Minute, func() (bool, string) {
		if now := passesByTrigger(t, reg); !maps.Equal(now, before) {
			before, since = now, time.Now()
		}
		return time.Since(since) >= 3*time.Second, fmt.Sprintf("passes %v", before)
	})

	if err := rec.UpdateQuietly(id, block); err != nil {
		t.Fatal(err)
	}
	arrived := time.Now()
	poll.WaitFor(t, ctx, "the DP output published with its monitor", 60*time.Second, func() (bool, string) {
		d, why := published()
		if d == nil {
			return false, why
		}
		name := d.Attributes["monitorName"].StringValue
		return !noMonitor(d) && name != nil && *name == "U28E590", ""
	})
	t.Logf("late ELD (no event) to the slice: %s (target: within the settle cap, %s)", time.Since(arrived).Round(time.Millisecond), dra.DefaultSettleCap)
	// Nothing but the ELD poll woke a pass meanwhile.
	after := passesByTrigger(t, reg)
	for trigger, n := range after {
		if trigger != triggerELD && n != before[trigger] {
			t.Errorf("%v passes woken by %q while the ELD arrived: the test is not one of an ELD alone", n-before[trigger], trigger)
		}
	}
	if after[triggerELD] == before[triggerELD] {
		t.Error("no pass was woken by the ELD poll")
	}
}

// passesByTrigger reads audio_passes_total from reg.
func passesByTrigger(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range fams {
		if f.GetName() != "audio_passes_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "trigger" {
					out[l.GetValue()] = m.GetCounter().GetValue()
				}
			}
		}
	}
	return out
}
