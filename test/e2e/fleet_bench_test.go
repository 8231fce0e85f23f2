// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	audiov1 "github.com/liken-sh/operators/api/audio/v1alpha1"
	"github.com/liken-sh/operators/internal/audio"
	"github.com/liken-sh/operators/internal/audio/objects"
	"github.com/liken-sh/operators/internal/bluetooth"
	"github.com/liken-sh/operators/internal/dra"
	"github.com/liken-sh/operators/test/e2e/harness"
)

// The fleet's size: fleetNodes simulated nodes, each with a Bluetooth
// driver publishing fleetPeripherals devices and an audio driver
// publishing fleetOutputs outputs, each output with its Sink. 100 nodes
// is the fleet operators are held to; eight outputs a node (the XPS 17's
// playback PCMs) keeps the cold start's 800 Sinks within a CI minute on
// two cores.
const (
	fleetNodes       = 100
	fleetPeripherals = 3 // a gamepad, a speaker, the media bus
	fleetOutputs     = 8
	// fleetDeadline bounds the wait for convergence; the target is 30 s.
	fleetDeadline = 5 * time.Minute
)

// fleetParams is the drivers' (empty) claim configuration: nothing in
// the fleet is prepared.
type fleetParams struct{}

func (*fleetParams) Default()        {}
func (*fleetParams) Validate() error { return nil }

// BenchmarkFleetColdStart starts, in this process, fleetNodes simulated
// nodes at once against one real API server (etcd and kube-apiserver of
// the control plane, nothing else), each running both drivers as the
// operators run them on the shared DRA core (internal/dra: the kubelet
// plugin helper, the node's own ResourceSlice controller, the settle
// window) and the audio operator's Sink store (internal/audio/objects,
// which creates each Sink and writes its status, re-reading on a
// conflict). Each node has clients of its own with the operators' user
// agents and rate limits. The hardware is simulated: the devices are the
// published shapes, not read from BlueZ or PipeWire.
//
// It reports the time from the start until every node's two slices hold
// all their devices and every Sink exists with its status
// (converge-s, target 30 s), the API server's 429 answers in that time
// (target 0), the 409 conflicts it answered (resolved by re-reads), the
// Sink writes that failed and were made again a few seconds later, as the
// operator's next pass makes them (write-retries; an API server slowed
// by a loaded host times some out), and the writes that still failed
// (unresolved-errors, target 0). It fails when
// the fleet has not converged within fleetDeadline, or a write failed for
// good.
func BenchmarkFleetColdStart(b *testing.B) {
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logr.Discard()))
	defer cancel()
	cluster, err := harness.Start(ctx, harness.Options{WithoutScheduler: true, WithoutControllerManager: true})
	must(b, err)
	b.Cleanup(cluster.Stop)
	must(b, cluster.ApplyCRDs(ctx, "deploy/audio/crds"))
	nodes := make([]string, fleetNodes)
	for i := range nodes {
		nodes[i] = fmt.Sprintf("fleet-%03d", i)
		_, err := cluster.AddNode(ctx, nodes[i])
		must(b, err)
	}
	// Short socket paths: a unix socket's path has at most 107 bytes.
	base, err := os.MkdirTemp("", "fleet")
	must(b, err)
	b.Cleanup(func() { os.RemoveAll(base) })

	fleetRetries.Store(0)
	var converge time.Duration
	var throttled, conflicts float64
	var failures []error
	b.ResetTimer()
	for range b.N {
		before := requestCodes(b, cluster)
		start := time.Now()
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i, n := range nodes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := runFleetNode(ctx, cluster, filepath.Join(base, strconv.Itoa(i)), n); err != nil {
					mu.Lock()
					failures = append(failures, fmt.Errorf("%s: %w", n, err))
					mu.Unlock()
				}
			}()
		}
		converged := waitFleet(b, ctx, cluster, nodes, fleetDeadline)
		converge = time.Since(start)
		wg.Wait()
		after := requestCodes(b, cluster)
		throttled, conflicts = after["429"]-before["429"], after["409"]-before["409"]
		for k, v := range after {
			if strings.HasPrefix(k, "429 ") && v > before[k] {
				b.Logf("API server answered %s with 429 %v times", strings.TrimPrefix(k, "429 "), v-before[k])
			}
		}
		if !converged {
			b.Fatalf("the fleet had not converged after %v (%d write failures: %v)", fleetDeadline, len(failures), errors.Join(failures...))
		}
	}
	b.StopTimer()
	if len(failures) > 0 {
		b.Fatalf("%d writes failed for good: %v", len(failures), errors.Join(failures...))
	}
	b.ReportMetric(converge.Seconds(), "converge-s")
	b.ReportMetric(throttled, "429s")
	b.ReportMetric(conflicts, "409s-resolved")
	b.ReportMetric(float64(len(failures)), "unresolved-errors")
	b.ReportMetric(float64(fleetRetries.Load()), "write-retries")
	b.ReportMetric(float64(fleetNodes), "nodes")
	b.ReportMetric(0, "ns/op") // the iteration time is the convergence's, reported above
}

// runFleetNode starts node's two drivers with their devices and applies its
// Sinks, as the two operators do at a cold start, and returns once every
// Sink was applied (the drivers run on until ctx ends). The error is the
// first write that failed for good.
func runFleetNode(ctx context.Context, cluster *harness.Cluster, dir, node string) error {
	client := func(agent string) (kubernetes.Interface, dynamic.Interface, error) {
		rc := cluster.RESTConfig()
		rc.UserAgent = agent
		kc, err := kubernetes.NewForConfig(rc)
		if err != nil {
			return nil, nil, err
		}
		// As cmd/audio-driver: the Sink writes of the first pass are not
		// held to client-go's default 5 a second.
		rc.QPS, rc.Burst = 20, 60
		dc, err := dynamic.NewForConfig(rc)
		return kc, dc, err
	}
	start := func(driver string, kc kubernetes.Interface, devices []dra.Device) error {
		d, err := dra.Start(ctx, dra.Options{
			DriverName: driver, NodeName: node, KubeClient: kc, CDIClass: "fleet",
			RegistrarDir: filepath.Join(dir, "registry"), PluginDir: filepath.Join(dir, driver), CDIDir: filepath.Join(dir, "cdi"),
		}, func(context.Context, dra.DeviceRequest[fleetParams]) (dra.ContainerEdits, error) {
			return dra.ContainerEdits{}, errors.New("the fleet prepares nothing")
		})
		if err != nil {
			return err
		}
		return d.SetDevices(devices)
	}
	btClient, _, err := client("bluetooth-operator")
	if err != nil {
		return err
	}
	if err := start(bluetooth.DriverName, btClient, fleetDevices("peripheral", fleetPeripherals)); err != nil {
		return err
	}
	auClient, auDynamic, err := client("audio-operator")
	if err != nil {
		return err
	}
	if err := start(audio.DriverName, auClient, fleetDevices("output", fleetOutputs)); err != nil {
		return err
	}
	store, err := objects.New(objects.Options{Client: auDynamic, Node: node})
	if err != nil {
		return err
	}
	if err := store.Start(ctx, 0); err != nil {
		return err
	}
	for i := range fleetOutputs {
		st := audiov1.SinkStatus{EndpointStatus: audiov1.EndpointStatus{Node: node, NodeName: fmt.Sprintf("liken.audio.card0-pcm%d", i)}}
		// As the operator does: a write that failed is made again by its
		// next pass, which an event or the minute's backstop brings;
		// here a few seconds later, a few times.
		for attempt := 1; ; attempt++ {
			_, err := store.ApplySink(ctx, fleetSink(node, i), st)
			if err == nil {
				break
			}
			if attempt == fleetWriteAttempts || ctx.Err() != nil {
				return err
			}
			fleetRetries.Add(1)
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(fleetRetryPause):
			}
		}
	}
	return nil
}

// fleetWriteAttempts bounds the passes that write one Sink, and
// fleetRetryPause is the pause before the next; fleetRetries counts the
// writes made again (reported as write-retries).
const (
	fleetWriteAttempts = 4
	fleetRetryPause    = 5 * time.Second
)

var fleetRetries atomic.Int64

// fleetDevices are n devices named <prefix>-<i>.
func fleetDevices(prefix string, n int) []dra.Device {
	out := make([]dra.Device, n)
	for i := range out {
		out[i] = dra.Device{Name: fmt.Sprintf("%s-%d", prefix, i), Attributes: dra.Attributes{"index": dra.Int(int64(i))}}
	}
	return out
}

// fleetSink is the name of node's output i's Sink: the node's name first,
// as the audio operator names them.
func fleetSink(node string, i int) string { return fmt.Sprintf("%s-card0-pcm%d", node, i) }

// waitFleet polls until every node has both slices with all their devices
// and every Sink has its status, for at most timeout, and says whether
// that happened.
func waitFleet(b *testing.B, ctx context.Context, cluster *harness.Cluster, nodes []string, timeout time.Duration) bool {
	b.Helper()
	want := map[string]int{bluetooth.DriverName: fleetPeripherals, audio.DriverName: fleetOutputs}
	dyn, err := dynamic.NewForConfig(cluster.RESTConfig())
	must(b, err)
	sinks := dyn.Resource(audiov1.SinksResource)
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		time.Sleep(500 * time.Millisecond)
		slices, err := cluster.Client().ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
		if err != nil {
			continue
		}
		full := map[string]int{} // node/driver -> devices
		for _, s := range slices.Items {
			if s.Spec.NodeName != nil {
				full[*s.Spec.NodeName+"/"+s.Spec.Driver] += len(s.Spec.Devices)
			}
		}
		if !fleetSlicesFull(full, nodes, want) {
			continue
		}
		list, err := sinks.List(ctx, metav1.ListOptions{})
		if err != nil {
			continue
		}
		if fleetSinksDone(list.Items, nodes) {
			return true
		}
	}
	return false
}

func fleetSlicesFull(full map[string]int, nodes []string, want map[string]int) bool {
	for _, n := range nodes {
		for driver, count := range want {
			if full[n+"/"+driver] != count {
				return false
			}
		}
	}
	return true
}

func fleetSinksDone(items []unstructured.Unstructured, nodes []string) bool {
	done := map[string]bool{}
	for _, u := range items {
		if node, _, _ := unstructured.NestedString(u.Object, "status", "node"); node != "" {
			done[u.GetName()] = true
		}
	}
	for _, n := range nodes {
		for i := range fleetOutputs {
			if !done[fleetSink(n, i)] {
				return false
			}
		}
	}
	return true
}

// label is the value of the Prometheus label name in a sample line.
func label(line, name string) string {
	_, rest, ok := strings.Cut(line, name+`="`)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, `"`)
	return v
}

// requestCodes sums the API server's apiserver_request_total by response
// code, from its own /metrics, and the 429s by "429 <verb> <resource>".
func requestCodes(b *testing.B, cluster *harness.Cluster) map[string]float64 {
	b.Helper()
	raw, err := cluster.Client().CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	must(b, err)
	out := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 0, 1<<20), 1<<24)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "apiserver_request_total{") {
			continue
		}
		_, rest, _ := strings.Cut(line, `code="`)
		code, _, _ := strings.Cut(rest, `"`)
		fields := strings.Fields(line)
		v, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		if err == nil {
			out[code] += v
			if code == "429" {
				out["429 "+label(line, "verb")+" "+label(line, "resource")] += v
			}
		}
	}
	return out
}
