// SPDX-License-Identifier: Apache-2.0

package objects

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"

	audiov1 "github.com/liken-sh/operators/api/audio/v1alpha1"
)

// A control value past int32 passes the CRD's schema (without the
// admission policy), and the Go types cannot hold it: the Sink is read
// all the same, less that one control, with an error naming the field;
// its status is still written; its layout is still read for declare.
func TestUndecodableControlLeavesTheRestOfTheSink(t *testing.T) {
	t.Parallel()
	const node, name = "decode-node", "decode-node-hdmi-0"
	ctx := context.Background()
	_, err := admin(t).Resource(audiov1.SinksResource).Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": audiov1.GroupVersion.String(), "kind": "Sink", "metadata": map[string]any{"name": name},
		"spec": map[string]any{"volume": int64(30), "layout": []any{"FL", "FR"}, "controls": map[string]any{
			"PCM Playback Volume": int64(2147483648), "Master Playback Volume": int64(40), "Auto-Mute Mode": "Enabled",
		}},
	}}, metav1.CreateOptions{})
	must(t, err)
	s := startStore(t, admin(t), node, nil)

	check := func(what string, sink *audiov1.Sink, err error) {
		t.Helper()
		var derr *DecodeError
		if !errors.As(err, &derr) {
			t.Fatalf("%s: error %v, want a *DecodeError", what, err)
		}
		if want := []string{`spec.controls["PCM Playback Volume"]`}; !slices.Equal(derr.Fields, want) {
			t.Errorf("%s: fields %q, want %q", what, derr.Fields, want)
		}
		if derr.Ref.Kind != "Sink" || derr.Ref.Name != name || derr.Ref.UID == "" {
			t.Errorf("%s: reference %+v, want the Sink with its UID", what, derr.Ref)
		}
		if msg := err.Error(); !strings.Contains(msg, `spec.controls["PCM Playback Volume"]`) || !strings.Contains(msg, "2147483648") {
			t.Errorf("%s: message %q, want the field and the value", what, msg)
		}
		want := map[string]intstr.IntOrString{"Master Playback Volume": intstr.FromInt32(40), "Auto-Mute Mode": intstr.FromString("Enabled")}
		if v := sink.Spec.Volume; v == nil || *v != 30 {
			t.Errorf("%s: spec.volume %v, want 30", what, v)
		}
		if diff := cmp.Diff(want, sink.Spec.Controls); diff != "" {
			t.Errorf("%s: controls (-want +got):\n%s", what, diff)
		}
	}
	sink, ok, err := s.Sink(ctx, name)
	if !ok {
		t.Fatalf("Sink %s not found: %v", name, err)
	}
	check("Sink", sink, err)

	st := sinkStatus(node, cond(audiov1.ConditionSpecApplied, metav1.ConditionFalse, audiov1.ReasonInvalidSpec))
	sink, err = s.ApplySink(ctx, name, st)
	check("ApplySink", sink, err)
	got, _, _ := s.Sink(ctx, name)
	if c := meta.FindStatusCondition(got.Status.Conditions, audiov1.ConditionSpecApplied); got.Status.Node != node || c == nil || c.Reason != audiov1.ReasonInvalidSpec {
		t.Errorf("status after ApplySink: %+v, want it written", got.Status)
	}

	layouts, err := ReadLayouts(ctx, admin(t), []string{name}, RequestTimeout)
	if err != nil || !slices.Equal(layouts[name], []string{"FL", "FR"}) {
		t.Errorf("ReadLayouts = %v, %v; want the Sink's FL FR", layouts, err)
	}
}

func TestSpellFieldPath(t *testing.T) {
	for _, c := range []struct {
		path []string
		want string
	}{
		{[]string{"spec", "volume"}, "spec.volume"},
		{[]string{"spec", "controls", "PCM Playback Volume"}, `spec.controls["PCM Playback Volume"]`},
		{[]string{"spec", "controls", "Master\x1b]0;x\x07"}, `spec.controls["Master\x1b]0;x\a"]`},
	} {
		if got := spell(c.path); got != c.want {
			t.Errorf("spell(%q) = %s, want %s", c.path, got, c.want)
		}
	}
}
