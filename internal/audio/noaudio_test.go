// SPDX-License-Identifier: Apache-2.0

package audio

import (
	"slices"
	"strings"
	"testing"

	audiov1 "github.com/liken-sh/operators/api/audio/v1alpha1"
	"github.com/liken-sh/operators/internal/alsa"
	"github.com/liken-sh/operators/internal/alsa/eld"
	"github.com/liken-sh/operators/internal/pipewire"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestMonitorWithoutAudio: the DP monitor's ELD lists no audio format
// (its speakers are off): the output is tainted so that nothing is
// scheduled to play there, and the monitor's presence, name and the
// connection type are still reported.
func TestMonitorWithoutAudio(t *testing.T) {
	eps, _ := Endpoints("kitchen", xpsCards(t))
	live := map[string]bool{}
	var dp *Endpoint
	for i := range eps {
		live[eps[i].NodeName] = true
		if eps[i].Name == "kitchen-pci-0000-00-1f-3-hdmi-3" {
			dp = &eps[i]
		}
	}
	if dp == nil || dp.PCM.ELD.ELD == nil || !dp.PCM.ELD.ELD.Audio() {
		t.Fatal("the recorded DP output has no monitor with audio to start from")
	}
	silent := *dp.PCM.ELD.ELD
	silent.SADs = nil
	dp.PCM.ELD.ELD = &silent

	d := device(*dp, true)
	if !hasTaint(d, TaintNoAudio) || !hasTaint(d, TaintDisconnected) || hasTaint(d, TaintNoMonitor) {
		t.Errorf("taints %v, want no-audio and disconnected, not no-monitor", d.Taints)
	}
	if d.Problem != ProblemNoAudio {
		t.Errorf("problem %q, want %q", d.Problem, ProblemNoAudio)
	}
	for attr, want := range map[string]string{"connectionType": "displayport", "monitorName": "U28E590"} {
		if v := d.Attributes[resourceapi.QualifiedName(attr)].StringValue; v == nil || *v != want {
			t.Errorf("%s = %v, want %q", attr, v, want)
		}
	}
	if _, ok := d.Attributes["lpcmChannels"]; ok {
		t.Error("an lpcmChannels attribute for a monitor with no PCM format")
	}
	c := connected(*dp, "displayport")
	if c.Status != metav1.ConditionTrue || c.Reason != ReasonMonitorPresent || c.Message == "the monitor's ELD is valid" {
		t.Errorf("Connected = %+v, want True (present) saying it takes no audio", c)
	}
}

// TestNodeInErrorIsNotReady: PipeWire keeps an ALSA node whose device
// failed to open in its error state, with the reason in info.error; the
// endpoint's Ready condition says so with PipeWire's words.
func TestNodeInErrorIsNotReady(t *testing.T) {
	eps, _ := Endpoints("kitchen", xpsCards(t))
	e := eps[0]
	running := &pipewire.Node{Name: e.NodeName, State: pipewire.NodeStateRunning}
	failed := &pipewire.Node{Name: e.NodeName, State: pipewire.NodeStateError, Error: "Start error: Device or resource busy"}
	readyOf := func(n *pipewire.Node) metav1.Condition {
		for _, c := range EndpointStatus("kitchen", e, n, nil, nil).Conditions {
			if c.Type == audiov1.ConditionReady {
				return c
			}
		}
		t.Fatal("no Ready condition")
		return metav1.Condition{}
	}
	if c := readyOf(running); c.Status != metav1.ConditionTrue {
		t.Errorf("a running node: Ready %+v", c)
	}
	c := readyOf(failed)
	if c.Status != metav1.ConditionFalse || c.Reason != ReasonNodeError || !strings.Contains(c.Message, "Device or resource busy") {
		t.Errorf("a node in error: Ready %+v, want False, NodeError, with PipeWire's message", c)
	}
	if c := readyOf(nil); c.Reason != ReasonNoNode {
		t.Errorf("no node: Ready %+v", c)
	}
}

// TestMonitorWithoutAudioIsWithheld: an output whose monitor takes no
// audio is declared withheld (PipeWire gets no node for it), its Ready
// condition says why, and once the monitor lists a format again the plan
// declares it again (and withholds it again when the formats go), while
// an unplugged monitor changes nothing.
func TestMonitorWithoutAudioIsWithheld(t *testing.T) {
	eps, _ := Endpoints("kitchen", xpsCards(t))
	i := slices.IndexFunc(eps, func(e Endpoint) bool { return e.Name == "kitchen-pci-0000-00-1f-3-hdmi-3" })
	if i < 0 || !eps[i].PCM.ELD.Valid() || !eps[i].PCM.ELD.ELD.Audio() {
		t.Fatal("the recorded DP output has no monitor with audio to start from")
	}
	withAudio := slices.Clone(eps)
	silent := *eps[i].PCM.ELD.ELD
	silent.SADs = nil
	eps[i].PCM.ELD.ELD = &silent

	outs := Outputs(eps, "", 0, nil)
	for _, o := range outs {
		if (o.Output == eps[i].Name) != (o.Withheld != "") {
			t.Errorf("%s: withheld %q", o.Output, o.Withheld)
		}
	}
	if err := pipewire.CheckOutputs(outs); err != nil {
		t.Fatal(err)
	}
	st := EndpointStatus("kitchen", eps[i], nil, nil, nil)
	if c := st.Conditions[1]; c.Type != audiov1.ConditionReady || c.Status != metav1.ConditionFalse || c.Reason != ReasonWithheld || !strings.Contains(c.Message, "no audio format") {
		t.Errorf("Ready = %+v, want False, Withheld, saying why", c)
	}
	if st.ConnectionType != "displayport" {
		t.Errorf("connectionType %q", st.ConnectionType)
	}

	idle := &pipewire.Graph{}
	if plan := PlanLayouts(eps, nil, outs, idle); len(plan.Changed) != 0 {
		t.Errorf("nothing changed, plan %+v", plan.Changed)
	}
	plan := PlanLayouts(withAudio, nil, outs, idle)
	if _, ok := plan.Changed[eps[i].Name]; !ok || len(plan.Outputs) != len(outs) {
		t.Fatalf("the monitor lists formats again: changed %v, %d outputs", plan.Changed, len(plan.Outputs))
	}
	for _, o := range plan.Outputs {
		if o.Withheld != "" {
			t.Errorf("%s still withheld after the monitor listed formats", o.Output)
		}
	}
	back := PlanLayouts(eps, nil, plan.Outputs, idle)
	if _, ok := back.Changed[eps[i].Name]; !ok || back.Outputs == nil {
		t.Fatalf("the formats went again: changed %v", back.Changed)
	}
	unplugged := slices.Clone(eps)
	unplugged[i].PCM.ELD = alsa.ELDState{Err: eld.ErrEmpty}
	if p := PlanLayouts(unplugged, nil, outs, idle); len(p.Changed) != 0 {
		t.Errorf("an unplugged monitor changed %v", p.Changed)
	}
}
