// SPDX-License-Identifier: Apache-2.0

package bluetoothcli

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	k8stesting "k8s.io/client-go/testing"

	btv1 "github.com/liken-sh/operators/api/bluetooth/v1alpha1"
	"github.com/liken-sh/operators/test/poll"
)

// An interrupt while the operator unpairs (a claim holds the device)
// ends the wait at once, and says that the unpair goes on, where it
// stood, and that the device stays disconnected.
func TestUnpairWaitIsInterrupted(t *testing.T) {
	const name = "e4-17-d8-c5-67-6d"
	d := fakeClient(object("Peripheral", name, map[string]any{
		"metadata": map[string]any{"finalizers": []any{btv1.PeripheralFinalizer}},
		"status": map[string]any{"conditions": []any{map[string]any{
			"type": btv1.ConditionReady, "status": "False", "reason": btv1.ReasonUnpairing, "lastTransitionTime": "2026-01-01T00:00:00Z",
			"message": "unpairing: waiting for ResourceClaim games/pad, which holds the device, to be released"}}},
	}))
	// The finalizer holds the Peripheral, as the API server does.
	d.PrependReactor("delete", "peripherals", func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, nil })
	var out syncWriter
	e := &env{streams: genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &out}, dyn: d}
	ctx, interrupt := context.WithCancel(context.Background())
	defer interrupt()
	cmd := newUnpair(e)
	cmd.SetArgs([]string{name})
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	poll.Until(t, "unpair waiting for the claim", 30*time.Second, func() bool {
		return strings.Contains(out.String(), "waiting for ResourceClaim games/pad")
	})
	interrupt()
	var err error
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("unpair still waits 30 s after the interrupt")
	}
	for _, want := range []string{"stopped waiting for the unpair of peripheral " + name, "goes on without this command",
		"waiting for ResourceClaim games/pad", "the device stays disconnected"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v; want it to say %q", err, want)
		}
	}
	if !strings.Contains(out.String(), "Ctrl-C stops waiting") {
		t.Errorf("output %q; want it to say Ctrl-C stops waiting", out.String())
	}
}

// A timeout that is not positive, or a wrong number of arguments, is
// refused before the Peripheral is deleted: an unpair cannot be taken
// back.
func TestUnpairRefusesBadArgumentsBeforeDeleting(t *testing.T) {
	const name = "e4-17-d8-c5-67-6d"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--timeout", "0", name}, "--timeout 0s: want a positive duration"},
		{[]string{"--timeout", "-1m", name}, "--timeout -1m0s: want a positive duration"},
		{nil, "unpair takes one argument, the Peripheral's name or the device's address"},
		{[]string{name, "extra"}, "not 2"},
	} {
		d := fakeClient(object("Peripheral", name, map[string]any{
			"metadata": map[string]any{"finalizers": []any{btv1.PeripheralFinalizer}},
		}))
		var out syncWriter
		e := &env{streams: genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &out}, dyn: d}
		cmd := newUnpair(e)
		cmd.SetArgs(tc.args)
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		err := cmd.Execute()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("unpair %q: error %v; want it to say %q", tc.args, err, tc.want)
		}
		for _, a := range d.Actions() {
			if a.GetVerb() == "delete" {
				t.Errorf("unpair %q deleted the Peripheral before refusing", tc.args)
			}
		}
	}
}
