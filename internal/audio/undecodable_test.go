// SPDX-License-Identifier: Apache-2.0

package audio

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"

	audiov1 "github.com/liken-sh/operators/api/audio/v1alpha1"
	"github.com/liken-sh/operators/internal/audio/gate"
	"github.com/liken-sh/operators/internal/audio/objects"
	"github.com/liken-sh/operators/internal/pipewire"
	"github.com/liken-sh/operators/test/poll"
)

// A Sink with a field the Go types cannot hold (a control value past
// int32, which the CRD's schema lets through without the admission
// policy) is read less that field by every reader, on a real API server:
// the Warning Event about a node posing as its declared one still goes
// to it, and when its endpoint leaves the node it is still marked gone,
// with the field named in SpecApplied InvalidSpec, and no failure logged.
func TestUndecodableSinkIsReadByEveryReader(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	_, client := startAudioCluster(ctx, t)
	const node, name, nodeName = "undecodable-node", "undecodable-node-hdmi-0", "alsa_output.undecodable.hdmi-0"
	sinks := client.Resource(audiov1.SinksResource)
	var created *unstructured.Unstructured
	var err error
	poll.WaitFor(t, ctx, "the Sink created once the CRD is served", 30*time.Second, func() (bool, string) {
		created, err = sinks.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": audiov1.GroupVersion.String(), "kind": "Sink", "metadata": map[string]any{"name": name},
			"spec": map[string]any{"volume": int64(30), "controls": map[string]any{"PCM Playback Volume": int64(2147483648)}},
		}}, metav1.CreateOptions{})
		return err == nil, fmt.Sprint(err)
	})
	created.Object["status"] = map[string]any{"node": node, "conditions": []any{map[string]any{
		"type": audiov1.ConditionConnected, "status": "True", "reason": "Present", "message": "plugged in",
		"lastTransitionTime": time.Now().UTC().Format(time.RFC3339)}}}
	if _, err := sinks.UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	store, err := objects.New(objects.Options{Client: client, Node: node})
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Start(ctx, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	poll.WaitFor(t, ctx, "the store holding the Sink", 30*time.Second, func() (bool, string) {
		return len(store.Names(objects.SinkKind)) == 1, strings.Join(store.Names(objects.SinkKind), ",")
	})
	events := record.NewFakeRecorder(10)
	o := &operator{cfg: Config{Node: node}, store: store, recorder: events, metrics: newMetrics(prometheus.NewRegistry()),
		objProblems: map[string]string{}, warned: map[string]bool{}, untrusted: map[string]bool{},
		known: map[string]Endpoint{name: {Name: name, NodeName: nodeName}}}

	o.reportUntrusted(ctx, 1, pipewire.Node{ID: 90, Serial: 900, Name: nodeName, MediaClass: pipewire.MediaClassSink},
		gate.Trusted{Cookie: 1, Nodes: map[string]uint64{nodeName: 10}, IDs: map[string]uint32{nodeName: 40}})
	select {
	case ev := <-events.Events:
		if !strings.Contains(ev, corev1.EventTypeWarning+" "+ReasonUntrustedNode) || !strings.Contains(ev, "node 90") {
			t.Errorf("Event %q, want a Warning %s about node 90", ev, ReasonUntrustedNode)
		}
	default:
		t.Errorf("no %s Event on the Sink with an undecodable field", ReasonUntrustedNode)
	}

	o.markGone(ctx, map[string]bool{})
	if len(o.objProblems) != 0 {
		t.Errorf("marking the Sink gone logged failures: %v", o.objProblems)
	}
	u, err := sinks.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var only struct {
		Status audiov1.SinkStatus `json:"status"`
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &only); err != nil {
		t.Fatal(err)
	}
	conds := only.Status.Conditions
	if c := meta.FindStatusCondition(conds, audiov1.ConditionConnected); c == nil || c.Status != metav1.ConditionFalse || c.Reason != ReasonGone {
		t.Errorf("Connected %+v, want False %s", c, ReasonGone)
	}
	if c := meta.FindStatusCondition(conds, audiov1.ConditionSpecApplied); c == nil || c.Status != metav1.ConditionFalse ||
		c.Reason != audiov1.ReasonInvalidSpec || !strings.Contains(c.Message, `spec.controls["PCM Playback Volume"]`) {
		t.Errorf("SpecApplied %+v, want False %s naming the control", c, audiov1.ReasonInvalidSpec)
	}
}
