// SPDX-License-Identifier: Apache-2.0

package audio

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2/ktesting"

	"github.com/liken-sh/operators/internal/dra"
	"github.com/liken-sh/operators/internal/pipewire"
)

// A PipeWire that never answers at start: every output is published
// tainted as having no sink, and the operator exits with the reason.
func TestPipeWireSilentAtStart(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	dir := t.TempDir()
	hw := xpsHardware(t)
	res, err := Declare(DeclareConfig{Hardware: hw, Node: "n", PipeWireDir: filepath.Join(dir, "pw"), WirePlumberDir: filepath.Join(dir, "wp")})
	if err != nil {
		t.Fatal(err)
	}
	client := fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", UID: "node-uid"}})
	start := time.Now()
	err = Run(ctx, Config{Node: "n", KubeClient: client, Hardware: hw,
		Remote: pipewire.Remote{RuntimeDir: filepath.Join(dir, "no-pipewire")}, PipeWireDir: filepath.Join(dir, "pw"),
		StartWait: 2 * time.Second,
		DRA: dra.Options{RegistrarDir: filepath.Join(dir, "reg"), PluginDir: filepath.Join(dir, "plugin"), CDIDir: filepath.Join(dir, "cdi"),
			SettleQuiet: 100 * time.Millisecond}})
	if err == nil || !strings.Contains(err.Error(), "PipeWire") {
		t.Fatalf("Run with no PipeWire: %v", err)
	}
	if took := time.Since(start); took > 30*time.Second {
		t.Fatalf("gave up after %s, want about the start wait", took)
	}
	slices_, err := client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
	if err != nil || len(slices_.Items) == 0 {
		t.Fatalf("no slice published: %v", err)
	}
	n := 0
	for _, s := range slices_.Items {
		for _, d := range s.Spec.Devices {
			n++
			if !slices.ContainsFunc(d.Taints, func(t resourceapi.DeviceTaint) bool { return t.Key == TaintNoSink }) {
				t.Errorf("%s published without no-sink", d.Name)
			}
		}
	}
	if n != len(res.Endpoints) {
		t.Fatalf("%d devices published, %d outputs declared", n, len(res.Endpoints))
	}
}
