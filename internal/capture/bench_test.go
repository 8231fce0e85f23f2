// SPDX-License-Identifier: Apache-2.0

package capture

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	testchild "github.com/liken-sh/operators/test/child"

	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/liken-sh/operators/internal/pipewire"
	"github.com/liken-sh/operators/internal/procmem"
	"github.com/liken-sh/operators/internal/supervise"
	"github.com/liken-sh/operators/test/e2e/harness"
	"github.com/liken-sh/operators/test/pwtest"
	"github.com/liken-sh/operators/test/secretvolume"
)

// captureManifestMemoryRequest is the capture container's memory request in
// deploy/audio/operator.yaml (16Mi), the idle target; its limit is 64Mi.
const (
	captureManifestMemoryRequest = 16 << 20
	captureManifestMemoryLimit   = 64 << 20
)

// benchWorld is the capture container's binary as the image runs it
// (`audio-operator capture`, which executes audio-capture), on real
// PipeWire with the declared sink, serving a leaf, and checking tokens
// with the real API server's TokenReview.
type benchWorld struct {
	cluster *harness.Cluster
	pw      *pwtest.Daemons
	dir     string
	cmd     *exec.Cmd
	bound   *supervise.Bound
	addr    string
	client  *http.Client
	token   string
	stderr  *bytes.Buffer
}

var (
	benchOnce sync.Once
	benchW    *benchWorld
	benchErr  error
)

func startBenchWorld(b *testing.B) *benchWorld {
	b.Helper()
	benchOnce.Do(func() { benchW, benchErr = newBenchWorld(b) })
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return benchW
}

func newBenchWorld(b *testing.B) (*benchWorld, error) {
	// Not b.TempDir: the world outlives the first benchmark.
	dir, err := os.MkdirTemp("", "capture-bench")
	if err != nil {
		return nil, err
	}
	for _, cmd := range []string{"audio-operator", "audio-capture"} {
		testchild.BuildCommandInto(b, dir, "../../cmd/"+cmd)
	}
	ctx := context.Background()
	cluster, err := harness.Start(ctx, harness.Options{})
	if err != nil {
		return nil, err
	}
	c := cluster.Client()
	if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "liken-system"}}, metav1.CreateOptions{}); err != nil {
		return nil, err
	}
	if _, err := c.CoreV1().ServiceAccounts("liken-system").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "audio-api"}}, metav1.CreateOptions{}); err != nil {
		return nil, err
	}
	tr, err := c.CoreV1().ServiceAccounts("liken-system").CreateToken(ctx, "audio-api",
		&authv1.TokenRequest{Spec: authv1.TokenRequestSpec{Audiences: []string{Audience}}}, metav1.CreateOptions{})
	if err != nil {
		return nil, err
	}
	pw, err := pwtest.Start(ctx, pwtest.Options{Outputs: []pipewire.Output{sinkOutput()}})
	if err != nil {
		return nil, err
	}
	tlsDir := filepath.Join(dir, "tls")
	if err := os.Mkdir(tlsDir, 0o755); err != nil {
		return nil, err
	}
	ca := secretvolume.NewCA(b, "audio-api CA")
	crt, key := ca.Leaf(b, ServerName)
	secretvolume.WriteSecretVolume(b, tlsDir, map[string][]byte{FileCert: crt, FileKey: key, FileCA: ca.PEM})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	l.Close()
	w := &benchWorld{cluster: cluster, pw: pw, dir: dir, addr: addr, token: tr.Status.Token, stderr: &bytes.Buffer{}}
	w.cmd = exec.Command(filepath.Join(dir, "audio-operator"), "capture")
	w.cmd.Env = []string{"CAPTURE_ADDRESS=" + addr, "CAPTURE_TAPS=4", "CAPTURE_TLS_DIR=" + tlsDir,
		"PIPEWIRE_RUNTIME_DIR=" + pw.RuntimeDir, "XDG_RUNTIME_DIR=" + pw.RuntimeDir,
		"KUBECONFIG=" + cluster.Kubeconfig(), "POD_NAMESPACE=liken-system"}
	w.cmd.Stderr = w.stderr
	started := time.Now()
	if w.bound, err = supervise.StartBound(w.cmd); err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	w.client = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: ServerName}}}
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := w.client.Get("https://" + addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the capture binary never became ready: %v\n%s", err, w.stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	// At rest, as a container is most of its life: past the start-up
	// window, after which the binary gives start-up's memory back.
	time.Sleep(time.Until(started.Add(procmem.DefaultStartupWindow + time.Second)))
	return w, nil
}

// rss reads VmRSS, RssAnon and RssFile of pid in bytes.
func rss(pid int) (vm, anon, file int64, err error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), ":")
		kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		switch k {
		case "VmRSS":
			vm = kb << 10
		case "RssAnon":
			anon = kb << 10
		case "RssFile":
			file = kb << 10
		}
	}
	return vm, anon, file, nil
}

// cpuTime is the CPU time pid and its reaped children have used
// (utime and stime, cutime and cstime of /proc/<pid>/stat).
func cpuTime(pid int) (self, children time.Duration, err error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, err
	}
	s := string(data)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	tick := func(i ...int) time.Duration {
		var n int64
		for _, f := range i {
			v, _ := strconv.ParseInt(fields[f], 10, 64)
			n += v
		}
		return time.Duration(n) * time.Second / 100 // USER_HZ is 100 on Linux
	}
	// Fields 14-17 of proc(5), counted after pid and comm.
	return tick(11, 12), tick(13, 14), nil
}

// runningCPU is the CPU time pid and its running children (found by
// their parent in /proc/<pid>/stat) have used, summed over each one's
// threads from /proc/<pid>/task/<tid>/schedstat, which counts in
// nanoseconds where stat counts in ticks of 10 ms. A child reaped
// between two readings drops out of the sum, so it measures a window in
// which the tap's children all run.
func runningCPU(pid int) (time.Duration, error) {
	total, err := threadsCPU(pid)
	if err != nil {
		return 0, err
	}
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	for _, d := range dirs {
		child, err := strconv.Atoi(d.Name())
		if err != nil || child == pid {
			continue
		}
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", child))
		if err != nil {
			continue // gone since the listing
		}
		s := string(data)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
		if len(fields) < 2 || fields[1] != strconv.Itoa(pid) {
			continue
		}
		if t, err := threadsCPU(child); err == nil {
			total += t
		}
	}
	return total, nil
}

// threadsCPU sums the first field of schedstat (time spent on a CPU, in
// nanoseconds) over pid's threads.
func threadsCPU(pid int) (time.Duration, error) {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return 0, err
	}
	var total time.Duration
	for _, t := range tasks {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", pid, t.Name()))
		if err != nil {
			continue // the thread ended since the listing
		}
		f := strings.Fields(string(data))
		if len(f) == 0 {
			continue
		}
		ns, _ := strconv.ParseInt(f[0], 10, 64)
		total += time.Duration(ns)
	}
	return total, nil
}

// BenchmarkCaptureIdleRSS runs the capture container's command as
// deploy/audio/operator.yaml runs it (`audio-operator capture`, which executes the small
// audio-capture binary in place) with deploy/audio/operator.yaml's environment on real
// PipeWire, serving a leaf, and once /readyz answers samples its VmRSS
// every 500 ms for 5 s, reporting the largest VmRSS, RssAnon and RssFile
// in MiB. The target is the container's 16 MiB request; it fails past
// the 64 MiB limit.
func BenchmarkCaptureIdleRSS(b *testing.B) {
	w := startBenchWorld(b)
	var most, anon, file int64
	for range b.N {
		for range 10 {
			vm, a, f, err := rss(w.cmd.Process.Pid)
			if err != nil {
				b.Fatalf("%v\n%s", err, w.stderr.String())
			}
			most, anon, file = max(most, vm), max(anon, a), max(file, f)
			time.Sleep(500 * time.Millisecond)
		}
	}
	if most > captureManifestMemoryLimit {
		b.Fatalf("idle VmRSS %d bytes, past the container's limit %d", most, captureManifestMemoryLimit)
	}
	mib := func(n int64) float64 { return float64(n) / (1 << 20) }
	b.ReportMetric(mib(most), "rss-max-MiB")
	b.ReportMetric(mib(captureManifestMemoryRequest), "target-MiB")
	b.ReportMetric(mib(anon), "anon-max-MiB")
	b.ReportMetric(mib(file), "file-max-MiB")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkCaptureTap taps the sink for 10 s in WAV and in Opus through
// the capture binary (TokenReview answered from its cache after the
// first request) and reports, for each, the CPU the capture process and
// its children (pw-record, the encoder) use as a fraction of one core
// while the tap runs (-cores, targets 0.01 for WAV and 0.05 for Opus:
// each thread's schedstat between 2 s and 9 s into the tap, the children
// still running), the same over the whole 10 s tap taken at reap
// (-tap-cores: it also charges what a tap costs once, resolving the
// node with pw-dump, starting pw-record and the encoder, which a longer
// tap spreads thinner), that one-off part in milliseconds (-start-ms:
// the whole tap's CPU less the running rate times its length), the
// capture process's own share over the whole tap, and the time from the
// request to the first body byte.
func BenchmarkCaptureTap(b *testing.B) {
	w := startBenchWorld(b)
	pid := w.cmd.Process.Pid
	const steadyFrom, steadyTo = 2 * time.Second, 9 * time.Second
	tap := func(ext string, seconds int) (ttfb, wall, self, kids, steady time.Duration) {
		req, _ := http.NewRequest("GET", "https://"+w.addr+"/v1/audio/sinks/"+sinkName+"/audio."+ext+"?t=0,"+strconv.Itoa(seconds), nil)
		req.Header.Set("Authorization", "Bearer "+w.token)
		self0, kids0, err := cpuTime(pid)
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		resp, err := w.client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 {
			body, _ := io.ReadAll(resp.Body)
			b.Fatalf("%s: %d %s", ext, resp.StatusCode, body)
		}
		one := make([]byte, 1)
		if _, err := io.ReadFull(resp.Body, one); err != nil {
			b.Fatal(err)
		}
		ttfb = time.Since(start)
		window := make(chan time.Duration, 1)
		go func() {
			time.Sleep(time.Until(start.Add(steadyFrom)))
			a, errA := runningCPU(pid)
			time.Sleep(time.Until(start.Add(steadyTo)))
			z, errZ := runningCPU(pid)
			if errA != nil || errZ != nil {
				window <- -1
				return
			}
			window <- z - a
		}()
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			b.Fatalf("%s: %v", ext, err)
		}
		wall = time.Since(start)
		if steady = <-window; steady < 0 {
			b.Fatalf("%s: the capture process's CPU could not be read while it ran", ext)
		}
		time.Sleep(100 * time.Millisecond) // the children reaped
		self1, kids1, _ := cpuTime(pid)
		return ttfb, wall, self1 - self0, kids1 - kids0, steady
	}
	tap("wav", 1) // warms the token cache and the graph
	for range b.N {
		for _, f := range []struct {
			ext    string
			target float64
		}{{"wav", 0.01}, {"opus", 0.05}} {
			ttfb, wall, self, kids, steady := tap(f.ext, 10)
			rate := steady.Seconds() / (steadyTo - steadyFrom).Seconds()
			b.ReportMetric(rate, f.ext+"-cores")
			b.ReportMetric(f.target, f.ext+"-target-cores")
			b.ReportMetric((self+kids).Seconds()/wall.Seconds(), f.ext+"-tap-cores")
			b.ReportMetric(((self+kids).Seconds()-rate*wall.Seconds())*1000, f.ext+"-start-ms")
			b.ReportMetric(self.Seconds()/wall.Seconds(), f.ext+"-server-cores")
			b.ReportMetric(ttfb.Seconds()*1000, f.ext+"-first-byte-ms")
		}
	}
	b.ReportMetric(0, "ns/op")
}

// TestMain stops what the benchmarks started: the capture binary,
// PipeWire and the control plane.
func TestMain(m *testing.M) {
	code := m.Run()
	if w := benchW; w != nil {
		_ = w.cmd.Process.Kill()
		<-w.bound.Done()
		_ = w.pw.Stop()
		w.cluster.Stop()
		_ = os.RemoveAll(w.dir)
	}
	os.Exit(code)
}
