// SPDX-License-Identifier: Apache-2.0

package bluetoothcli

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	btv1 "github.com/liken-sh/operators/api/bluetooth/v1alpha1"
)

const testAdapter = "00-1a-7d-da-71-13"

func fakeClient(objs ...runtime.Object) *dynamicfake.FakeDynamicClient {
	return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		btv1.AdaptersResource:        "AdapterList",
		btv1.PeripheralsResource:     "PeripheralList",
		btv1.PairingRequestsResource: "PairingRequestList",
	}, objs...)
}

func object(kind, name string, fields map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: fields}
	u.SetAPIVersion(btv1.GroupVersion.String())
	u.SetKind(kind)
	u.SetName(name)
	u.SetUID(types.UID("uid-" + name))
	return u
}

// syncWriter lets the test read what chooseAdapter prints while it runs.
type syncWriter struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// An Adapter the operator created but has not reported yet is waited
// for, announced once, and chosen when its status arrives.
func TestPairWaitsForAStartingAdapter(t *testing.T) {
	d := fakeClient(object("Adapter", testAdapter, map[string]any{}))
	go func() {
		time.Sleep(3 * pollInterval)
		u := object("Adapter", testAdapter, map[string]any{"status": map[string]any{
			"node": "kitchen",
			"conditions": []any{map[string]any{"type": btv1.ConditionPresent, "status": "True", "reason": "Found", "message": "",
				"lastTransitionTime": metav1.Now().UTC().Format(time.RFC3339)}},
		}})
		_, _ = d.Resource(btv1.AdaptersResource).Update(context.Background(), u, metav1.UpdateOptions{})
	}()
	var progress syncWriter
	got, err := chooseAdapter(t.Context(), d, &progress, "", "", time.Minute)
	if err != nil || got != testAdapter {
		t.Fatalf("chooseAdapter = %q, %v; want %s", got, err, testAdapter)
	}
	if n := strings.Count(progress.String(), "waiting for the operator to report adapter "+testAdapter+"\n"); n != 1 {
		t.Errorf("progress %q: want the wait announced exactly once", progress.String())
	}
}

// The wait is bounded, and the error names a starting adapter as such.
func TestPairGivesUpOnAStartingAdapter(t *testing.T) {
	d := fakeClient(object("Adapter", testAdapter, map[string]any{}))
	var progress syncWriter
	_, err := chooseAdapter(t.Context(), d, &progress, "", "", 2*pollInterval)
	if err == nil || !strings.Contains(err.Error(), testAdapter+" (starting)") || strings.Contains(err.Error(), "(node )") {
		t.Errorf("chooseAdapter on an adapter that never reports: %v; want it named (starting)", err)
	}
}

// runUnpair runs unpair against d with args: runCommand of newUnpair.
func runUnpair(t *testing.T, d *dynamicfake.FakeDynamicClient, args ...string) (int, string) {
	t.Helper()
	return runCommand(t.Context(), t, d, newUnpair, args...)
}

// runCommand runs the command newCmd makes against d with args, until
// ctx ends, and returns its exit status (0, or 1 when it returned an
// error) and everything it printed, the error last. Cobra's own error
// and usage prints are silenced, so the error shows once.
func runCommand(ctx context.Context, t *testing.T, d *dynamicfake.FakeDynamicClient, newCmd func(*env) *cobra.Command, args ...string) (int, string) {
	t.Helper()
	var out bytes.Buffer
	e := &env{streams: genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &out}, dyn: d}
	cmd := newCmd(e)
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	if err := cmd.ExecuteContext(ctx); err != nil {
		out.WriteString("error: " + err.Error() + "\n")
		return 1, out.String()
	}
	return 0, out.String()
}

// A Peripheral without the operator's finalizer is not deleted (that
// would leave the bond and let its Secret restore it); --force deletes it
// and says the Secret remains.
func TestUnpairRefusesWithoutTheFinalizer(t *testing.T) {
	const name = "aa-bb-cc-dd-ee-ff"
	status := map[string]any{"status": map[string]any{"bond": map[string]any{"held": true, "secret": "liken-bluetooth/bond-aa-bb-cc-dd-ee-ff"}}}
	d := fakeClient(object("Peripheral", name, status))
	code, out := runUnpair(t, d, name)
	if code != 1 || !strings.Contains(out, btv1.PeripheralFinalizer) || !strings.Contains(out, "liken-bluetooth/bond-aa-bb-cc-dd-ee-ff") || strings.Contains(out, "unpaired") {
		t.Errorf("unpair without the finalizer: exit %d, %q; want a refusal naming the finalizer and the Secret", code, out)
	}
	if _, err := d.Resource(btv1.PeripheralsResource).Get(t.Context(), name, metav1.GetOptions{}); err != nil {
		t.Errorf("the refused unpair deleted the Peripheral: %v", err)
	}
	code, out = runUnpair(t, d, "--force", name)
	if code != 0 || !strings.Contains(out, "not unpaired") || !strings.Contains(out, "liken-bluetooth/bond-aa-bb-cc-dd-ee-ff remains") {
		t.Errorf("unpair --force: exit %d, %q; want the Secret named as remaining", code, out)
	}
	if _, err := d.Resource(btv1.PeripheralsResource).Get(t.Context(), name, metav1.GetOptions{}); err == nil {
		t.Error("unpair --force left the Peripheral")
	}
}

// With the finalizer the delete goes ahead and unpair reports the end
// (the fake client deletes at once, as the API server does once the
// operator removes its finalizer).
func TestUnpairWithTheFinalizer(t *testing.T) {
	const name = "aa-bb-cc-dd-ee-ff"
	p := object("Peripheral", name, map[string]any{})
	p.SetFinalizers([]string{btv1.PeripheralFinalizer})
	code, out := runUnpair(t, fakeClient(p), name)
	if code != 0 || !strings.Contains(out, "peripheral "+name+": unpaired") {
		t.Errorf("unpair: exit %d, %q", code, out)
	}
}

// unpair takes the device's address in either spelling, as pair --device
// does, and unpairs the Peripheral of that name; other input that is no
// object name is refused with both accepted forms named.
func TestUnpairTakesAnAddress(t *testing.T) {
	const name = "e4-17-d8-c5-67-00"
	for _, arg := range []string{"E4:17:D8:C5:67:00", "e4:17:d8:c5:67:00", "E4-17-D8-C5-67-00"} {
		p := object("Peripheral", name, map[string]any{})
		p.SetFinalizers([]string{btv1.PeripheralFinalizer})
		code, out := runUnpair(t, fakeClient(p), arg)
		if code != 0 || !strings.Contains(out, "peripheral "+name+": unpaired") {
			t.Errorf("unpair %s: exit %d, %q; want Peripheral %s unpaired", arg, code, out, name)
		}
	}
	code, out := runUnpair(t, fakeClient(), "E4:17:D8:C5:67")
	if code != 1 || !strings.Contains(out, "XX:XX:XX:XX:XX:XX") {
		t.Errorf("unpair of a short address: exit %d, %q; want a refusal naming the address form", code, out)
	}
}

// A request that ended Failed or Expired is reported with the reason and
// the message of the condition that says why, not the message alone.
func TestPairReportsWhyItFailed(t *testing.T) {
	cond := func(typ, reason, msg string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: metav1.ConditionFalse, Reason: reason, Message: msg}
	}
	for _, c := range []struct {
		phase btv1.Phase
		conds []metav1.Condition
		want  string
	}{
		{btv1.PhaseFailed, []metav1.Condition{cond(btv1.ConditionAccepted, btv1.ReasonAccepted, "held"),
			cond(btv1.ConditionPaired, btv1.ReasonPairingFailed, "pairing with E4:17:D8:C5:67:6D failed: BlueZ answered org.bluez.Error.AuthenticationFailed")},
			"Failed: PairingFailed: pairing with E4:17:D8:C5:67:6D failed: BlueZ answered org.bluez.Error.AuthenticationFailed"},
		{btv1.PhaseExpired, []metav1.Condition{cond(btv1.ConditionPaired, btv1.ReasonExpired, "the window closed")},
			"Expired: the window closed"},
		{btv1.PhaseExpired, []metav1.Condition{cond(btv1.ConditionPaired, btv1.ReasonExpired, "")}, "Expired"},
		{btv1.PhaseFailed, []metav1.Condition{cond(btv1.ConditionAccepted, btv1.ReasonInvalidSpec, "spec.device is wrong")},
			"Failed: InvalidSpec: spec.device is wrong"},
		{btv1.PhaseFailed, []metav1.Condition{cond(btv1.ConditionPaired, btv1.ReasonPairingFailed, "")}, "Failed: PairingFailed"},
		{btv1.PhaseFailed, nil, "Failed"},
	} {
		var out bytes.Buffer
		s := &session{e: &env{streams: genericiooptions.IOStreams{Out: &out, ErrOut: &out}}}
		r := &btv1.PairingRequest{Status: btv1.PairingRequestStatus{Phase: c.phase, Conditions: c.conds}}
		done, err := s.show(r)
		if !done || err == nil || err.Error() != c.want {
			t.Errorf("%s request: done %v, %v; want the error %q", c.phase, done, err, c.want)
		}
	}
}

// An Adapter the operators marked NotServed is not waited for as a
// starting one: pair says no operator has its radio.
func TestPairNamesAnUnservedAdapter(t *testing.T) {
	d := fakeClient(object("Adapter", testAdapter, map[string]any{"status": map[string]any{
		"conditions": []any{map[string]any{"type": btv1.ConditionPresent, "status": "False", "reason": btv1.ReasonNotServed, "message": "",
			"lastTransitionTime": metav1.Now().UTC().Format(time.RFC3339)}},
	}}))
	var progress syncWriter
	_, err := chooseAdapter(t.Context(), d, &progress, "", "", 10*time.Second)
	if err == nil || !strings.Contains(err.Error(), testAdapter+" (no operator has its radio)") || progress.String() != "" {
		t.Errorf("chooseAdapter with only a NotServed Adapter: %v, progress %q; want it named at once as served by no operator", err, progress.String())
	}
	if got := condStatus([]metav1.Condition{{Type: btv1.ConditionPresent, Status: metav1.ConditionFalse, Reason: btv1.ReasonNotServed}}, btv1.ConditionPresent); got != "False (NotServed)" {
		t.Errorf("list's PRESENT column: %q, want False (NotServed)", got)
	}
}

// A window the radio does not hold is said once, with its reason, and
// an open one after it is announced as before.
func TestPairSaysTheWindowIsShut(t *testing.T) {
	var out bytes.Buffer
	s := &session{e: &env{streams: genericiooptions.IOStreams{Out: &out, ErrOut: &out}}, adapter: testAdapter, device: "E4:17:D8:C5:67:6D"}
	window := func(status metav1.ConditionStatus, reason, msg string) *btv1.PairingRequest {
		return &btv1.PairingRequest{Status: btv1.PairingRequestStatus{Phase: btv1.PhaseOpen, Conditions: []metav1.Condition{
			{Type: btv1.ConditionAccepted, Status: metav1.ConditionTrue, Reason: btv1.ReasonAccepted},
			{Type: btv1.ConditionWindowOpen, Status: status, Reason: reason, Message: msg},
		}}}
	}
	off := window(metav1.ConditionFalse, btv1.ReasonPoweredOff, "the radio is powered off")
	for range 2 {
		if done, err := s.show(off); done || err != nil {
			t.Fatalf("show on a powered-off radio: done %v, %v; want it to wait", done, err)
		}
	}
	want := "the adapter " + testAdapter + " is not discoverable: PoweredOff: the radio is powered off\n"
	if out.String() != want {
		t.Errorf("show twice on a powered-off radio printed %q; want once %q", out.String(), want)
	}
	out.Reset()
	if _, err := s.show(window(metav1.ConditionTrue, btv1.ReasonOpen, "discoverable")); err != nil || !strings.Contains(out.String(), "is discoverable now") {
		t.Errorf("show once the radio is on: %v, printed %q; want the window announced", err, out.String())
	}
}
