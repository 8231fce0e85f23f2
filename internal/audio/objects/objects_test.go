// SPDX-License-Identifier: Apache-2.0

package objects

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	audiov1 "github.com/liken-sh/operators/api/audio/v1alpha1"
)

func fromUnstructured(u *unstructured.Unstructured, into any) error {
	return runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into)
}

// cond is a condition as the operator hands it over: no time, no
// generation.
func cond(typ string, status metav1.ConditionStatus, reason string) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: "set by " + reason}
}

// sinkStatus is a plausible status of an HDMI Sink on node.
func sinkStatus(node string, conds ...metav1.Condition) audiov1.SinkStatus {
	return audiov1.SinkStatus{
		EndpointStatus: audiov1.EndpointStatus{
			Node: node, Location: "0000:00:1f.3", ConnectionType: "hdmi",
			Card: &audiov1.CardStatus{Number: 0, ID: "PCH", Driver: "HDA-Intel"},
			PCM:  &audiov1.PCMStatus{Device: 3, ID: "HDMI 0"}, NodeName: "alsa_output.hdmi-0",
			Conditions: conds,
		},
		Layout: []string{"FL", "FR"}, LayoutSource: audiov1.LayoutFromELD,
	}
}

// untilNextSecond sleeps until the wall clock's second is past t, so a
// condition that changes now gets a later lastTransitionTime (which the
// API server keeps to the second).
func untilNextSecond(t time.Time) {
	time.Sleep(time.Until(t.Truncate(time.Second).Add(time.Second + 10*time.Millisecond)))
}

func writesIn(calls []call) []call {
	var out []call
	for _, c := range calls {
		if c.method != http.MethodGet {
			out = append(out, c)
		}
	}
	return out
}

// TestApplySinkCreatesAndWritesOnlyChanges: a missing Sink is created with
// an empty spec and the status given; the same status again writes
// nothing; a condition whose status changes gets a new
// lastTransitionTime while one that stays keeps its old one; a spec change
// moves every condition's observedGeneration.
func TestApplySinkCreatesAndWritesOnlyChanges(t *testing.T) {
	t.Parallel()
	const node, name = "apply-node", "apply-node-hdmi-0"
	ctx := context.Background()
	var rec recorder
	s := startStore(t, recordedClient(t, &rec), node, nil)

	want := sinkStatus(node, cond(audiov1.ConditionConnected, metav1.ConditionTrue, "MonitorPresent"),
		cond(audiov1.ConditionReady, metav1.ConditionTrue, "NodeRunning"))
	before := time.Now()
	got, err := s.ApplySink(ctx, name, want)
	must(t, err)
	sink, u := getSink(t, name)
	if spec, ok := u.Object["spec"].(map[string]any); !ok || len(spec) != 0 {
		t.Errorf("created spec %#v, want empty", u.Object["spec"])
	}
	if sink.Status.Node != node || sink.Status.PCM == nil || sink.Status.PCM.Device != 3 ||
		!slices.Equal(sink.Status.Layout, want.Layout) || sink.Status.LayoutSource != audiov1.LayoutFromELD {
		t.Errorf("stored status %+v, want %+v", sink.Status, want)
	}
	if len(sink.Status.Conditions) != 2 {
		t.Fatalf("stored conditions %+v", sink.Status.Conditions)
	}
	for _, c := range sink.Status.Conditions {
		if c.ObservedGeneration != sink.Generation || sink.Generation == 0 {
			t.Errorf("%s observedGeneration %d, generation %d", c.Type, c.ObservedGeneration, sink.Generation)
		}
		if c.LastTransitionTime.Time.Before(before.Truncate(time.Second)) || c.LastTransitionTime.Time.After(time.Now()) {
			t.Errorf("%s lastTransitionTime %s, the write began at %s", c.Type, c.LastTransitionTime, before)
		}
	}
	if got.ResourceVersion != sink.ResourceVersion || got.UID != sink.UID {
		t.Errorf("ApplySink returned resourceVersion %s, the API server holds %s", got.ResourceVersion, sink.ResourceVersion)
	}
	first := *meta.FindStatusCondition(sink.Status.Conditions, audiov1.ConditionConnected)

	// The same status again: not one write, whether the store has caught
	// up or not.
	for _, caughtUp := range []bool{false, true} {
		if caughtUp {
			waitStored(t, s, SinkKind, name, sink.ResourceVersion)
		}
		mark := rec.mark()
		again, err := s.ApplySink(ctx, name, want)
		must(t, err)
		if w := writesIn(rec.about(mark, "sinks", name)); len(w) != 0 {
			t.Errorf("the same status (store caught up: %v) wrote %v", caughtUp, w)
		}
		if now, _ := getSink(t, name); now.ResourceVersion != sink.ResourceVersion || again.ResourceVersion != sink.ResourceVersion {
			t.Errorf("resourceVersion moved from %s to %s (returned %s)", sink.ResourceVersion, now.ResourceVersion, again.ResourceVersion)
		}
	}

	// Ready falls, Connected stays true under a new reason.
	untilNextSecond(first.LastTransitionTime.Time)
	changed := sinkStatus(node, cond(audiov1.ConditionConnected, metav1.ConditionTrue, "StillPresent"),
		cond(audiov1.ConditionReady, metav1.ConditionFalse, "NoNode"))
	_, err = s.ApplySink(ctx, name, changed)
	must(t, err)
	after, _ := getSink(t, name)
	conn := meta.FindStatusCondition(after.Status.Conditions, audiov1.ConditionConnected)
	ready := meta.FindStatusCondition(after.Status.Conditions, audiov1.ConditionReady)
	if conn == nil || ready == nil || conn.Reason != "StillPresent" || ready.Status != metav1.ConditionFalse {
		t.Fatalf("conditions after the change: %+v", after.Status.Conditions)
	}
	if !conn.LastTransitionTime.Equal(&first.LastTransitionTime) {
		t.Errorf("Connected stayed true but its lastTransitionTime moved from %s to %s", first.LastTransitionTime, conn.LastTransitionTime)
	}
	if !ready.LastTransitionTime.After(first.LastTransitionTime.Time) {
		t.Errorf("Ready changed but its lastTransitionTime %s is not after %s", ready.LastTransitionTime, first.LastTransitionTime)
	}

	// A person changes the spec: the same status is written again for the
	// new generation, times kept.
	_, err = admin(t).Resource(audiov1.SinksResource).Patch(ctx, name, types.MergePatchType, []byte(`{"spec":{"volume":30}}`), metav1.PatchOptions{})
	must(t, err)
	bumped, _ := getSink(t, name)
	if bumped.Generation == after.Generation {
		t.Fatalf("a spec patch left generation at %d", bumped.Generation)
	}
	waitStored(t, s, SinkKind, name, bumped.ResourceVersion)
	_, err = s.ApplySink(ctx, name, changed)
	must(t, err)
	final, _ := getSink(t, name)
	for _, c := range final.Status.Conditions {
		if c.ObservedGeneration != bumped.Generation {
			t.Errorf("%s observedGeneration %d after the spec change, want %d", c.Type, c.ObservedGeneration, bumped.Generation)
		}
		if old := meta.FindStatusCondition(after.Status.Conditions, c.Type); !c.LastTransitionTime.Equal(&old.LastTransitionTime) {
			t.Errorf("%s lastTransitionTime moved from %s to %s on a generation change", c.Type, old.LastTransitionTime, c.LastTransitionTime)
		}
	}
	if final.Spec.Volume == nil || *final.Spec.Volume != 30 {
		t.Errorf("the status write lost the spec: %+v", final.Spec)
	}

	// The same for a Source.
	src, err := s.ApplySource(ctx, node+"-mic", sinkStatus(node, cond(audiov1.ConditionReady, metav1.ConditionTrue, "NodeRunning")).EndpointStatus)
	must(t, err)
	if src.Status.Node != node || src.Name != node+"-mic" || src.UID == "" {
		t.Errorf("ApplySource returned %+v", src)
	}
	waitFor(t, "the Source in the store", 30*time.Second, func() (bool, string) {
		return slices.Contains(s.Names(SourceKind), node+"-mic"), fmt.Sprint(s.Names(SourceKind))
	})
}

// TestApplySinkAfterConflict: another writer changed the status and the
// store has not seen it; the write on the store's copy meets a conflict,
// the Sink is read again and the status written over it.
func TestApplySinkAfterConflict(t *testing.T) {
	t.Parallel()
	const node, name = "conflict-node", "conflict-node-hdmi-0"
	ctx := context.Background()
	var rec recorder
	s := startStore(t, recordedClient(t, &rec), node, nil)
	mine := sinkStatus(node, cond(audiov1.ConditionReady, metav1.ConditionTrue, "NodeRunning"))
	old, err := s.ApplySink(ctx, name, mine)
	must(t, err)
	waitStored(t, s, SinkKind, name, old.ResourceVersion)
	staleCopy, _ := stored(s, SinkKind, name)
	staleCopy = staleCopy.DeepCopy()

	// The other writer.
	_, u := getSink(t, name)
	must(t, unstructured.SetNestedField(u.Object, "other-writer", "status", "nodeName"))
	theirs, err := admin(t).Resource(audiov1.SinksResource).UpdateStatus(ctx, u, metav1.UpdateOptions{})
	must(t, err)
	waitStored(t, s, SinkKind, name, theirs.GetResourceVersion())
	makeStale(t, s, SinkKind, staleCopy)

	next := mine
	next.NodeName = "alsa_output.hdmi-0.renamed"
	next.Layout = []string{"FL", "FR", "FC", "LFE"}
	mark := rec.mark()
	got, err := s.ApplySink(ctx, name, next)
	must(t, err)
	calls := rec.about(mark, "sinks", name)
	conflicted := slices.ContainsFunc(calls, func(c call) bool { return c.method == http.MethodPut && c.code == http.StatusConflict })
	if !conflicted || calls[len(calls)-1].method != http.MethodPut || calls[len(calls)-1].code != http.StatusOK {
		t.Errorf("requests %v, want a 409 on the stale copy, then a read and a 200", calls)
	}
	final, _ := getSink(t, name)
	if final.Status.NodeName != next.NodeName || !slices.Equal(final.Status.Layout, next.Layout) || got.ResourceVersion != final.ResourceVersion {
		t.Errorf("final status %+v (returned rv %s, stored %s), want nodeName %s layout %v",
			final.Status, got.ResourceVersion, final.ResourceVersion, next.NodeName, next.Layout)
	}
}

// TestApplySinkRecreatesDeleted: a Sink deleted behind the store's back
// is created again by the next ApplySink, both while the store still
// holds it (the status write meets a 404) and after it dropped it.
func TestApplySinkRecreatesDeleted(t *testing.T) {
	t.Parallel()
	const node = "recreate-node"
	ctx := context.Background()
	var rec recorder
	s := startStore(t, recordedClient(t, &rec), node, nil)
	st := sinkStatus(node, cond(audiov1.ConditionReady, metav1.ConditionTrue, "NodeRunning"))
	for _, storeStale := range []bool{true, false} {
		name := fmt.Sprintf("%s-stale-%v", node, storeStale)
		old, err := s.ApplySink(ctx, name, st)
		must(t, err)
		waitStored(t, s, SinkKind, name, old.ResourceVersion)
		staleCopy, _ := stored(s, SinkKind, name)
		staleCopy = staleCopy.DeepCopy()
		must(t, admin(t).Resource(audiov1.SinksResource).Delete(ctx, name, metav1.DeleteOptions{}))
		waitStored(t, s, SinkKind, name, "")
		if storeStale {
			makeStale(t, s, SinkKind, staleCopy)
		}

		// A changed status, so a stale store's copy does not answer for
		// it: with an equal one the store could not tell the write is
		// needed until the deletion reaches it (which wakes a pass).
		next := sinkStatus(node, cond(audiov1.ConditionReady, metav1.ConditionFalse, "NoNode"))
		mark := rec.mark()
		got, err := s.ApplySink(ctx, name, next)
		must(t, err)
		now, _ := getSink(t, name)
		if now.UID == old.UID || got.UID != now.UID {
			t.Errorf("store stale %v: UID %s before, %s after (returned %s): not created again", storeStale, old.UID, now.UID, got.UID)
		}
		if c := meta.FindStatusCondition(now.Status.Conditions, audiov1.ConditionReady); now.Status.Node != node || c == nil || c.Reason != "NoNode" {
			t.Errorf("store stale %v: recreated Sink's status %+v", storeStale, now.Status)
		}
		calls := rec.about(mark, "sinks", name)
		created := slices.ContainsFunc(calls, func(c call) bool { return c.method == http.MethodPost && c.code == http.StatusCreated })
		met404 := slices.ContainsFunc(calls, func(c call) bool { return c.method == http.MethodPut && c.code == http.StatusNotFound })
		if !created || met404 != storeStale {
			t.Errorf("store stale %v: requests %v", storeStale, calls)
		}
	}
}

// TestWake: the Wake channel receives on an add, a spec change and a
// delete of this node's Sink, and not on a status or metadata write.
func TestWake(t *testing.T) {
	t.Parallel()
	const node, name = "wake-node", "wake-node-hdmi-0"
	ctx := context.Background()
	s := startStore(t, recordedClient(t, &recorder{}), node, nil)
	sinks := admin(t).Resource(audiov1.SinksResource)
	drain := func() {
		for {
			select {
			case <-s.Wake():
			default:
				return
			}
		}
	}
	woken := func(what string) {
		t.Helper()
		select {
		case <-s.Wake():
		case <-time.After(30 * time.Second):
			t.Errorf("no wake within 30 s after %s", what)
		}
	}
	// quiet requires no wake for a second once the store holds rv: the
	// event was delivered, and it woke nothing.
	quiet := func(what, rv string) {
		t.Helper()
		waitStored(t, s, SinkKind, name, rv)
		select {
		case <-s.Wake():
			t.Errorf("%s woke the store", what)
		case <-time.After(time.Second):
		}
	}

	drain()
	st := sinkStatus(node, cond(audiov1.ConditionReady, metav1.ConditionTrue, "NodeRunning"))
	created, err := s.ApplySink(ctx, name, st)
	must(t, err)
	woken("the Sink appeared")
	waitStored(t, s, SinkKind, name, created.ResourceVersion)
	drain()

	// The operator's own status write.
	st.Conditions = []metav1.Condition{cond(audiov1.ConditionReady, metav1.ConditionFalse, "NoNode")}
	written, err := s.ApplySink(ctx, name, st)
	must(t, err)
	if written.ResourceVersion == created.ResourceVersion {
		t.Fatal("the changed status was not written")
	}
	quiet("a status write", written.ResourceVersion)

	// Another writer's status write and a label: no spec change either.
	_, u := getSink(t, name)
	must(t, unstructured.SetNestedField(u.Object, "someone-else", "status", "nodeName"))
	u, err = sinks.UpdateStatus(ctx, u, metav1.UpdateOptions{})
	must(t, err)
	quiet("another writer's status write", u.GetResourceVersion())
	u, err = sinks.Patch(ctx, name, types.MergePatchType, []byte(`{"metadata":{"labels":{"room":"den"}}}`), metav1.PatchOptions{})
	must(t, err)
	quiet("a label", u.GetResourceVersion())

	u, err = sinks.Patch(ctx, name, types.MergePatchType, []byte(`{"spec":{"volume":55}}`), metav1.PatchOptions{})
	must(t, err)
	woken("spec.volume changed")
	waitStored(t, s, SinkKind, name, u.GetResourceVersion())
	drain()

	must(t, sinks.Delete(ctx, name, metav1.DeleteOptions{}))
	woken("the Sink was deleted")
	waitStored(t, s, SinkKind, name, "")
}

// TestFieldSelector: a store follows only the Sinks whose status.node
// names its node, and Sink reads another node's from the API server.
func TestFieldSelector(t *testing.T) {
	t.Parallel()
	const mine, other = "selector-mine", "selector-other"
	ctx := context.Background()
	var rec recorder
	s := startStore(t, recordedClient(t, &rec), mine, nil)
	theirs := startStore(t, recordedClient(t, &recorder{}), other, nil)

	own, err := s.ApplySink(ctx, mine+"-hdmi-0", sinkStatus(mine))
	must(t, err)
	foreign, err := theirs.ApplySink(ctx, other+"-hdmi-0", sinkStatus(other))
	must(t, err)
	// A Sink a person made, with no status yet.
	_, err = admin(t).Resource(audiov1.SinksResource).Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": audiov1.GroupVersion.String(), "kind": "Sink",
		"metadata": map[string]any{"name": mine + "-unowned"}, "spec": map[string]any{"volume": int64(10)},
	}}, metav1.CreateOptions{})
	must(t, err)
	waitStored(t, s, SinkKind, own.Name, own.ResourceVersion)
	waitStored(t, theirs, SinkKind, foreign.Name, foreign.ResourceVersion)
	time.Sleep(500 * time.Millisecond) // a wrongly delivered event would land by now
	if got := s.Names(SinkKind); !slices.Equal(got, []string{own.Name}) {
		t.Errorf("%s's store lists %v, want only %s", mine, got, own.Name)
	}
	if got := theirs.Names(SinkKind); !slices.Equal(got, []string{foreign.Name}) {
		t.Errorf("%s's store lists %v, want only %s", other, got, foreign.Name)
	}

	// Sink: this node's from the store (no request), another's from the
	// API server.
	mark := rec.mark()
	got, ok, err := s.Sink(ctx, own.Name)
	if err != nil || !ok || got.Status.Node != mine {
		t.Errorf("Sink(%s) = %+v, %v, %v", own.Name, got.Status, ok, err)
	}
	if calls := rec.about(mark, "sinks", own.Name); len(calls) != 0 {
		t.Errorf("reading this node's Sink asked the API server: %v", calls)
	}
	got, ok, err = s.Sink(ctx, foreign.Name)
	if err != nil || !ok || got.Status.Node != other || got.UID != foreign.UID {
		t.Errorf("Sink(%s) = %+v, %v, %v: want the other node's Sink from the API", foreign.Name, got.Status, ok, err)
	}
	if calls := rec.about(mark, "sinks", foreign.Name); len(calls) != 1 || calls[0].method != http.MethodGet {
		t.Errorf("reading another node's Sink made requests %v, want one GET", calls)
	}
	got, ok, err = s.Sink(ctx, mine+"-unowned")
	if err != nil || !ok || got.Spec.Volume == nil || *got.Spec.Volume != 10 {
		t.Errorf("Sink(%s-unowned) = %+v, %v, %v", mine, got.Spec, ok, err)
	}
	if _, ok, err := s.Sink(ctx, mine+"-nonexistent"); ok || err != nil {
		t.Errorf("a missing Sink: ok %v, err %v; want false, nil", ok, err)
	}
	if _, ok, err := s.Source(ctx, mine+"-nonexistent"); ok || err != nil {
		t.Errorf("a missing Source: ok %v, err %v; want false, nil", ok, err)
	}
}

// TestReadLayouts: spec.layout of the Sinks that have one; a Sink with no
// layout or none at all is left out; an API server that refuses, is not
// there, or never answers ends the reads with an error naming the Sink.
func TestReadLayouts(t *testing.T) {
	t.Parallel()
	const prefix = "layouts-"
	ctx := context.Background()
	sinks := admin(t).Resource(audiov1.SinksResource)
	for name, spec := range map[string]map[string]any{
		prefix + "surround": {"layout": []any{"FL", "FR", "RL", "RR", "FC", "LFE"}},
		prefix + "volume":   {"volume": int64(20)},
	} {
		_, err := sinks.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": audiov1.GroupVersion.String(), "kind": "Sink", "metadata": map[string]any{"name": name}, "spec": spec,
		}}, metav1.CreateOptions{})
		must(t, err)
	}
	names := []string{prefix + "missing", prefix + "volume", prefix + "surround"}
	got, err := ReadLayouts(ctx, admin(t), names, 5*time.Second)
	must(t, err)
	if len(got) != 1 || !slices.Equal(got[prefix+"surround"], []string{"FL", "FR", "RL", "RR", "FC", "LFE"}) {
		t.Errorf("ReadLayouts = %v, want only %ssurround's six channels", got, prefix)
	}

	t.Run("forbidden", func(t *testing.T) {
		cfg := apiServer(t).RESTConfig()
		cfg.Impersonate = rest.ImpersonationConfig{UserName: "nobody", Groups: []string{"system:authenticated"}}
		client, err := dynamic.NewForConfig(cfg)
		must(t, err)
		got, err := ReadLayouts(ctx, client, names, 5*time.Second)
		if err == nil || !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "Sink "+names[0]) || got != nil {
			t.Errorf("ReadLayouts without access = %v, %v; want a Forbidden error naming %s", got, err, names[0])
		}
	})
	t.Run("closed port", func(t *testing.T) {
		got, err := ReadLayouts(ctx, plainClient(t, closedPort(t)), names, 5*time.Second)
		if err == nil || !strings.Contains(err.Error(), "Sink "+names[0]) || got != nil {
			t.Errorf("ReadLayouts with no API server = %v, %v; want an error naming %s", got, err, names[0])
		}
	})
	t.Run("no answer", func(t *testing.T) {
		addr, accepted := hangingServer(t)
		type result struct {
			layouts map[string][]string
			err     error
		}
		done := make(chan result, 1)
		go func() {
			l, err := ReadLayouts(ctx, plainClient(t, addr), names, 300*time.Millisecond)
			done <- result{l, err}
		}()
		select {
		case r := <-done:
			if r.err == nil || !errors.Is(r.err, context.DeadlineExceeded) || !strings.Contains(r.err.Error(), "Sink "+names[0]) || r.layouts != nil {
				t.Errorf("ReadLayouts against a silent server = %v, %v; want a deadline error naming %s", r.layouts, r.err, names[0])
			}
		case <-time.After(30 * time.Second):
			t.Fatal("ReadLayouts against a silent server has not returned after 30 s with a 300 ms timeout")
		}
		// One slow server costs one timeout: the first Sink's read was the
		// only one.
		if n := accepted.Load(); n != 1 {
			t.Errorf("the silent server accepted %d connections, want 1", n)
		}
	})
}

// TestRequestTimeout: an API server that never answers ends an
// ApplySink with an error after RequestTimeout instead of holding the
// pass.
func TestRequestTimeout(t *testing.T) {
	t.Parallel()
	addr, _ := hangingServer(t)
	s, err := New(Options{Client: plainClient(t, addr), Node: "timeout-node"})
	must(t, err)
	done := make(chan error, 1)
	began := time.Now()
	go func() {
		_, err := s.ApplySink(context.Background(), "timeout-node-hdmi-0", sinkStatus("timeout-node"))
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "Sink timeout-node-hdmi-0") {
			t.Errorf("ApplySink against a silent server: %v; want a deadline error naming the Sink", err)
		}
		t.Logf("ApplySink gave up after %s (RequestTimeout %s)", time.Since(began).Round(time.Millisecond), RequestTimeout)
	case <-time.After(3 * RequestTimeout):
		t.Fatalf("ApplySink against a silent server has not returned after %s", 3*RequestTimeout)
	}
}

// TestWatchRestart: when the watch breaks and the API server answers
// with errors, OnWatchRestart is called for each kind; once it answers
// again the store catches up.
func TestWatchRestart(t *testing.T) {
	t.Parallel()
	const node = "restart-node"
	c := apiServer(t)
	backend, err := url.Parse(c.Host())
	must(t, err)
	rt, err := rest.TransportFor(c.RESTConfig())
	must(t, err)
	proxy := &httputil.ReverseProxy{Transport: rt, Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(backend) }}
	var failing atomic.Bool
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if failing.Load() {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"test outage","reason":"InternalError","code":500}`))
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)

	var mu sync.Mutex
	restarts := map[string]int{}
	s := startStore(t, plainClient(t, strings.TrimPrefix(front.URL, "http://")), node, func(kind string) {
		mu.Lock()
		restarts[kind]++
		mu.Unlock()
	})
	count := func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		return map[string]int{"Sink": restarts["Sink"], "Source": restarts["Source"]}
	}
	time.Sleep(time.Second)
	if n := count(); n["Sink"] != 0 || n["Source"] != 0 {
		t.Fatalf("watch restarts %v before any failure", n)
	}

	failing.Store(true)
	front.CloseClientConnections()
	waitFor(t, "OnWatchRestart for Sink and Source", 30*time.Second, func() (bool, string) {
		n := count()
		return n["Sink"] > 0 && n["Source"] > 0, fmt.Sprint(n)
	})

	// The API server is back: a Sink of this node written meanwhile
	// reaches the store.
	writer := startStore(t, admin(t), node, nil)
	sink, err := writer.ApplySink(context.Background(), node+"-hdmi-0", sinkStatus(node))
	must(t, err)
	failing.Store(false)
	waitStored(t, s, SinkKind, sink.Name, sink.ResourceVersion)
	t.Logf("watch restarts during the outage: %v", count())
}
