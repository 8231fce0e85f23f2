// SPDX-License-Identifier: Apache-2.0

package capture

import (
	"strconv"
	"strings"
	"testing"

	"github.com/liken-sh/operators/internal/captureapi"
	"github.com/liken-sh/operators/internal/pipewire"
	"github.com/liken-sh/operators/internal/pipewire/native"
)

// TestLinkWatch: the recorder's stream linked from the target is done
// and fine; linked from another node (WirePlumber's fallback when the
// target is not there) is a 500 wrong-target naming both; not linked yet
// (or only another stream linked) is not done.
func TestLinkWatch(t *testing.T) {
	node := func(id uint32, name string) native.Global {
		return native.Global{ID: id, Type: native.TypeNode, Props: map[string]string{"node.name": name}}
	}
	link := func(from, into uint32) native.Global {
		return native.Global{ID: 57, Type: native.TypeLink, Props: map[string]string{
			"link.output.node": strconv.Itoa(int(from)), "link.input.node": strconv.Itoa(int(into))}}
	}
	watch := func(globals ...native.Global) (*captureapi.Problem, bool) {
		w := &linkWatch{stream: "audio-capture.1", target: pipewire.Node{ID: 30, Name: "liken.audio.x"}}
		for _, g := range append([]native.Global{node(30, "liken.audio.x"), node(31, "liken.audio.other"), node(48, "audio-capture.1"), node(49, "audio-capture.2")}, globals...) {
			if p, done := w.global(g); done {
				return p, done
			}
		}
		return nil, false
	}
	if p, done := watch(link(30, 48)); !done || p != nil {
		t.Errorf("linked from the target: %v, %v", done, p)
	}
	if p, done := watch(link(31, 48)); !done || p == nil || p.Status != 500 || !p.OfType(captureapi.ProblemWrongTarget) ||
		!strings.Contains(p.Detail, "liken.audio.other") || !strings.Contains(p.Detail, "liken.audio.x") {
		t.Errorf("linked from another node: %v, %+v", done, p)
	}
	if _, done := watch(); done {
		t.Error("not linked yet, but done")
	}
	if _, done := watch(link(31, 49)); done {
		t.Error("another stream linked, but done")
	}
}
