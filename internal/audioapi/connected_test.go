// SPDX-License-Identifier: Apache-2.0

package audioapi

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/liken-sh/operators/internal/audio"
	"github.com/liken-sh/operators/internal/captureapi"
)

func TestJackUnpluggedReasonIsTheOperators(t *testing.T) {
	if reasonJackUnplugged != audio.ReasonJackUnplugged {
		t.Errorf("reasonJackUnplugged %q, the operator sets %q", reasonJackUnplugged, audio.ReasonJackUnplugged)
	}
}

func TestDisconnected(t *testing.T) {
	sink := func(conds ...map[string]any) *unstructured.Unstructured {
		var cs []any
		for _, c := range conds {
			cs = append(cs, c)
		}
		return &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"node": "node-a", "conditions": cs}}}
	}
	cond := func(status, reason string) map[string]any {
		return map[string]any{"type": "Connected", "status": status, "reason": reason, "message": "why"}
	}
	ready := map[string]any{"type": "Ready", "status": "False", "reason": audio.ReasonNoNode}
	sinkTap := captureapi.Match{Route: &captureapi.Route{Kind: captureapi.KindTap, Resource: captureapi.Sinks}, Name: "tv"}
	sourceTap := captureapi.Match{Route: &captureapi.Route{Kind: captureapi.KindTap, Resource: captureapi.Sources}, Name: "mic"}
	for _, tc := range []struct {
		name    string
		m       captureapi.Match
		obj     *unstructured.Unstructured
		refused bool
	}{
		{"no monitor", sinkTap, sink(ready, cond("False", audio.ReasonNoMonitor)), true},
		{"speaker gone", sinkTap, sink(cond("False", audio.ReasonSpeakerDisconnected)), true},
		{"not on its node", sinkTap, sink(cond("False", audio.ReasonGone)), true},
		{"monitor present", sinkTap, sink(cond("True", audio.ReasonMonitorPresent)), false},
		{"unplugged jack", sinkTap, sink(cond("False", audio.ReasonJackUnplugged)), false},
		{"no condition yet", sinkTap, sink(ready), false},
		{"no status", sinkTap, &unstructured.Unstructured{Object: map[string]any{}}, false},
		{"a Source", sourceTap, sink(cond("False", audio.ReasonNoMonitor)), false},
	} {
		p := disconnected(tc.m, tc.obj)
		if (p != nil) != tc.refused {
			t.Errorf("%s: refused %v, want %v (%v)", tc.name, p != nil, tc.refused, p)
			continue
		}
		if p != nil && (!p.OfType(captureapi.ProblemDisconnected) || p.Status != 409 || !strings.HasPrefix(p.Detail, `Sink "tv" is disconnected: why (`)) {
			t.Errorf("%s: %+v", tc.name, p)
		}
	}
}
