// SPDX-License-Identifier: Apache-2.0

package audio

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	audiov1 "github.com/liken-sh/operators/api/audio/v1alpha1"
	"github.com/liken-sh/operators/internal/pipewire"
)

func TestPlanLayouts(t *testing.T) {
	eps, _ := Endpoints("n", xpsCards(t))
	declared := Outputs(eps, "null", 48000, nil)
	jack, dp, bare := "n-pci-0000-00-1f-3-jack-out", "n-pci-0000-00-1f-3-hdmi-3", "n-pci-0000-00-1f-3-hdmi-1"
	nodeOf := func(name string) string {
		for _, o := range declared {
			if o.Output == name {
				return o.Name
			}
		}
		t.Fatalf("%s not declared", name)
		return ""
	}
	idle := &pipewire.Graph{Nodes: []pipewire.Node{{ID: 40, Name: nodeOf(dp), MediaClass: pipewire.MediaClassSink}}}
	playing := &pipewire.Graph{
		Nodes: []pipewire.Node{{ID: 40, Name: nodeOf(dp), MediaClass: pipewire.MediaClassSink}, {ID: 41, Name: "player", MediaClass: "Stream/Output/Audio"}},
		Links: []pipewire.Link{{ID: 50, OutputNode: 41, InputNode: 40}},
	}
	// A Bluetooth speaker's node is not declared, yet a restart cuts it.
	speaker := &pipewire.Graph{
		Nodes: []pipewire.Node{{ID: 60, Name: "bluez_output.A0_AB_51_33_B7_12.1", MediaClass: pipewire.MediaClassSink}, {ID: 61, Name: "player"}},
		Links: []pipewire.Link{{ID: 62, OutputNode: 61, InputNode: 60}},
	}
	six := []string{"FL", "FR", "RL", "RR", "FC", "LFE"}

	// Nothing asked: nothing changes, every Sink applied.
	p := PlanLayouts(eps, nil, declared, idle)
	if len(p.Changed) != 0 || p.Outputs != nil {
		t.Fatalf("no spec changed %v", p.Changed)
	}
	if c := LayoutApplied(dp, p, false); c.Status != metav1.ConditionTrue || c.Reason != audiov1.ReasonApplied {
		t.Errorf("idle, nothing asked: %+v", c)
	}

	// A spec layout on an idle machine: the declaration keeps its PCM set
	// and only the jack's layout changes.
	p = PlanLayouts(eps, map[string][]string{jack: six}, declared, idle)
	if _, ok := p.Changed[jack]; !ok || len(p.Changed) != 1 || p.Busy || len(p.Outputs) != len(declared) {
		t.Fatalf("plan %+v", p)
	}
	for i, o := range p.Outputs {
		want := declared[i].Positions
		if o.Output == jack {
			want = six
		}
		if !slices.Equal(o.Positions, want) || o.Name != declared[i].Name {
			t.Errorf("output %s: %v, want %v", o.Output, o.Positions, want)
		}
	}
	if c := LayoutApplied(jack, p, true); c.Reason != audiov1.ReasonRestarting {
		t.Errorf("after the rewrite: %+v", c)
	}

	// A stream on any audio node holds the change.
	for name, g := range map[string]*pipewire.Graph{"declared sink": playing, "speaker": speaker, "no graph": nil} {
		p = PlanLayouts(eps, map[string][]string{jack: six}, declared, g)
		if !p.Busy || p.Outputs != nil {
			t.Errorf("%s: busy %v, outputs %d", name, p.Busy, len(p.Outputs))
		}
		if c := LayoutApplied(jack, p, false); c.Reason != audiov1.ReasonAwaitingIdle || c.Status != metav1.ConditionFalse {
			t.Errorf("%s: %+v", name, c)
		}
	}

	// A held change is not reported applied.
	p = PlanLayouts(eps, map[string][]string{jack: six}, declared, idle)
	p.Outputs, p.Held = nil, "a Sink could not be read"
	if c := LayoutApplied(jack, p, false); c.Reason != ReasonPending {
		t.Errorf("held: %+v", c)
	}

	// A port declared with no monitor (no positions) whose new monitor is
	// stereo restarts nothing: none declared runs as stereo.
	noLayout := slices.Clone(declared)
	for i := range noLayout {
		if noLayout[i].Output == dp {
			noLayout[i].Channels, noLayout[i].Positions = 0, nil
		}
	}
	if p = PlanLayouts(eps, nil, noLayout, idle); len(p.Changed) != 0 {
		t.Errorf("a stereo monitor on a port declared with none: %v", p.Changed)
	}

	// An output the declaration does not hold has no layout running.
	var without []pipewire.Output
	for _, o := range declared {
		if o.Output != bare {
			without = append(without, o)
		}
	}
	p = PlanLayouts(eps, nil, without, idle)
	if c := LayoutApplied(bare, p, false); c.Reason != ReasonNotDeclared || c.Status != metav1.ConditionFalse {
		t.Errorf("undeclared output: %+v", c)
	}

	// A port with no monitor keeps a layout its monitor's ELD gave, but
	// not one a spec.layout that is gone asked for.
	for src, wantChange := range map[string]bool{"ELD": false, "Spec": true} {
		kept := slices.Clone(declared)
		for i := range kept {
			if kept[i].Output == bare {
				kept[i].Channels, kept[i].Positions = 6, six
				kept[i].Extra = map[string]string{LayoutSourceKey: src}
			}
		}
		p = PlanLayouts(eps, nil, kept, idle)
		if _, changed := p.Changed[bare]; changed != wantChange {
			t.Errorf("declared from %s, no spec now: changed %v, want %v (wanted %v)", src, changed, wantChange, p.Wanted[bare])
		}
		if wantChange {
			for _, o := range p.Outputs {
				if o.Output == bare && (len(o.Positions) != 0 || o.Extra[LayoutSourceKey] != "") {
					t.Errorf("the rewrite keeps %v from %q", o.Positions, o.Extra[LayoutSourceKey])
				}
			}
		}
	}
}
