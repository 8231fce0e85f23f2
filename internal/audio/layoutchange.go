package audio

import (
	"fmt"
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
	// PipeWire was started with, by device name, with that old layout.
	Changed map[string][]string
	// Busy is true when a stream is linked to a node this operator
	// declared: the change waits.
	Busy bool
	// Outputs is the declaration to write when Changed is not empty and
	// Busy is false: the PCM set PipeWire was started with, with the new
	// layouts.
	Outputs []pipewire.Output
}

// PlanLayouts compares each playback endpoint's wanted layout (spec:
// spec.layout by device name) with the declaration PipeWire was started
// with (declared), against graph g. Endpoints the declaration does not
// hold are left alone: a PCM that appeared later gets no node until the
// pod is replaced, so it has no layout to change either. A nil g (no
// graph) counts as busy: nothing is rewritten blind.
func PlanLayouts(eps []Endpoint, spec map[string][]string, declared []pipewire.Output, g *pipewire.Graph) LayoutPlan {
	plan := LayoutPlan{Wanted: map[string]alsa.Layout{}, Changed: map[string][]string{}}
	byName := map[string]int{}
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
			continue
		}
		w := WantedLayout(e, spec[e.Name], declared[i])
		plan.Wanted[e.Name] = w
		if !slices.Equal(w.Positions, declared[i].Positions) {
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
			w := plan.Wanted[d.Output]
			plan.Outputs[i].Channels, plan.Outputs[i].Positions = w.Channels, w.Positions
		}
	}
	return plan
}

// anyLinked reports whether a stream is linked to any node of the
// declaration: a restart would cut it, whichever sink it plays to.
func anyLinked(g *pipewire.Graph, declared []pipewire.Output) bool {
	names := make(map[string]bool, len(declared))
	for _, d := range declared {
		names[d.Name] = true
	}
	for _, n := range g.Nodes {
		if names[n.Name] && n.Declared != nil && g.Linked(n.ID) {
			return true
		}
	}
	return false
}

// LayoutApplied is a Sink's LayoutApplied condition: AwaitingIdle while
// its change waits for the streams to stop, Restarting from the rewrite
// until PipeWire is serving again (the declaration is newer than the
// socket: the file and the socket's times are the whole record, so an
// operator restart in the middle reads the same answer), Applied
// otherwise.
func LayoutApplied(name string, plan LayoutPlan, restarting bool) metav1.Condition {
	c := metav1.Condition{Type: audiov1.ConditionLayoutApplied}
	w := plan.Wanted[name]
	if old, changed := plan.Changed[name]; changed && plan.Busy {
		c.Status, c.Reason = metav1.ConditionFalse, audiov1.ReasonAwaitingIdle
		c.Message = fmt.Sprintf("layout %s waits until no stream plays on this machine's outputs (running with %s)", spell(w.Positions), spell(old))
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
