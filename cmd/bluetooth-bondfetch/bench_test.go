// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/liken-sh/operators/internal/bdaddr"
	"github.com/liken-sh/operators/internal/bonds"
	"github.com/liken-sh/operators/test/fixtures"
)

// benchBonds is how many bonds BenchmarkBondfetchRestore50 restores.
const benchBonds = 50

// benchCalls counts the calls of BenchmarkBondfetchRestore50.
var benchCalls int

// bondfetchLimit is the init container's memory limit in
// deploy/bluetooth/operator.yaml (64Mi).
const bondfetchLimit = 64 << 20

// BenchmarkBondfetchRestore50 builds the command as the kubelet tier's
// image does (the hcisim tag answers the adapter's address, which this
// machine's kernel cannot, and nothing else differs) and runs it as the
// init container runs (the admin's kubeconfig in place of the pod's
// ServiceAccount, which changes what it may read, not what it does)
// against a real API server holding 50 bonds of the claimed adapter, each
// in its own Secret as the operator writes them, into an empty
// directory. It runs the binary under test/e2e/cmd/rusage and reports the
// largest peak RSS over the runs in MiB and the median CPU time in ms.
// Target: 16 MiB. It fails when a run does not exit 0, does not restore
// every bond, or peaks above the container's 64 MiB limit.
func BenchmarkBondfetchRestore50(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	bin, launcher := filepath.Join(dir, "bluetooth-bondfetch"), filepath.Join(dir, "rusage")
	for out, pkg := range map[string][]string{bin: {"-tags", "hcisim", "."}, launcher: {"../../test/e2e/cmd/rusage"}} {
		build := exec.Command("go", append([]string{"build", "-trimpath", "-o", out}, pkg...)...)
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if o, err := build.CombinedOutput(); err != nil {
			b.Fatalf("build %s: %v\n%s", out, err, o)
		}
	}
	// The framework calls a benchmark more than once (b.N of 1 first):
	// each call has a namespace of its own.
	benchCalls++
	ns := fmt.Sprintf("bench-%d", benchCalls)
	namespaceWithReader(b, ctx, ns)
	info, cache := fixtures.BlueZ(b, "8bitdo-nes30-pro.info"), fixtures.BlueZ(b, "8bitdo-nes30-pro.cache")
	for i := range benchBonds {
		dev := bdaddr.MustParse(fmt.Sprintf("E4:17:D8:C5:%02X:%02X", i/256, i%256))
		create(b, ctx, bonds.EncodeSecret(ns, bonds.Bond{Adapter: claimed, Device: dev, Info: info, Cache: cache}))
	}
	n := newNode(b)
	kubeconfig := apiServer(b).Kubeconfig()
	var peak int64
	var cpu []time.Duration
	b.ResetTimer()
	for i := range b.N {
		root := filepath.Join(dir, fmt.Sprintf("bluetooth-%d", i))
		if err := os.Mkdir(root, 0o700); err != nil {
			b.Fatal(err)
		}
		report := filepath.Join(dir, "rusage.out")
		cmd := exec.Command(launcher, append([]string{"-o", report, bin, "-kubeconfig", kubeconfig}, n.args(root)...)...)
		cmd.Env = []string{"POD_NAMESPACE=" + ns, "BONDFETCH_HCISIM=hci3=" + claimed.String()}
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("bondfetch: %v\n%s", err, out)
		}
		var cpuNs, kb int64
		data, err := os.ReadFile(report)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := fmt.Sscan(string(data), &cpuNs, &kb); err != nil {
			b.Fatalf("rusage report %q: %v", data, err)
		}
		peak, cpu = max(peak, kb<<10), append(cpu, time.Duration(cpuNs))
		restored, err := filepath.Glob(filepath.Join(root, claimed.String(), "*", "info"))
		if err != nil || len(restored) != benchBonds {
			b.Fatalf("restored %d bonds of %d (%v)", len(restored), benchBonds, err)
		}
	}
	b.StopTimer()
	slices.Sort(cpu)
	if peak > bondfetchLimit {
		b.Fatalf("peak RSS %d bytes, above the container's limit of %d", peak, bondfetchLimit)
	}
	b.ReportMetric(float64(peak)/(1<<20), "rss-peak-MiB")
	b.ReportMetric(float64(cpu[len(cpu)/2].Microseconds())/1000, "cpu-ms")
	b.ReportMetric(0, "ns/op") // the iteration time is the run's, not a figure
}
