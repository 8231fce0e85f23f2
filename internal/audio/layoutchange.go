// SPDX-License-Identifier: Apache-2.0

package audio

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	audiov1 "github.com/liken-sh/operators/api/audio/v1alpha1"
	"github.com/liken-sh/operators/internal/alsa"
	"github.com/liken-sh/operators/internal/pipewire"
)

// LayoutPlan is what one pass decided about channel layouts.
type LayoutPlan struct {
	// Wanted is each Sink's layout now (WantedLayout), by device name.
	Wanted map[string]alsa.Layout
	// Changed are the Sinks whose wanted layout differs from the one
	// PipeWire was started with, or that are to be withheld (Withheld)
	// or declared again, by device name, with the old layout.
	Changed map[string][]string
	// Busy is true when a stream is linked to a node this operator
	// declared: the change waits.
	Busy bool
	// Outputs is the declaration to write when Changed is not empty and
	// Busy is false: the PCM set PipeWire was started with, with the new
	// layouts.
	Outputs []pipewire.Output
	// Undeclared are the Sinks the declaration does not hold (a PCM that
	// appeared after PipeWire started): no layout of theirs runs.
	Undeclared map[string]bool
	// Held, when set, says why a change that is due was not written this
	// pass (a Sink that could not be read, a failed write); Unknown, when
	// set, says why the running layouts cannot be told at all (the
	// declaration is unreadable). The caller sets both.
	Held, Unknown string
}

// PlanLayouts compares each playback endpoint's wanted layout (spec:
// spec.layout by device name) with the declaration PipeWire was started
// with (declared), against graph g. Endpoints the declaration does not
// hold are left alone: a PCM that appeared later gets no node until the
// pod is replaced, so it has no layout to change either. A nil g (no
// graph) counts as busy: nothing is rewritten blind.
func PlanLayouts(eps []Endpoint, spec map[string][]string, declared []pipewire.Output, g *pipewire.Graph) LayoutPlan {
	plan := LayoutPlan{Wanted: map[string]alsa.Layout{}, Changed: map[string][]string{}, Undeclared: map[string]bool{}}
	byName := map[string]int{}
	withheld := map[string]string{}
	for i, d := range declared {
		byName[d.Output] = i
	}
	for _, e := range eps {
		if e.Capture() {
			continue
		}
		i, ok := byName[e.Name]
		if !ok {
			plan.Wanted[e.Name] = ChooseLayout(e, spec[e.Name])
			plan.Undeclared[e.Name] = true
			continue
		}
		withheld[e.Name] = wantedWithheld(e, declared[i])
		w := WantedLayout(e, spec[e.Name], declared[i])
		plan.Wanted[e.Name] = w
		if !sameLayout(w.Positions, declared[i].Positions) || withheld[e.Name] != declared[i].Withheld {
			plan.Changed[e.Name] = declared[i].Positions
		}
	}
	if len(plan.Changed) == 0 {
		return plan
	}
	plan.Busy = g == nil || anyLinked(g, declared)
	if plan.Busy {
		return plan
	}
	plan.Outputs = slices.Clone(declared)
	for i, d := range plan.Outputs {
		if _, ok := plan.Changed[d.Output]; ok {
			plan.Outputs[i].Extra = maps.Clone(d.Extra)
			setLayout(&plan.Outputs[i], plan.Wanted[d.Output])
			plan.Outputs[i].Withheld = withheld[d.Output]
		}
	}
	return plan
}

// wantedWithheld is Withheld, except that an output whose monitor went
// away (or whose ELD cannot be read) keeps what it was declared with, as
// WantedLayout keeps its layout: most likely the same monitor comes back.
func wantedWithheld(e Endpoint, declared pipewire.Output) string {
	if e.PCM.HasELD && !e.PCM.ELD.Valid() {
		return declared.Withheld
	}
	return Withheld(e)
}

// stereo is what PipeWire runs a node with no declared positions as.
var stereo = []string{"FL", "FR"}

// sameLayout compares two layouts as PipeWire runs them: none declared
// is stereo, so a stereo monitor plugged into a port declared with none
// restarts nothing.
func sameLayout(a, b []string) bool {
	if len(a) == 0 {
		a = stereo
	}
	if len(b) == 0 {
		b = stereo
	}
	return slices.Equal(a, b)
}

// anyLinked reports whether a stream is linked to any node of the
// declaration, or to any other audio device node (a Bluetooth speaker's,
// which WirePlumber makes): a restart of PipeWire would cut it, whichever
// node it plays to or records from.
func anyLinked(g *pipewire.Graph, declared []pipewire.Output) bool {
	names := make(map[string]bool, len(declared))
	for _, d := range declared {
		names[d.Name] = true
	}
	for _, n := range g.Nodes {
		device := n.MediaClass == pipewire.MediaClassSink || n.MediaClass == pipewire.MediaClassSource
		if (names[n.Name] || device) && g.Linked(n.ID) {
			return true
		}
	}
	return false
}

// Reasons of LayoutApplied besides the API's Applied, AwaitingIdle and
// Restarting.
const (
	// ReasonNotDeclared: the output is not in the declaration PipeWire
	// runs.
	ReasonNotDeclared = "NotDeclared"
	// ReasonPending: a change is due but was not written this pass.
	ReasonPending = "Pending"
	// ReasonDeclarationUnreadable: the declaration cannot be read, so
	// what runs is unknown.
	ReasonDeclarationUnreadable = "DeclarationUnreadable"
)

// LayoutApplied is a Sink's LayoutApplied condition: AwaitingIdle while
// its change waits for the streams to stop, Restarting from the rewrite
// until PipeWire is serving again (the declaration is newer than the
// socket: the file and the socket's times are the whole record, so an
// operator restart in the middle reads the same answer), Applied
// otherwise.
func LayoutApplied(name string, plan LayoutPlan, restarting bool) metav1.Condition {
	c := metav1.Condition{Type: audiov1.ConditionLayoutApplied}
	w := plan.Wanted[name]
	old, changed := plan.Changed[name]
	switch {
	case plan.Unknown != "":
		c.Status, c.Reason, c.Message = metav1.ConditionUnknown, ReasonDeclarationUnreadable, plan.Unknown
		return c
	case plan.Undeclared[name]:
		c.Status, c.Reason = metav1.ConditionFalse, ReasonNotDeclared
		c.Message = "this output appeared after PipeWire started; it gets a node, and its layout, when the pod is replaced"
		return c
	case changed && plan.Busy:
		c.Status, c.Reason = metav1.ConditionFalse, audiov1.ReasonAwaitingIdle
		c.Message = fmt.Sprintf("layout %s waits until no stream plays or records on this machine's outputs and inputs (running with %s)", spell(w.Positions), spell(old))
		return c
	case changed && plan.Held != "":
		c.Status, c.Reason = metav1.ConditionFalse, ReasonPending
		c.Message = fmt.Sprintf("layout %s is not written yet (running with %s): %s", spell(w.Positions), spell(old), plan.Held)
		return c
	}
	if restarting {
		c.Status, c.Reason = metav1.ConditionFalse, audiov1.ReasonRestarting
		c.Message = "PipeWire is restarting with a new declaration"
		return c
	}
	c.Status, c.Reason = metav1.ConditionTrue, audiov1.ReasonApplied
	c.Message = "PipeWire runs with layout " + spell(w.Positions)
	return c
}

// spell is a layout for people: "FL,FR" or "PipeWire's default".
func spell(positions []string) string {
	if len(positions) == 0 {
		return "PipeWire's default"
	}
	return strings.Join(positions, ",")
}

// DeclarationPending reports whether the declaration in dir was written
// after the PipeWire serving runtimeDir bound its socket: PipeWire has
// not loaded it yet. A missing socket or declaration is not pending.
func DeclarationPending(dir, runtimeDir string) bool {
	decl, err := os.Stat(filepath.Join(dir, pipewire.DeclarationFile))
	if err != nil {
		return false
	}
	sock, err := os.Stat(filepath.Join(runtimeDir, SocketName))
	if err != nil {
		return false
	}
	return decl.ModTime().After(sock.ModTime())
}
