// SPDX-License-Identifier: Apache-2.0

package audio

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	audiov1 "github.com/liken-sh/operators/api/audio/v1alpha1"
	"github.com/liken-sh/operators/internal/alsa"
	"github.com/liken-sh/operators/internal/audio/objects"
	"github.com/liken-sh/operators/test/poll"
)

func TestNamedForNode(t *testing.T) {
	for _, c := range []struct {
		node, name string
		want       bool
	}{
		{"kitchen", "kitchen-pci-0000-00-1f-3-hdmi-9", true},
		{"kitchen", "kitchen-usb-0d8c-0014-1-capture", true},
		{"kitchen", "kitchen-h0123456789ab-hdmi-0", true},
		{"Kitchen.Local", "kitchen-local-pci-0000-00-1f-3-hdmi-0", true},
		// Another node's, whose name starts with this one's.
		{"kitchen", "kitchen-den-pci-0000-00-1f-3-hdmi-0", false},
		{"kitchen", "kitchen-2-pci-0000-00-1f-3-hdmi-0", false},
		{"kitchen", "kitchen-pci", false},
		{"kitchen", "living-room", false},
		{"kitchen", "aa-bb-cc-dd-ee-ff", false},
		// The first label names outputs only when the whole name does
		// not fit.
		{"den.example.internal", "den-pci-0000-00-1f-3-hdmi-0", false},
		{"den.example.internal", "den-pci-0000-00-1f-3-a-pcm-id-long-enough-to-pass", true},
	} {
		if got := namedForNode(c.node, c.name); got != c.want {
			t.Errorf("namedForNode(%q, %q) = %v, want %v", c.node, c.name, got, c.want)
		}
	}
}

// A Sink or Source a person creates under a name of a node's form that
// the node's operator has no endpoint of gets, on a real API server,
// Connected and Ready False with reason NotServed from that operator
// (status.node naming it) and from no other; one of an endpoint it has,
// one of no node's form and one of a node whose name starts with the
// first's are left to their own operators. The mark is written once:
// passes after it, markGone's included, send no request.
func TestHandMadeObjectsAreMarkedNotServed(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, admin := startAudioCluster(ctx, t)
	const (
		served   = "kitchen-pci-0000-00-1f-3-hdmi-0"
		unserved = "kitchen-pci-0000-00-1f-3-hdmi-9"
		input    = "kitchen-usb-0d8c-0014-1-capture"
		den      = "kitchen-den-pci-0000-00-1f-3-hdmi-0"
		nobody   = "living-room"
	)
	create := func(gvr schema.GroupVersionResource, kind, name string) {
		t.Helper()
		poll.WaitFor(t, ctx, kind+" "+name+" created once the CRD is served", 30*time.Second, func() (bool, string) {
			_, err := admin.Resource(gvr).Create(ctx, &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": audiov1.GroupVersion.String(), "kind": kind, "metadata": map[string]any{"name": name},
				"spec": map[string]any{"volume": int64(40)}}}, metav1.CreateOptions{})
			return err == nil, fmt.Sprint(err)
		})
	}
	for _, n := range []string{served, unserved, den, nobody} {
		create(audiov1.SinksResource, "Sink", n)
	}
	create(audiov1.SourcesResource, "Source", input)

	var requests atomic.Int32 // besides watches
	op := func(node string) *operator {
		cfg := c.RESTConfig()
		cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
			return roundTrip(func(r *http.Request) (*http.Response, error) {
				if r.URL.Query().Get("watch") != "true" {
					requests.Add(1)
				}
				return rt.RoundTrip(r)
			})
		})
		client, err := dynamic.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		store, err := objects.New(objects.Options{Client: client, Node: node,
			Mine: func(name string) bool { return namedForNode(node, name) }})
		if err != nil {
			t.Fatal(err)
		}
		if err := store.Start(ctx, 30*time.Second); err != nil {
			t.Fatal(err)
		}
		return &operator{cfg: Config{Node: node}, store: store, metrics: newMetrics(prometheus.NewRegistry()),
			objProblems: map[string]string{}, warned: map[string]bool{}, untrusted: map[string]bool{}}
	}
	kitchen, kitchenDen := op("kitchen"), op("kitchen-den")
	poll.WaitFor(t, ctx, "both stores holding the hand-made Sinks", 30*time.Second, func() (bool, string) {
		a, b := kitchen.store.Unclaimed(objects.SinkKind), kitchenDen.store.Unclaimed(objects.SinkKind)
		return len(a) == 4 && len(b) == 4, fmt.Sprint(a, b)
	})
	eps := []Endpoint{{Name: served, PCM: alsa.PCM{Info: alsa.PCMInfo{Stream: alsa.Playback}}}}
	kitchen.markNotServed(ctx, eps)
	kitchenDen.markNotServed(ctx, nil)
	for _, o := range []*operator{kitchen, kitchenDen} {
		if len(o.objProblems) != 0 {
			t.Errorf("%s logged failures: %v", o.cfg.Node, o.objProblems)
		}
	}

	status := func(gvr schema.GroupVersionResource, name string) (audiov1.EndpointStatus, string) {
		t.Helper()
		u, err := admin.Resource(gvr).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var only struct {
			Status audiov1.EndpointStatus `json:"status"`
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &only); err != nil {
			t.Fatal(err)
		}
		return only.Status, u.GetResourceVersion()
	}
	versions := map[string]string{}
	for _, w := range []struct {
		gvr        schema.GroupVersionResource
		name, node string
	}{
		{audiov1.SinksResource, unserved, "kitchen"},
		{audiov1.SourcesResource, input, "kitchen"},
		{audiov1.SinksResource, den, "kitchen-den"},
		{audiov1.SinksResource, served, ""},
		{audiov1.SinksResource, nobody, ""},
	} {
		st, rv := status(w.gvr, w.name)
		versions[w.name] = rv
		if st.Node != w.node {
			t.Errorf("%s: status.node %q, want %q", w.name, st.Node, w.node)
		}
		if w.node == "" {
			if len(st.Conditions) != 0 {
				t.Errorf("%s: conditions %+v, want none (not this test's operators' to mark)", w.name, st.Conditions)
			}
			continue
		}
		for _, typ := range []string{audiov1.ConditionConnected, audiov1.ConditionReady} {
			c := meta.FindStatusCondition(st.Conditions, typ)
			if c == nil || c.Status != metav1.ConditionFalse || c.Reason != audiov1.ReasonNotServed || !strings.Contains(c.Message, "operator on "+w.node+" has no") {
				t.Errorf("%s: %s %+v, want False %s naming node %s", w.name, typ, c, audiov1.ReasonNotServed, w.node)
			}
		}
		if len(st.Conditions) != 2 {
			t.Errorf("%s: conditions %+v, want only Connected and Ready", w.name, st.Conditions)
		}
	}

	// At rest: once the stores hold the marks, passes write nothing and
	// ask nothing.
	poll.WaitFor(t, ctx, "the stores holding the marks", 30*time.Second, func() (bool, string) {
		a, b := kitchen.store.Names(objects.SinkKind), kitchenDen.store.Names(objects.SinkKind)
		return len(a) == 1 && len(b) == 1 && len(kitchen.store.Unclaimed(objects.SinkKind)) == 2, fmt.Sprint(a, b)
	})
	before := requests.Load()
	for range 3 {
		kitchen.markGone(ctx, map[string]bool{served: true})
		kitchen.markNotServed(ctx, eps)
		kitchenDen.markGone(ctx, map[string]bool{})
		kitchenDen.markNotServed(ctx, nil)
	}
	if n := requests.Load() - before; n != 0 {
		t.Errorf("passes at rest sent %d requests, want 0", n)
	}
	// A new hand-made Sink of a node's form wakes that node's operator
	// alone.
	for _, o := range []*operator{kitchen, kitchenDen} {
		select {
		case <-o.store.Wake():
		default:
		}
	}
	create(audiov1.SinksResource, "Sink", "kitchen-pci-0000-00-1f-3-hdmi-8")
	select {
	case <-kitchen.store.Wake():
	case <-time.After(30 * time.Second):
		t.Error("a new hand-made Sink of kitchen's form did not wake kitchen's operator within 30 s")
	}
	select {
	case <-kitchenDen.store.Wake():
		t.Error("a new hand-made Sink of kitchen's form woke kitchen-den's operator")
	case <-time.After(time.Second):
	}

	for _, w := range []struct {
		gvr  schema.GroupVersionResource
		name string
	}{{audiov1.SinksResource, unserved}, {audiov1.SourcesResource, input}, {audiov1.SinksResource, den}} {
		if st, rv := status(w.gvr, w.name); rv != versions[w.name] || !notServed(st.Conditions) {
			t.Errorf("%s rewritten at rest (resourceVersion %s -> %s), conditions %+v", w.name, versions[w.name], rv, st.Conditions)
		}
	}
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
