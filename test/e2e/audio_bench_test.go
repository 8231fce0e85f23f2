// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"github.com/liken-sh/operators/test/child"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/liken-sh/operators/internal/audio"
	"github.com/liken-sh/operators/internal/pipewire"
	"github.com/liken-sh/operators/test/e2e/harness"
	"github.com/liken-sh/operators/test/fakesys"
	"github.com/liken-sh/operators/test/pwtest"
)

// audioManifestMemoryLimit is the operator container's memory limit in
// deploy/audio/operator.yaml (128Mi). The container's cgroup holds the operator and its
// `pw-dump -m` child, so both count against it.
const audioManifestMemoryLimit = 128 << 20

// BenchmarkAudioOperatorIdleRSS builds the audio image's binaries and runs
// them as deploy/audio/operator.yaml's containers would, with host paths moved by flags:
// its declare mode writes the PipeWire declaration and the WirePlumber
// drop-ins for the recorded Dell XPS 17 (ALSA's null device standing in
// for each card), real PipeWire 1.4 and WirePlumber 0.5 start on exactly
// those files, and the operator mode (NODE_NAME, PIPEWIRE_RUNTIME_DIR,
// XDG_RUNTIME_DIR, METRICS_ADDRESS on a free port, as deploy/audio/operator.yaml serves
// metrics) follows that PipeWire and publishes to the real control plane.
// Once the slice holds every declared output with its sink and the
// operator has run past its start-up window (procmem), it reads
// /proc/<pid>/status every 500 ms for 5 s and reports the largest VmRSS,
// RssAnon, RssFile and VmHWM in MiB, and the largest VmRSS of the
// operator's children (the `pw-dump -m` that streams the graph), which
// shares the container's limit. The target is 40 MiB for the container:
// the operator's VmRSS and its children's together. It fails when they
// pass deploy/audio/operator.yaml's 128 MiB limit, and when the operator does not exit 0 on
// SIGTERM.
//
// As with the Bluetooth operator, start-up maps tens of MiB of the
// binary (VmHWM keeps that peak) and rest keeps a few MiB of it; RssAnon
// is what the process alone owns.
func BenchmarkAudioOperatorIdleRSS(b *testing.B) {
	ctx := context.Background()
	cluster, err := harness.Start(ctx, harness.Options{})
	must(b, err)
	b.Cleanup(cluster.Stop)
	must(b, cluster.AddLikenNode(ctx, node))
	w := startAudioWorldOn(b, ctx, cluster)
	var most memory
	var children, container int64
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		// A fresh start each time: a previous run's slice would make
		// "published" true before this run did anything.
		must(b, cluster.Client().ResourceV1().ResourceSlices().DeleteCollection(ctx, metav1.DeleteOptions{},
			metav1.ListOptions{FieldSelector: "spec.driver=" + audio.DriverName}))
		b.StartTimer()

		op := w.startOperator(b)
		waitForDriverSlice(b, ctx, cluster, audio.DriverName, w.published)
		op.pastStartup()
		m, kids, both := sampleAudioContainer(b, op)
		most, children, container = most.max(m), max(children, kids), max(container, both)
		if err := op.stop(); err != nil {
			b.Fatalf("operator on SIGTERM: %v\n%s", err, op.Log())
		}
	}
	b.StopTimer()
	if container > audioManifestMemoryLimit {
		b.Fatalf("idle RSS %d bytes with the children, above deploy/audio/operator.yaml's limit of %d", container, audioManifestMemoryLimit)
	}
	if most.Anon <= 0 || most.Anon > most.RSS || most.RSS > most.HWM {
		b.Fatalf("inconsistent figures %+v: want 0 < RssAnon <= VmRSS <= VmHWM", most)
	}
	mib := func(n int64) float64 { return float64(n) / (1 << 20) }
	b.ReportMetric(mib(most.RSS), "rss-max-MiB")
	b.ReportMetric(mib(most.Anon), "anon-max-MiB")
	b.ReportMetric(mib(most.File), "file-max-MiB")
	b.ReportMetric(mib(most.HWM), "hwm-MiB")
	b.ReportMetric(mib(children), "children-rss-max-MiB")
	b.ReportMetric(mib(container), "container-rss-max-MiB")
	b.ReportMetric(0, "ns/op") // the iteration time is the waits' sum, not a figure
}

// sampleAudioContainer reads the memory of the operator op and of its
// children (the `pw-dump -m` following the graph, which shares the
// container's limit) every 500 ms for 5 s. It returns the operator's
// largest figures, its children's largest VmRSS sum and the largest
// VmRSS of both together, in bytes; it fails b when the operator is gone
// or has no child.
func sampleAudioContainer(b *testing.B, op *operatorProcess) (most memory, children, container int64) {
	b.Helper()
	for range 10 {
		pid := op.Pid()
		m, err := memoryOf(pid)
		if err != nil {
			b.Fatalf("operator: %v (exited: %v)\n%s", err, op.Exited(), op.Log())
		}
		most = most.max(m)
		kids, n, err := childrenRSS(pid)
		if err != nil {
			b.Fatal(err)
		}
		if n == 0 {
			b.Fatalf("the operator has no pw-dump child following the graph\n%s", op.Log())
		}
		children = max(children, kids)
		container = max(container, m.RSS+kids)
		time.Sleep(500 * time.Millisecond)
	}
	return most, children, container
}

// audioWorld is a node as the audio operator sees it: the audio image's
// binaries, the recorded Dell XPS 17's cards, and real PipeWire and
// WirePlumber started on the declaration the binary's declare mode wrote.
type audioWorld struct {
	cluster   *harness.Cluster
	bin       string   // the entrypoint, audio-operator
	dir       string   // scratch: cards, kubelet and CDI directories
	hostPaths []string // the flags moving the host paths
	pw        *pwtest.Daemons
	// published reports whether a slice holds every declared output with
	// its sink.
	published func(*resourceapi.ResourceSlice) bool
}

// startAudioWorldOn lays out the audio world on a cluster the caller
// started and whose Node named node it made (AddLikenNode), with the audio
// CRDs applied as deployed.
func startAudioWorldOn(b *testing.B, ctx context.Context, cluster *harness.Cluster) *audioWorld {
	b.Helper()
	bin := buildAudioImage(b)
	// As deployed: the operator keeps its Sinks and Sources too.
	must(b, cluster.ApplyCRDs(ctx, "deploy/audio/crds"))
	root, err := harness.ModuleRoot()
	must(b, err)
	dir := b.TempDir()
	cards, err := fakesys.XPS17(root, dir)
	must(b, err)

	// The pod's emptyDirs: pwtest lays out the image's baked files, and
	// the binary's declare mode writes the rest over them.
	pw, err := pwtest.Prepare(pwtest.Options{})
	must(b, err)
	b.Cleanup(func() { pw.Stop() })
	hostPaths := []string{
		"-dev-snd", cards.DevSnd, "-sys-root", cards.Sysfs, "-recorded-cards", cards.Cards.Dir(),
		"-pipewire-dir", pw.PipeWireConfD, "-wireplumber-dir", pw.WirePlumberConfD,
	}
	declare := exec.Command(bin, append(hostPaths, "-alsa-path", "null", "-rate", "48000", "declare")...)
	declare.Env = []string{"NODE_NAME=" + node, "PATH=" + os.Getenv("PATH")}
	if out, err := declare.CombinedOutput(); err != nil {
		b.Fatalf("declare: %v\n%s", err, out)
	}
	outputs, err := pipewire.ReadDeclaration(pw.DeclarationPath())
	must(b, err)
	if len(outputs) < 7 {
		b.Fatalf("declare wrote %d outputs for the XPS 17's cards", len(outputs))
	}
	must(b, pw.StartPipeWire(ctx))
	must(b, pw.StartWirePlumber(ctx))

	w := &audioWorld{cluster: cluster, bin: bin, dir: dir, hostPaths: hostPaths, pw: pw}
	w.published = func(s *resourceapi.ResourceSlice) bool {
		for _, o := range outputs {
			found := false
			for _, d := range s.Spec.Devices {
				if d.Name == o.Output {
					_, found = d.Attributes["nodeName"]
				}
			}
			if !found {
				return false
			}
		}
		return true
	}
	return w
}

// startOperator starts the operator mode as deploy/audio/operator.yaml's
// operator container runs it.
func (w *audioWorld) startOperator(b *testing.B) *operatorProcess {
	dirs := filepath.Join(w.dir, "kubelet")
	return startOperator(b, w.bin, append(slices.Clip(w.hostPaths),
		"-kubeconfig", w.cluster.Kubeconfig(),
		"-kubelet-registry-dir", filepath.Join(dirs, "plugins_registry"), "-kubelet-plugins-dir", filepath.Join(dirs, "plugins"),
		"-cdi-dir", filepath.Join(w.dir, "cdi"),
	), []string{
		"NODE_NAME=" + node, "PIPEWIRE_RUNTIME_DIR=" + w.pw.RuntimeDir, "XDG_RUNTIME_DIR=" + w.pw.RuntimeDir,
		"METRICS_ADDRESS=127.0.0.1:0", "PATH=" + os.Getenv("PATH"),
	})
}

// buildAudioImage builds the audio image's binaries side by side, as
// internal/imageset installs them: the entrypoint audio-operator and the
// audio-driver and audio-capture it executes. It returns the
// entrypoint's path.
func buildAudioImage(b testing.TB) string {
	b.Helper()
	dir := b.TempDir()
	for _, name := range []string{"audio-driver", "audio-capture"} {
		child.BuildCommandInto(b, dir, "github.com/liken-sh/operators/cmd/"+name)
	}
	return child.BuildCommandInto(b, dir, "github.com/liken-sh/operators/cmd/audio-operator")
}

// childrenRSS sums the VmRSS of pid's children, found by the PPid line of
// every /proc/<n>/status (proc(5)); n is how many there are. A process
// that ends during the scan is skipped.
func childrenRSS(pid int) (rss int64, n int, err error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, 0, err
	}
	want := strconv.Itoa(pid)
	for _, e := range entries {
		child, convErr := strconv.Atoi(e.Name())
		if convErr != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "status"))
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "PPid:"); ok && strings.TrimSpace(v) == want {
				m, err := memoryOf(child)
				if err != nil {
					continue
				}
				rss += m.RSS
				n++
			}
		}
	}
	return rss, n, nil
}
