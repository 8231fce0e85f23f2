// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	oci "github.com/opencontainers/runtime-spec/specs-go"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"tags.cncf.io/container-device-interface/pkg/cdi"

	"github.com/liken-sh/operators/internal/audio"
	"github.com/liken-sh/operators/internal/audio/gate"
	"github.com/liken-sh/operators/test/e2e/harness"
	"github.com/liken-sh/operators/test/e2e/kubelet"
	"github.com/liken-sh/operators/test/e2e/testdriver"
)

// The XPS outputs the tests of several outputs use: the Samsung's DP
// output and the laptop's analog output.
const (
	xpsDP   = node + "-pci-0000-00-1f-3-hdmi-3"
	xpsJack = node + "-pci-0000-00-1f-3-jack-out"
)

// outputRequest is a request named name for the output device.
func outputRequest(name, device string) resourceapi.DeviceRequest {
	return resourceapi.DeviceRequest{Name: name, Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "audio-sink",
		Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
			Expression: fmt.Sprintf(`device.attributes["audio.liken.sh"].sink == %q`, device)}}}}}
}

// createPodWithClaims creates the claims and a pod whose one container
// holds every one of them (the pod's claim names are the claims'
// names), and returns the claims once the scheduler allocated them.
func createPodWithClaims(t *testing.T, ctx context.Context, c *harness.Cluster, pod string, claims ...*resourceapi.ResourceClaim) []*resourceapi.ResourceClaim {
	t.Helper()
	client := c.Client()
	p := testdriver.PodWithClaim("default", pod, node, claims[0].Name)
	p.Spec.ResourceClaims, p.Spec.Containers[0].Resources.Claims = nil, nil
	for _, claim := range claims {
		_, err := client.ResourceV1().ResourceClaims(claim.Namespace).Create(ctx, claim, metav1.CreateOptions{})
		must(t, err)
		name := claim.Name
		p.Spec.ResourceClaims = append(p.Spec.ResourceClaims, corev1.PodResourceClaim{Name: name, ResourceClaimName: &name})
		p.Spec.Containers[0].Resources.Claims = append(p.Spec.Containers[0].Resources.Claims, corev1.ResourceClaim{Name: name})
	}
	_, err := client.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{})
	must(t, err)
	_, err = c.WaitForPodScheduled(ctx, "default", pod)
	must(t, err)
	var out []*resourceapi.ResourceClaim
	for _, claim := range claims {
		allocated, err := c.WaitForClaimAllocated(ctx, claim.Namespace, claim.Name)
		must(t, err)
		out = append(out, allocated)
	}
	return out
}

// injected is the container a runtime makes from the CDI devices of a
// prepared claim: the CDI library's own injection into an empty OCI
// spec, as containerd and CRI-O do it.
func injected(t *testing.T, dir string, devices []string) *oci.Spec {
	t.Helper()
	cache, err := cdi.NewCache(cdi.WithSpecDirs(dir), cdi.WithAutoRefresh(false))
	must(t, err)
	spec := &oci.Spec{Process: &oci.Process{}, Linux: &oci.Linux{}}
	if _, err := cache.InjectDevices(spec, devices...); err != nil {
		t.Fatalf("inject %v: %v", devices, err)
	}
	return spec
}

// envOf is the value of key in env, and how many times key is set.
func envOf(env []string, key string) (string, int) {
	value, n := "", 0
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, key+"="); ok {
			value, n = v, n+1
		}
	}
	return value, n
}

// Two audio claims in one container fail to prepare, each naming the
// other, and leave no CDI spec: the runtime would keep one claim's
// PIPEWIRE_REMOTE and PIPEWIRE_NODE of two. The operator reads the pod
// with its own RBAC. One claim with a request per output prepares, and
// the container the CDI library makes of its two devices has one
// PIPEWIRE_REMOTE, one PIPEWIRE_NODE, the claim's socket mounted at a
// path of the claim's own, and a variable per request naming that
// request's output.
func TestAudioTwoClaimsOneContainer(t *testing.T) {
	a := startAudioNode(t, audioNodeOptions{AsOperator: true})
	ctx, cluster, client, draOpts := a.ctx, a.cluster, a.client, a.dra
	nodeOf := map[string]string{}
	for _, o := range a.outputs {
		nodeOf[o.Output] = o.Name
	}
	waitForDriverSlice(t, ctx, cluster, audio.DriverName, func(s *resourceapi.ResourceSlice) bool {
		n := 0
		for _, d := range s.Spec.Devices {
			if (d.Name == xpsDP || d.Name == xpsJack) && !deviceTainted(s, d.Name) {
				n++
			}
		}
		return n == 2
	})
	kl := kubelet.New(client, draOpts.RegistrarDir)
	t.Cleanup(func() { kl.Close() })
	plugin, err := kl.Discover(ctx, audio.DriverName)
	must(t, err)
	claimOf := func(name string, reqs ...resourceapi.DeviceRequest) *resourceapi.ResourceClaim {
		return &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
			Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: reqs}}}
	}

	two := createPodWithClaims(t, ctx, cluster, "two-claims",
		claimOf("tv", outputRequest("tv", xpsDP)), claimOf("surround", outputRequest("surround", xpsJack)))
	for i, c := range two {
		other := two[1-i].Name
		resp, err := plugin.Prepare(ctx, c)
		must(t, err)
		msg := resp.Claims[string(c.UID)].Error
		if !strings.Contains(msg, "container player of pod default/two-claims holds two audio claims") || !strings.Contains(msg, other) || !strings.Contains(msg, "one request each") {
			t.Errorf("prepare %s beside %s: error %q, want one naming both claims and what to do", c.Name, other, msg)
		} else {
			t.Logf("prepare %s: %s", c.Name, msg)
		}
		if _, err := os.Stat(filepath.Join(draOpts.CDIDir, audio.DriverName+"-"+string(c.UID)+".json")); !os.IsNotExist(err) {
			t.Errorf("claim %s has a CDI spec after its prepare failed (%v)", c.Name, err)
		}
	}

	one := createPodWithClaims(t, ctx, cluster, "one-claim",
		claimOf("home-theatre", outputRequest("tv", xpsDP), outputRequest("surround", xpsJack)))[0]
	resp, err := plugin.Prepare(ctx, one)
	must(t, err)
	res := resp.Claims[string(one.UID)]
	if res.Error != "" || len(res.Devices) != 2 {
		t.Fatalf("prepare %s: error %q, %d devices", one.Name, res.Error, len(res.Devices))
	}
	var ids []string
	for _, d := range res.Devices {
		ids = append(ids, d.CdiDeviceIds...)
	}
	spec := injected(t, draOpts.CDIDir, ids)
	uid := string(one.UID)
	for key, want := range map[string]string{
		"PIPEWIRE_REMOTE":                filepath.Join(audio.ContainerDir(uid), gate.SocketName),
		audio.EnvNodePrefix + "TV":       nodeOf[xpsDP],
		audio.EnvNodePrefix + "SURROUND": nodeOf[xpsJack],
	} {
		if got, n := envOf(spec.Process.Env, key); got != want || n != 1 {
			t.Errorf("%s = %q, set %d times; want %q once", key, got, n, want)
		}
	}
	if _, n := envOf(spec.Process.Env, "PIPEWIRE_NODE"); n != 1 {
		t.Errorf("PIPEWIRE_NODE set %d times in %v", n, spec.Process.Env)
	}
	if len(spec.Mounts) != 1 || spec.Mounts[0].Destination != audio.ContainerDir(uid) || spec.Mounts[0].Source != gate.SocketDir(a.pw.RuntimeDir, uid) {
		t.Errorf("mounts %+v, want the claim's socket directory at %s alone", spec.Mounts, audio.ContainerDir(uid))
	}
	t.Logf("the container of claim %s: env %v", one.Name, slices.DeleteFunc(slices.Clone(spec.Process.Env), func(e string) bool { return !strings.Contains(e, "PIPEWIRE") && !strings.HasPrefix(e, "LIKEN") }))
}
