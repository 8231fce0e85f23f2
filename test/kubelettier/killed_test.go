// SPDX-License-Identifier: Apache-2.0

//go:build kubelettier

package kubelettier

import (
	"context"
	"os"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/liken-sh/operators/internal/audio"
	"github.com/liken-sh/operators/internal/bluetooth"
	"github.com/liken-sh/operators/internal/inventory"
)

// pluginKilled kills each driver's DRA plugin with SIGKILL, every process
// of its container at once as the kernel's OOM killer would, so that
// nothing of it runs a shutdown: its registration socket and its DRA
// socket stay behind in the kubelet's directories. The kubelet starts
// the container again; the test proves that the plugin registers with
// the kubelet again (the kubelet's plugin manager logs a new connection),
// that its ResourceSlices are published again (deleted after the restart,
// they come back), that the claims it prepared before the kill keep their
// CDI specs throughout and their consumers keep running, and, for the
// audio driver, that the restarted plugin prepares a new claim and
// unprepares it. The claims prepared before the kill are unprepared by
// the restarted plugins in UnprepareOnDelete.
func pluginKilled(t *testing.T, ctx context.Context) {
	for _, d := range []struct{ app, container, driver string }{
		{"liken-inventory", "driver", inventory.DriverName},
		{"audio-operator", "operator", audio.DriverName},
		{"bluetooth-operator", "operator", bluetooth.DriverName},
	} {
		p := waitDaemonPod(t, ctx, d.app, time.Minute, "", podReady)
		before := restarts(p)
		consumers := map[string]int32{}
		for name := range running {
			consumers[name] = restarts(getPod(t, ctx, "default", name))["consumer"]
		}
		registered := registrations(t, d.driver)
		gaps := watchSpecs(consumerSpecs(t, ctx, running))
		killed := time.Now()
		for _, hp := range containerProcs(t, p, d.container) {
			if err := syscall.Kill(hp.pid, syscall.SIGKILL); err != nil && err != syscall.ESRCH {
				t.Fatalf("kill %s (%d): %v", hp.comm, hp.pid, err)
			}
		}
		sock := "/var/lib/kubelet/plugins_registry/" + d.driver + "-reg.sock"
		if _, err := os.Stat(sock); err == nil {
			t.Logf("%s: the killed plugin left its registration socket %s behind", d.driver, sock)
		}
		waitRestarted(t, ctx, p, d.container, before[d.container], 3*time.Minute, containerReady)
		poll(t, d.driver+" registered again with the kubelet", 2*time.Minute, func() (bool, string) {
			return registrations(t, d.driver) > registered, "no new connection of the kubelet to the plugin"
		})
		t.Logf("FIGURE %s killed with SIGKILL → registered again in %s", d.driver, time.Since(killed).Round(time.Millisecond))
		republished(t, ctx, d.driver)
		if d.driver == audio.DriverName {
			// A claim the restarted plugin prepares and unprepares.
			r, _, _, took := startConsumer(t, ctx, claimFor("speaker3", "audio-sink", "!("+monitorSink+")"), consumerPod("speaker3", "report", "speaker3", false))
			if r.Env["PIPEWIRE_NODE"] == "" {
				t.Errorf("the claim prepared after the kill gave no PIPEWIRE_NODE: %+v", r.Env)
			}
			t.Logf("FIGURE audio plugin killed: a new consumer ran %s after its pod's creation", took.Round(time.Millisecond))
			claim, err := cluster.Client().ResourceV1().ResourceClaims("default").Get(ctx, "speaker3", metav1.GetOptions{})
			must(t, err)
			spec := d.driver + "-" + string(claim.UID) + ".json"
			deletePod(t, ctx, "default", "speaker3")
			must(t, cluster.Client().ResourceV1().ResourceClaims("default").Delete(ctx, "speaker3", metav1.DeleteOptions{}))
			waitSpecRemoved(t, "speaker3", d.driver, spec)
		}
		if g := gaps(); len(g) > 0 {
			t.Errorf("%s killed: prepared claims' CDI specs went missing: %v", d.driver, g)
		}
		after := restarts(getPod(t, ctx, p.Namespace, p.Name))
		for name, n := range before {
			if name != d.container && after[name] != n {
				t.Errorf("%s: container %s restarted (%d → %d); only %s should have", d.app, name, n, after[name], d.container)
			}
		}
		for name, n := range consumers {
			c := getPod(t, ctx, "default", name)
			if restarts(c)["consumer"] != n || !podReady(c) {
				t.Errorf("consumer %s after %s's plugin was killed: %s", name, d.driver, describe(c))
			}
		}
	}
	waitLinked(t, ctx, speakerNode, time.Minute)
}

// republished deletes the node's ResourceSlices of driver and waits until
// the driver has published them again: only a running publisher does.
func republished(t testing.TB, ctx context.Context, driver string) {
	t.Helper()
	slices := cluster.Client().ResourceV1().ResourceSlices()
	sel := metav1.ListOptions{FieldSelector: "spec.driver=" + driver + ",spec.nodeName=" + theNode.Name()}
	list, err := slices.List(ctx, sel)
	must(t, err)
	if len(list.Items) == 0 {
		t.Fatalf("%s publishes no ResourceSlice on the node", driver)
	}
	gone := map[string]bool{}
	for _, s := range list.Items {
		gone[s.Name] = true
		must(t, slices.Delete(ctx, s.Name, metav1.DeleteOptions{}))
	}
	deleted := time.Now()
	poll(t, driver+"'s ResourceSlices published again", time.Minute, func() (bool, string) {
		list, err := slices.List(ctx, sel)
		if err != nil {
			return false, err.Error()
		}
		for _, s := range list.Items {
			if !gone[s.Name] {
				return true, ""
			}
		}
		return false, "none but the deleted ones"
	})
	t.Logf("FIGURE %s's slices deleted → published again in %s", driver, time.Since(deleted).Round(time.Millisecond))
}
