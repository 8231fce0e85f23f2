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
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"

	"github.com/liken-sh/operators/internal/bluetooth"
	"github.com/liken-sh/operators/internal/bluez"
	"github.com/liken-sh/operators/internal/dra"
	"github.com/liken-sh/operators/internal/procmem"
	"github.com/liken-sh/operators/test/bluezsim"
	"github.com/liken-sh/operators/test/child"
	"github.com/liken-sh/operators/test/e2e/harness"
	"github.com/liken-sh/operators/test/fakesys"
)

// benchToggles is how many link changes one iteration of
// BenchmarkBluetoothEventToSlice times: disconnects and connects in turn,
// so an iteration ends where it began, with the gamepad connected.
const benchToggles = 6

// manifestMemoryLimit is the operator container's memory limit in
// deploy/bluetooth/operator.yaml (64Mi); above it the kubelet kills the container.
const manifestMemoryLimit = 64 << 20

// bluetoothWorld is a node as the operator sees it: the real control plane
// with the node and the bond namespace, the BlueZ simulator with a paired
// and connected gamepad and speaker, and the gamepad's HID nodes in a
// recorded-shape sysfs.
type bluetoothWorld struct {
	cluster *harness.Cluster
	sim     *bluezsim.Sim
	dir     string // scratch: sysfs, kubelet and CDI directories
	sysRoot string
}

func startBluetoothWorld(b *testing.B, ctx context.Context) *bluetoothWorld {
	b.Helper()
	cluster, err := harness.Start(ctx, harness.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(cluster.Stop)
	if _, err := cluster.AddNode(ctx, node); err != nil {
		b.Fatal(err)
	}
	return startBluetoothWorldOn(b, ctx, cluster)
}

// startBluetoothWorldOn is startBluetoothWorld on a cluster the caller
// started and whose Node named node it made.
func startBluetoothWorldOn(b *testing.B, ctx context.Context, cluster *harness.Cluster) *bluetoothWorld {
	b.Helper()
	// As deployed: the operator serves its pairing API too.
	must(b, cluster.ApplyCRDs(ctx, "deploy/bluetooth/crds"))
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "liken-system"}}
	if _, err := cluster.Client().CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	sim, sysRoot := simulatedBluetoothNode(b, dir)
	return &bluetoothWorld{cluster: cluster, sim: sim, dir: dir, sysRoot: sysRoot}
}

// simulatedBluetoothNode is the node the Bluetooth test and benchmarks
// run the operator on: the BlueZ simulator with hci0, the recorded
// gamepad and a speaker paired and connected (its storage under
// dir/bluetooth), and the gamepad's HID device in a sysfs under dir/sys,
// whose path it returns.
func simulatedBluetoothNode(tb testing.TB, dir string) (*bluezsim.Sim, string) {
	tb.Helper()
	sim := bluezsim.New(tb, bluezsim.Options{StorageDir: filepath.Join(dir, "bluetooth")})
	must(tb, ignore(sim.AddAdapter("hci0", adapterAddr)))
	must(tb, ignore(sim.AddDevice("hci0", padAddr, bluezsim.Device{Name: "8Bitdo NES30 Pro", Class: 0x002508, Modalias: "usb:v2DC8p3820d0100", UUIDs: []string{hidUUID}})))
	must(tb, ignore(sim.AddDevice("hci0", speakerAddr, bluezsim.Device{Name: "Kitchen", Class: 0x240414, UUIDs: []string{a2dpSink}})))
	for _, d := range []string{padAddr, speakerAddr} {
		must(tb, sim.Pair("hci0", d))
		must(tb, sim.Connect("hci0", d))
	}
	sysRoot := filepath.Join(dir, "sys")
	must(tb, ignore(fakesys.BluetoothHID(sysRoot, "0005:2DC8:3820.0001", "8Bitdo NES30 Pro", padAddr, adapterAddr, 7)))
	return sim, sysRoot
}

// startOperator starts the bluetooth-operator binary bin as
// deploy/bluetooth/operator.yaml's container runs it, on this world's
// node, simulator and control plane.
func (w *bluetoothWorld) startOperator(b *testing.B, bin string) *operatorProcess {
	dirs := w.draDirs()
	return startOperator(b, bin, []string{
		"-kubeconfig", w.cluster.Kubeconfig(), "-sys-root", w.sysRoot, "-dev-root", "/dev",
		"-kubelet-registry-dir", dirs.RegistrarDir, "-kubelet-plugins-dir", filepath.Dir(dirs.PluginDir), "-cdi-dir", dirs.CDIDir,
	}, []string{
		"NODE_NAME=" + node, "POD_NAMESPACE=liken-system",
		"DBUS_SYSTEM_BUS_ADDRESS=" + w.sim.Address(), "BLUETOOTH_BONDS_ROOT=" + w.sim.StorageDir(),
	})
}

// draDirs are the kubelet and CDI directories of the simulated node.
// The benchmarks measure the product's settle window, so the tests' short
// one is put back to the default.
func (w *bluetoothWorld) draDirs() dra.Options {
	o := bluetoothDRA(w.dir)
	o.SettleQuiet = 0 // dra.DefaultSettleQuiet
	return o
}

// published reports whether the slice holds the gamepad, the speaker and
// the media bus.
func (w *bluetoothWorld) published(b *testing.B) func(*resourceapi.ResourceSlice) bool {
	pad, speaker := bluetooth.ControllerName(mustAddr(b, padAddr)), bluetooth.ControllerName(mustAddr(b, speakerAddr))
	media := bluetooth.MediaBusName(mustAddr(b, adapterAddr))
	return func(s *resourceapi.ResourceSlice) bool {
		return hasDevice(s, pad) && hasDevice(s, speaker) && hasDevice(s, media)
	}
}

// disconnectedTaint reports whether device is in s and, if so, whether it
// carries the disconnected taint.
func disconnectedTaint(s *resourceapi.ResourceSlice, device string) (present, tainted bool) {
	for _, d := range s.Spec.Devices {
		if d.Name == device {
			return true, slices.ContainsFunc(d.Taints, func(t resourceapi.DeviceTaint) bool { return t.Key == bluetooth.TaintDisconnected })
		}
	}
	return false, false
}

// BenchmarkBluetoothEventToSlice measures, with the default settle window
// (dra.DefaultSettleQuiet, 1.5 s), the time from a link change in the
// BlueZ simulator (the Disconnect or Connect call on the bus, alternating)
// to the watch on the real API server delivering the ResourceSlice whose
// gamepad has gained or lost the disconnected taint. The operator runs
// in-process (bluetooth.Run) on the real kubeletplugin helper. The target
// is the settle window plus under 200 ms; it reports p50 and max in
// milliseconds over benchToggles changes per iteration. It fails when a
// change lands sooner than the window (then the figure would not measure
// the debounce) or later than dra.DefaultSettleCap (the window's promise).
func BenchmarkBluetoothEventToSlice(b *testing.B) {
	// The operator's per-pass logging is kept out of the figure; a failure
	// is reported by the assertions below.
	ctx := klog.NewContext(context.Background(), logr.Discard())
	w := startBluetoothWorld(b, ctx)
	client := w.cluster.Client()

	opCtx, stopOp := context.WithCancel(ctx)
	opDone := make(chan error, 1)
	go func() {
		opDone <- bluetooth.Run(opCtx, bluetooth.Config{
			NodeName: node, Namespace: "liken-system", KubeClient: client,
			Bus: bluez.Options{Address: w.sim.Address()}, BondsRoot: w.sim.StorageDir(),
			SysRoot: w.sysRoot, DevRoot: "/dev", DRA: w.draDirs(),
		})
	}()
	b.Cleanup(func() {
		stopOp()
		if err := <-opDone; err != nil {
			b.Errorf("operator: %v", err)
		}
	})

	pad := bluetooth.ControllerName(mustAddr(b, padAddr))
	published := w.published(b)
	waitForDriverSlice(b, ctx, w.cluster, bluetooth.DriverName, func(s *resourceapi.ResourceSlice) bool {
		present, tainted := disconnectedTaint(s, pad)
		return published(s) && present && !tainted
	})
	selector := metav1.ListOptions{FieldSelector: "spec.driver=" + bluetooth.DriverName}
	list, err := client.ResourceV1().ResourceSlices().List(ctx, selector)
	must(b, err)
	selector.ResourceVersion = list.ResourceVersion
	watcher, err := client.ResourceV1().ResourceSlices().Watch(ctx, selector)
	must(b, err)
	defer watcher.Stop()

	var samples []time.Duration
	b.ResetTimer()
	for range b.N {
		for i := range benchToggles {
			disconnect := i%2 == 0
			start := time.Now()
			if disconnect {
				must(b, w.sim.Disconnect("hci0", padAddr, bluezsim.ReasonRemote))
			} else {
				must(b, w.sim.Connect("hci0", padAddr))
			}
			if err := awaitSlice(watcher, 30*time.Second, func(s *resourceapi.ResourceSlice) bool {
				present, tainted := disconnectedTaint(s, pad)
				return present && tainted == disconnect
			}); err != nil {
				b.Fatalf("change %d (disconnect %v): %v", i, disconnect, err)
			}
			samples = append(samples, time.Since(start))
		}
	}
	b.StopTimer()
	slices.Sort(samples)
	if samples[0] < dra.DefaultSettleQuiet {
		b.Fatalf("a change reached the slice after %v, inside the %v settle window", samples[0], dra.DefaultSettleQuiet)
	}
	if worst := samples[len(samples)-1]; worst > dra.DefaultSettleCap {
		b.Fatalf("a change reached the slice after %v, beyond the %v settle cap", worst, dra.DefaultSettleCap)
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(samples[len(samples)/2]), "p50-ms")
	b.ReportMetric(ms(samples[len(samples)-1]), "max-ms")
	b.ReportMetric(0, "ns/op") // the iteration time is the toggles' sum, not a figure
}

// awaitSlice reads watch events until a ResourceSlice satisfies ok, for at
// most timeout.
func awaitSlice(w watch.Interface, timeout time.Duration, ok func(*resourceapi.ResourceSlice) bool) error {
	deadline := time.After(timeout)
	for {
		select {
		case ev, open := <-w.ResultChan():
			if !open {
				return errors.New("the ResourceSlice watch closed")
			}
			if s, isSlice := ev.Object.(*resourceapi.ResourceSlice); isSlice && ev.Type != watch.Deleted && ok(s) {
				return nil
			}
		case <-deadline:
			return fmt.Errorf("no ResourceSlice in the expected state within %v", timeout)
		}
	}
}

// BenchmarkBluetoothOperatorIdleRSS builds cmd/bluetooth-operator and runs
// the binary as deploy/bluetooth/operator.yaml's container would (NODE_NAME, POD_NAMESPACE,
// DBUS_SYSTEM_BUS_ADDRESS; host paths moved by flags) against the BlueZ
// simulator with eight paired devices and the real control plane with the
// pairing CRDs. Once it has published the gamepad, the speaker and the
// media bus, written every bond back to its Secret and run past its
// start-up window (procmem.DefaultStartupWindow, after which it gives
// start-up's memory back), it reads /proc/<pid>/status every 500 ms for
// 5 s and reports the largest VmRSS, RssAnon and RssFile in MiB, and
// VmHWM (the peak since start). The target is 20 MiB of VmRSS; it fails
// above deploy/bluetooth/operator.yaml's 64 MiB limit, and when the operator does not exit 0 on
// SIGTERM.
//
// RssFile is pages of the binary (client-go makes it 70-odd MB) that the
// kernel mapped in, readahead and large folios included; RssAnon is what
// the process alone owns (heap, stacks). Start-up touches some 40 MiB of
// the binary once, and VmHWM keeps that peak; at rest the operator keeps
// a few MiB of it mapped.
func BenchmarkBluetoothOperatorIdleRSS(b *testing.B) {
	bin := child.BuildCommand(b, "github.com/liken-sh/operators/cmd/bluetooth-operator")
	ctx := context.Background()
	w := startBluetoothWorld(b, ctx)
	// Eight paired devices in all: six more speakers beside the gamepad
	// and the speaker, paired and not connected.
	bonded := []string{padAddr, speakerAddr}
	for i := range 6 {
		addr := fmt.Sprintf("A0:AB:51:33:B8:%02X", i)
		must(b, ignore(w.sim.AddDevice("hci0", addr, bluezsim.Device{Name: fmt.Sprintf("Room %d", i), Class: 0x240414, UUIDs: []string{a2dpSink}})))
		must(b, w.sim.Pair("hci0", addr))
		bonded = append(bonded, addr)
	}
	client := w.cluster.Client()
	published := w.published(b)

	var most memory
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		// A fresh start each time: the slices and Secrets of a previous
		// run would make "published" true before this run did anything.
		must(b, client.ResourceV1().ResourceSlices().DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{FieldSelector: "spec.driver=" + bluetooth.DriverName}))
		must(b, client.CoreV1().Secrets("liken-system").DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}))
		b.StartTimer()

		op := w.startOperator(b, bin)
		waitForDriverSlice(b, ctx, w.cluster, bluetooth.DriverName, published)
		for _, d := range bonded {
			waitForBondSecret(b, ctx, w.cluster, w.sim.StorageDir(), d)
		}
		// Settled: the bond write-back above ran after its own window,
		// which follows the slice's; nothing is pending now.
		op.pastStartup()
		for range 10 {
			m, err := memoryOf(op.Pid())
			if err != nil {
				b.Fatalf("operator: %v (exited: %v)\n%s", err, op.Exited(), op.Log())
			}
			most = most.max(m)
			time.Sleep(500 * time.Millisecond)
		}
		if err := op.stop(); err != nil {
			b.Fatalf("operator on SIGTERM: %v\n%s", err, op.Log())
		}
	}
	b.StopTimer()
	if most.RSS > manifestMemoryLimit {
		b.Fatalf("idle RSS %d bytes, above deploy/bluetooth/operator.yaml's limit of %d", most.RSS, manifestMemoryLimit)
	}
	if most.Anon <= 0 || most.Anon > most.RSS || most.RSS > most.HWM {
		b.Fatalf("inconsistent figures %+v: want 0 < RssAnon <= VmRSS <= VmHWM", most)
	}
	mib := func(n int64) float64 { return float64(n) / (1 << 20) }
	b.ReportMetric(mib(most.RSS), "rss-max-MiB")
	b.ReportMetric(mib(most.Anon), "anon-max-MiB")
	b.ReportMetric(mib(most.File), "file-max-MiB")
	b.ReportMetric(mib(most.HWM), "hwm-MiB")
	b.ReportMetric(0, "ns/op") // the iteration time is the waits' sum, not a figure
}

// operatorProcess is a running operator binary; its log holds klog's
// stderr.
type operatorProcess struct{ *child.Process }

// startOperator starts the binary with exactly env; it dies with the
// benchmark (see child.Start), and is stopped at cleanup if it still runs.
func startOperator(b *testing.B, bin string, args, env []string) *operatorProcess {
	b.Helper()
	p, err := child.Start(filepath.Join(b.TempDir(), filepath.Base(bin)+".log"), env, bin, args...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(p.Stop)
	return &operatorProcess{p}
}

// pastStartup waits until the operator has run for its start-up window
// and a little more, so that it has given back start-up's memory
// (procmem.AfterStartup) before its figures are read.
func (p *operatorProcess) pastStartup() {
	time.Sleep(time.Until(p.Started().Add(procmem.DefaultStartupWindow + time.Second)))
}

// stop sends SIGTERM and returns the exit error (nil for status 0).
func (p *operatorProcess) stop() error {
	if err := p.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	select {
	case <-p.Done():
		return p.Err()
	case <-time.After(30 * time.Second):
		return errors.New("still running 30 s after SIGTERM")
	}
}

// memory is a process's resident set from /proc/<pid>/status (proc(5)),
// in bytes.
type memory struct {
	RSS  int64 // VmRSS: resident now, RssAnon + RssFile + RssShmem
	Anon int64 // RssAnon: heap, stacks, the runtime's own; the process's alone
	File int64 // RssFile: pages of mapped files (the binary's text and rodata), reclaimable
	HWM  int64 // VmHWM: the largest VmRSS since start
}

// max is the largest of each figure of m and o.
func (m memory) max(o memory) memory {
	return memory{RSS: max(m.RSS, o.RSS), Anon: max(m.Anon, o.Anon), File: max(m.File, o.File), HWM: max(m.HWM, o.HWM)}
}

// memoryOf reads the memory of pid. The kernel gives the figures in kB.
func memoryOf(pid int) (memory, error) {
	var m memory
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return m, err
	}
	fields := map[string]*int64{"VmRSS": &m.RSS, "RssAnon": &m.Anon, "RssFile": &m.File, "VmHWM": &m.HWM}
	found := 0
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		key, value, ok := strings.Cut(sc.Text(), ":")
		dst := fields[key]
		if !ok || dst == nil {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
		if err != nil {
			return m, fmt.Errorf("/proc/%d/status: %s %q: %w", pid, key, value, err)
		}
		*dst = kb << 10
		found++
	}
	if found != len(fields) {
		return m, fmt.Errorf("/proc/%d/status lacks one of VmRSS, RssAnon, RssFile, VmHWM", pid)
	}
	return m, nil
}
