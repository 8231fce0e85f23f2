// SPDX-License-Identifier: Apache-2.0

package bluetooth

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2/ktesting"

	"github.com/liken-sh/operators/internal/bdaddr"
	"github.com/liken-sh/operators/internal/bluez"
	"github.com/liken-sh/operators/internal/dbusd"
	"github.com/liken-sh/operators/internal/pairing"
	"github.com/liken-sh/operators/test/bluezsim"
	"github.com/liken-sh/operators/test/e2e/harness"
	"github.com/liken-sh/operators/test/poll"
)

// One API server serves the package's tests that need claims; nothing
// here schedules pods, so there is no scheduler or controller manager.
var shared = harness.Shared{Options: harness.Options{WithoutScheduler: true, WithoutControllerManager: true}}

func TestMain(m *testing.M) {
	code := m.Run()
	shared.Stop()
	os.Exit(code)
}

// reconnectRig is the operator's reconnect on a simulated bluetoothd and
// a real API server: the claims informer and the reconnector as Run
// starts them (startReconnect), fed BlueZ's devices on every BlueZ signal
// and every 200 ms as the operator's passes feed them.
type reconnectRig struct {
	sim  *bluezsim.Sim
	kube kubernetes.Interface
	reg  *prometheus.Registry
	node string // the audio driver's pool
	ns   string
}

// The rig's waits, scaled down from the defaults (10 s, 2 min) by 50 and
// 150 so that a test sees several steps; the page of a device switched
// off lasts 100 ms.
const (
	rigFirst   = 200 * time.Millisecond
	rigCeiling = 800 * time.Millisecond
	rigPage    = 100 * time.Millisecond
)

const rigAdapter = "00:1A:7D:DA:71:10"

func newReconnectRig(t *testing.T, node string) *reconnectRig {
	t.Helper()
	c := shared.Get(t)
	r := &reconnectRig{kube: c.Client(), reg: prometheus.NewRegistry(), node: node, ns: "default"}
	r.sim = bluezsim.New(t, bluezsim.Options{Policy: dbusd.PolicyOpen, PageTimeout: rigPage})
	if _, err := r.sim.AddAdapter("hci0", rigAdapter); err != nil {
		t.Fatal(err)
	}
	return r
}

// start runs the reconnect until the test ends.
func (r *reconnectRig) start(t *testing.T) {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	client, err := bluez.Connect(ctx, bluez.Options{Address: r.sim.Address()})
	if err != nil {
		t.Fatal(err)
	}
	op := &operator{cfg: Config{NodeName: r.node, KubeClient: r.kube, ReconnectFirst: rigFirst, ReconnectCeiling: rigCeiling, Registerer: r.reg},
		client: client, recorder: newRecorder(ctx, r.kube)}
	stop, err := op.startReconnect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			if objs, err := client.ManagedObjects(ctx); err == nil {
				op.reconnect.observe(objs.Devices)
			}
			select {
			case <-ctx.Done():
				return
			case <-client.Changes():
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		stop()
		client.Close()
	})
}

// claim creates a claim of one request per result and writes the
// allocation as the scheduler does: results of driver on the rig's pool.
func (r *reconnectRig) claim(t *testing.T, name, driver string, devices ...string) *resourceapi.ResourceClaim {
	t.Helper()
	c := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: r.ns, Name: name}}
	var results []resourceapi.DeviceRequestAllocationResult
	for i, d := range devices {
		req := fmt.Sprintf("r%d", i)
		c.Spec.Devices.Requests = append(c.Spec.Devices.Requests, resourceapi.DeviceRequest{Name: req,
			Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "audio-sink"}})
		results = append(results, resourceapi.DeviceRequestAllocationResult{Request: req, Driver: driver, Pool: r.node, Device: d})
	}
	ctx := t.Context()
	c, err := r.kube.ResourceV1().ResourceClaims(r.ns).Create(ctx, c, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: results}}
	if c, err = r.kube.ResourceV1().ResourceClaims(r.ns).UpdateStatus(ctx, c, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = r.kube.ResourceV1().ResourceClaims(r.ns).Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	return c
}

// calls is the Device1.Connect calls made on address.
func (r *reconnectRig) calls(t *testing.T, address string) []bluezsim.ConnectCall {
	t.Helper()
	calls, err := r.sim.ConnectCalls("hci0", address)
	if err != nil {
		t.Fatal(err)
	}
	return calls
}

// metric is the value of a series of the rig's registry: name, and the
// result label when result is not "".
func (r *reconnectRig) metric(t *testing.T, name, result string) float64 {
	t.Helper()
	mfs, err := r.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if result != "" && (len(m.GetLabel()) != 1 || m.GetLabel()[0].GetValue() != result) {
				continue
			}
			if m.GetCounter() != nil {
				return m.GetCounter().GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	return 0
}

// events are the reasons of the Events on the claim, in no order.
func (r *reconnectRig) events(t *testing.T, claim string) []string {
	t.Helper()
	list, err := r.kube.EventsV1().Events(r.ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range list.Items {
		if e.Regarding.Kind == "ResourceClaim" && e.Regarding.Name == claim {
			out = append(out, e.Reason+": "+e.Note)
		}
	}
	return out
}

// TestReconnectHeldSpeaker: a speaker an audio claim holds is switched
// off. The operator pages it at once and then after waits of at least
// 200, 400 and 800 ms (the scaled 10 s, 20 s, 40 s) and never more than
// the 800 ms ceiling once it is reached, each attempt counted and the
// first an Event on the claim; a gamepad held by a claim of this driver,
// a gamepad named by an audio claim, and an untrusted speaker held by
// an audio claim are never paged. Switched on, the speaker is connected
// by the next attempt. Once the claim is deleted, a speaker switched off
// is not paged again.
func TestReconnectHeldSpeaker(t *testing.T) {
	r := newReconnectRig(t, "reconnect-node")
	const (
		spk       = "A0:AB:51:33:71:01"
		untrusted = "A0:AB:51:33:71:02"
		pad       = "E4:17:D8:C5:71:03"
		pad2      = "E4:17:D8:C5:71:04"
		sentinel  = "A0:AB:51:33:71:05"
	)
	key := func(a string) string { return bdaddr.MustParse(a).Key() }
	for _, a := range []string{spk, untrusted, sentinel} {
		if _, err := r.sim.AddSpeaker("hci0", a, bluezsim.Speaker{Name: "Kitchen " + a[15:]}); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.sim.SetDeviceProperty("hci0", untrusted, "Trusted", false); err != nil {
		t.Fatal(err)
	}
	for _, a := range []string{pad, pad2} {
		if _, err := r.sim.AddDevice("hci0", a, bluezsim.Device{Name: "Wireless Controller", Class: 0x002508,
			UUIDs: []string{hidUUID}, Trusted: true}); err != nil {
			t.Fatal(err)
		}
		if err := r.sim.Pair("hci0", a); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.sim.Connect("hci0", spk); err != nil {
		t.Fatal(err)
	}
	if err := r.sim.SetSwitchedOn("hci0", sentinel, false); err != nil {
		t.Fatal(err)
	}
	r.start(t)
	r.claim(t, "gamepad", DriverName, key(pad))
	r.claim(t, "confused", pairing.AudioDriver, key(pad2), key(untrusted))
	r.claim(t, "kitchen", pairing.AudioDriver, key(spk))

	// Held and connected: nothing to do.
	if err := r.sim.SetSwitchedOn("hci0", spk, false); err != nil {
		t.Fatal(err)
	}
	poll.WaitFor(t, t.Context(), "five pages of the speaker switched off", 60*time.Second, func() (bool, string) {
		calls := r.calls(t, spk)
		return len(calls) >= 5 && !calls[4].Pending, fmt.Sprintf("%d calls", len(calls))
	})
	calls := r.calls(t, spk)[:5]
	var gaps []time.Duration
	for i, c := range calls {
		if c.Error != "org.bluez.Error.Failed: br-connection-page-timeout" {
			t.Errorf("page %d: %q, want the page timeout", i+1, c.Error)
		}
		if i > 0 {
			gaps = append(gaps, c.At-calls[i-1].At)
		}
	}
	t.Logf("gaps between the pages: %v (page %v, waits from %v doubling to %v)", gaps, rigPage, rigFirst, rigCeiling)
	for i, want := range []time.Duration{200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond, 800 * time.Millisecond} {
		// A wait never ends early, and the page comes before it.
		if gaps[i] < rigPage+want {
			t.Errorf("page %d came %v after page %d, before the page timeout and the %v wait", i+2, gaps[i], i+1, want)
		}
	}
	if got := r.metric(t, "bluetooth_speaker_connect_attempts_total", "error"); got < 5 {
		t.Errorf("attempts counted as errors: %v, want at least 5", got)
	}
	if got := r.metric(t, "bluetooth_speakers_reconnecting", ""); got != 1 {
		t.Errorf("bluetooth_speakers_reconnecting = %v, want 1", got)
	}
	poll.WaitFor(t, t.Context(), "a SpeakerNotAnswering Event on the claim", 30*time.Second, func() (bool, string) {
		evs := r.events(t, "kitchen")
		for _, e := range evs {
			if strings.HasPrefix(e, ReasonSpeakerNotAnswering+": ") && strings.Contains(e, spk) && strings.Contains(e, "br-connection-page-timeout") {
				return true, ""
			}
		}
		return false, fmt.Sprint(evs)
	})

	// Switched on: the next attempt connects it.
	if err := r.sim.SetSwitchedOn("hci0", spk, true); err != nil {
		t.Fatal(err)
	}
	poll.WaitFor(t, t.Context(), "the speaker connected", 60*time.Second, func() (bool, string) {
		v, err := r.sim.DeviceProperty("hci0", spk, "Connected")
		return err == nil && v == true, fmt.Sprint(v, err)
	})
	last := r.calls(t, spk)
	if c := last[len(last)-1]; c.Error != "" {
		t.Errorf("the call that connected it: %+v", c)
	}
	poll.WaitFor(t, t.Context(), "the success counted and the episode ended", 30*time.Second, func() (bool, string) {
		ok := r.metric(t, "bluetooth_speaker_connect_attempts_total", "success") == 1 && r.metric(t, "bluetooth_speakers_reconnecting", "") == 0
		return ok, fmt.Sprint(r.reg.Gather())
	})
	poll.WaitFor(t, t.Context(), "a SpeakerConnected Event on the claim", 30*time.Second, func() (bool, string) {
		evs := r.events(t, "kitchen")
		for _, e := range evs {
			if strings.HasPrefix(e, ReasonSpeakerConnected+": ") {
				return true, ""
			}
		}
		return false, fmt.Sprint(evs)
	})

	for _, a := range []string{pad, pad2, untrusted} {
		if calls := r.calls(t, a); len(calls) != 0 {
			t.Errorf("%s was paged: %+v", a, calls)
		}
	}

	// The claim goes; the speaker is switched off again and is left
	// alone.
	if err := r.kube.ResourceV1().ResourceClaims(r.ns).Delete(t.Context(), "kitchen", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The informer delivers a claim's events in the API server's order:
	// once a claim created after the deletion has its speaker paged, the
	// reconnect knows the deletion too.
	r.claim(t, "sentinel", pairing.AudioDriver, key(sentinel))
	poll.WaitFor(t, t.Context(), "the claim created after the deletion seen", 30*time.Second, func() (bool, string) {
		return len(r.calls(t, sentinel)) > 0, "no page of its speaker"
	})
	before := len(r.calls(t, spk))
	if err := r.sim.SetSwitchedOn("hci0", spk, false); err != nil {
		t.Fatal(err)
	}
	// Absence takes a wait: several ceilings, long enough for an
	// episode's first page and three more.
	time.Sleep(rigPage + 4*rigCeiling)
	if after := r.calls(t, spk); len(after) != before {
		t.Errorf("pages after the claim was deleted: %+v", after[before:])
	}
	if got := r.metric(t, "bluetooth_speakers_reconnecting", ""); got != 1 {
		t.Errorf("bluetooth_speakers_reconnecting = %v, want 1: the sentinel's speaker alone", got)
	}
	for _, a := range []string{pad, pad2, untrusted} {
		if calls := r.calls(t, a); len(calls) != 0 {
			t.Errorf("%s was paged: %+v", a, calls)
		}
	}
}
