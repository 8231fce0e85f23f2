// SPDX-License-Identifier: Apache-2.0

//go:build kubelettier

package kubelettier

import (
	"bytes"
	"context"
	"encoding/binary"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/liken-sh/operators/test/e2e/harness"
	"github.com/liken-sh/operators/test/pwtest"
)

// consumerTone is the tone the consumer image plays (cmd/consumer): a
// 440 Hz sine at 8000/32768 of full scale, 48 kHz.
const (
	consumerTone = 440
	toneRate     = 48000
)

var sinksResource = schema.GroupVersionResource{Group: "audio.liken.sh", Version: "v1alpha1", Resource: "sinks"}

// sinkOfNode returns the name of the Sink whose PipeWire node is node.
func sinkOfNode(t testing.TB, ctx context.Context, node string) string {
	t.Helper()
	dyn, err := dynamic.NewForConfig(cluster.RESTConfig())
	must(t, err)
	var name string
	poll(t, "the Sink of "+node, 30*time.Second, func() (bool, string) {
		list, err := dyn.Resource(sinksResource).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, s := range list.Items {
			n, _, _ := unstructured.NestedString(s.Object, "status", "nodeName")
			if n == node {
				name = s.GetName()
				return true, ""
			}
			seen = append(seen, s.GetName()+"="+n)
		}
		return false, strings.Join(seen, ", ")
	})
	return name
}

// capturePlugin runs `kubectl liken audio capture args...` as a person
// does: the control plane's kubectl, which finds the plugin binary
// hack/build-images.sh built (kubectl-liken-audio) on PATH, with the
// user's kubeconfig in KUBECONFIG. It returns stdout, stderr and the
// error of the run.
func capturePlugin(t testing.TB, ctx context.Context, kubeconfig string, args ...string) ([]byte, string, error) {
	t.Helper()
	bin, err := harness.Kubectl(ctx, nil)
	must(t, err)
	plugins := filepath.Join(imageDir, "bin")
	if _, err := os.Stat(filepath.Join(plugins, "kubectl-liken-audio")); err != nil {
		t.Fatalf("the plugin binary: %v (hack/build-images.sh builds it)", err)
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"liken", "audio", "capture"}, args...)...)
	cmd.Env = append(os.Environ(), "PATH="+plugins+":"+os.Getenv("PATH"), "KUBECONFIG="+kubeconfig)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	return stdout.Bytes(), strings.TrimSpace(stderr.String()), err
}

// captureTap taps the speaker consumer's sink as a person does, with
// kubectl liken audio capture: the plugin reads the CA audio-api
// published, port-forwards through the API server and the kubelet's
// streaming server to the audio-api pod, and audio-api relays the tap
// to the capture container of the audio pod on the Sink's node. Alice,
// bound as deploy/audio/api.yaml tells a cluster owner to bind a
// listener, hears the consumer's tone in a WAV of the sink's rate; Bob,
// who may port-forward but not listen, is refused with audio-api's
// reason and gets no audio.
func captureTap(t *testing.T, ctx context.Context) {
	sink := sinkOfNode(t, ctx, speakerNode)
	alice, err := cluster.UserKubeconfig("alice")
	must(t, err)
	bob, err := cluster.UserKubeconfig("bob")
	must(t, err)
	kubectl(t, ctx, "create", "clusterrolebinding", "alice-listens", "--clusterrole=audio-capture-viewer", "--user=alice")
	for _, user := range []string{"alice", "bob"} {
		kubectl(t, ctx, "-n", ns, "create", "rolebinding", user+"-client", "--role=audio-capture-client", "--user="+user)
	}

	began := time.Now()
	wav, stderr, err := capturePlugin(t, ctx, alice, sink, "-t", "0,1.5")
	if err != nil {
		t.Fatalf("alice: kubectl liken audio capture %s: %v\n%s", sink, err, stderr)
	}
	t.Logf("FIGURE kubectl liken audio capture of 1.5 s through a port-forward: %s, %d bytes", time.Since(began).Round(time.Millisecond), len(wav))
	if stderr != "" {
		t.Logf("the plugin said: %s", stderr)
	}
	if len(wav) < 44 || string(wav[:4]) != "RIFF" || string(wav[8:12]) != "WAVE" || string(wav[36:40]) != "data" {
		t.Fatalf("alice's capture is no WAV: %q", wav[:min(len(wav), 44)])
	}
	channels, rate := int(binary.LittleEndian.Uint16(wav[22:])), int(binary.LittleEndian.Uint32(wav[24:]))
	if rate != toneRate || channels < 1 {
		t.Errorf("the WAV has %d channels at %d Hz, want the sink's 48000 Hz", channels, rate)
	}
	pcm := wav[44:]
	if want := rate * channels * 2 * 3 / 2; len(pcm) != want {
		t.Errorf("the WAV holds %d bytes of audio, want 1.5 s (%d)", len(pcm), want)
	}
	x := pwtest.Samples(pcm, max(channels, 1), 0)
	x = x[len(x)/4:] // past the tap's start
	var sum float64
	for _, v := range x {
		sum += v * v
	}
	rms := math.Sqrt(sum / float64(max(len(x), 1)))
	// The tone's RMS is 8000/32768/√2, about -15 dBFS.
	if dbfs := 20 * math.Log10(rms); dbfs < -30 {
		t.Errorf("the capture is silent: %.1f dBFS", dbfs)
	} else if f := pwtest.PeakFrequency(x, float64(rate), 100, 4000); math.Abs(float64(f-consumerTone)) > 2 {
		t.Errorf("the capture's spectrum peaks at %d Hz, want the consumer's %d Hz", f, consumerTone)
	} else {
		t.Logf("alice heard %s: %d Hz at %.1f dBFS", sink, f, dbfs)
	}

	out, stderr, err := capturePlugin(t, ctx, bob, sink, "-t", "0,1")
	if err == nil || len(out) != 0 {
		t.Fatalf("bob, not granted audio-capture-viewer: exit %v, %d bytes of audio, %s", err, len(out), stderr)
	}
	if !strings.Contains(stderr, "403") {
		t.Errorf("bob's refusal does not carry audio-api's 403: %s", stderr)
	}
	t.Logf("bob is refused: %s", stderr)
}
