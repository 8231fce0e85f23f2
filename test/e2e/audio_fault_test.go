// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/liken-sh/operators/internal/audio"
	"github.com/liken-sh/operators/internal/audio/gate"
	"github.com/liken-sh/operators/internal/pipewire"
	"github.com/liken-sh/operators/test/e2e/kubelet"
	"github.com/liken-sh/operators/test/poll"
)

// A row of the fault table on real PipeWire and WirePlumber and the real
// control plane: PipeWire is killed (SIGKILL) under a prepared claim. The
// output is tainted while there is no PipeWire, the taint comes off when
// PipeWire (and WirePlumber after it) is back, the claim's CDI spec is
// byte for byte what it was, the kubelet's repeated prepare answers the
// same device, and the consumer's socket serves the new PipeWire's node
// with no one acting on the claim. Then the kubelet restarts: a new one
// finds the plugin's registration socket, registers it again, and its
// prepare of the claim answers the same device.
func TestAudioPipeWireKilledUnderAClaim(t *testing.T) {
	a := startAudioNode(t, audioNodeOptions{})
	ctx, cluster, client, outputs, pw, draOpts := a.ctx, a.cluster, a.client, a.outputs, a.pw, a.dra

	dp := node + "-pci-0000-00-1f-3-hdmi-3" // the Samsung's DP output
	var nodeName string
	for _, o := range outputs {
		if o.Output == dp {
			nodeName = o.Name
		}
	}
	waitForDriverSlice(t, ctx, cluster, audio.DriverName, func(s *resourceapi.ResourceSlice) bool {
		return hasDevice(s, dp) && !deviceTainted(s, dp)
	})
	claim := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "desk-monitor"},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
			Name: "speakers", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "audio-sink",
				Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
					Expression: `device.attributes["audio.liken.sh"].sink == "` + dp + `"`}}}},
		}}}},
	}
	allocated := createWithPod(t, ctx, cluster, claim, "player-desk")
	kl := kubelet.New(client, draOpts.RegistrarDir)
	t.Cleanup(func() { kl.Close() })
	plugin, err := kl.Discover(ctx, audio.DriverName)
	must(t, err)
	dev := prepareOK(t, ctx, plugin, allocated)
	specPath := filepath.Join(draOpts.CDIDir, audio.DriverName+"-"+string(allocated.UID)+".json")
	before, err := os.ReadFile(specPath)
	must(t, err)
	socket := gate.SocketPath(pw.RuntimeDir, string(allocated.UID))
	claimSees := func() bool {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		cmd := pw.Command(cctx, "pw-dump", "-N")
		cmd.Env = append(cmd.Env, "PIPEWIRE_REMOTE="+socket)
		out, err := cmd.Output()
		if err != nil {
			return false
		}
		g, err := pipewire.ParseDump(out)
		return err == nil && len(g.Nodes) == 1 && g.Nodes[0].Name == nodeName
	}
	poll.Until(t, "the claim's socket serving its node before the fault", 30*time.Second, claimSees)

	// The fault.
	old := pw.PipeWire()
	killed := time.Now()
	must(t, syscall.Kill(old.Pid(), syscall.SIGKILL))
	<-old.Done()
	slice := waitForDriverSlice(t, ctx, cluster, audio.DriverName, func(s *resourceapi.ResourceSlice) bool {
		return hasDevice(s, dp) && deviceTainted(s, dp)
	})
	t.Logf("tainted %v after the kill", time.Since(killed).Round(time.Millisecond))
	// No sink to schedule onto, but nothing that evicts: the consumer's
	// stream comes back with the next PipeWire.
	for _, d := range slice.Spec.Devices {
		if d.Name != dp {
			continue
		}
		for _, taint := range d.Taints {
			if taint.Effect != resourceapi.DeviceTaintEffectNoSchedule {
				t.Errorf("%s tainted %s (%s) while PipeWire is down: a restart of PipeWire would evict its consumers", dp, taint.Key, taint.Effect)
			}
		}
	}

	// PipeWire's container restarts it; WirePlumber follows.
	pw.StopWirePlumber()
	must(t, pw.StartPipeWire(ctx))
	must(t, pw.StartWirePlumber(ctx))
	back := time.Now()
	waitForDriverSlice(t, ctx, cluster, audio.DriverName, func(s *resourceapi.ResourceSlice) bool {
		return hasDevice(s, dp) && !deviceTainted(s, dp)
	})
	t.Logf("untainted %v after PipeWire was back", time.Since(back).Round(time.Millisecond))

	after, err := os.ReadFile(specPath)
	must(t, err)
	if !bytes.Equal(before, after) {
		t.Errorf("the claim's CDI spec changed across the crash:\n%s\n---\n%s", before, after)
	}
	again := prepareOK(t, ctx, plugin, allocated)
	if !slices.Equal(again.CdiDeviceIds, dev.CdiDeviceIds) || again.DeviceName != dev.DeviceName {
		t.Errorf("the repeated prepare answers %+v, was %+v", again, dev)
	}
	poll.Until(t, "the claim's socket serving the new PipeWire's node", 30*time.Second, claimSees)

	// The kubelet restarts.
	must(t, kl.Close())
	kl2 := kubelet.New(client, draOpts.RegistrarDir)
	t.Cleanup(func() { kl2.Close() })
	plugin2, err := kl2.Discover(ctx, audio.DriverName)
	must(t, err)
	if after := prepareOK(t, ctx, plugin2, allocated); !slices.Equal(after.CdiDeviceIds, dev.CdiDeviceIds) {
		t.Errorf("after the kubelet's restart the claim is prepared as %v, was %v", after.CdiDeviceIds, dev.CdiDeviceIds)
	}
	if spec, err := os.ReadFile(specPath); err != nil || !bytes.Equal(spec, before) {
		t.Errorf("the claim's CDI spec after the kubelet's restart: %v\n%s", err, spec)
	}
}
